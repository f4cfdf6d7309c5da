import type { ComponentChildren } from 'preact';

export function fmtTime(s?: string): string {
  if (!s) return '—';
  const d = new Date(s);
  if (Number.isNaN(d.getTime())) return s;
  return d.toISOString().replace('T', ' ').slice(0, 16) + ' UTC';
}

/** fmtInt writes 12345 as "12,345". Number.toLocaleString would do, but
 * its first call loads the locale data: tens of milliseconds on the path to
 * a page's first paint. */
export function fmtInt(n: number): string {
  const s = String(Math.trunc(n));
  return s.replace(/\B(?=(\d{3})+(?!\d))/g, ',');
}

export function fmtBytes(n: number): string {
  if (n < 1024) return `${n} B`;
  if (n < 1 << 20) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / (1 << 20)).toFixed(1)} MiB`;
}

/** scalar shows a metadata value in one short line. */
export function scalar(v: unknown): string {
  if (v === null || v === undefined) return '';
  if (typeof v === 'string') return v.length > 80 ? v.slice(0, 79) + '…' : v;
  if (typeof v === 'number') return Number.isInteger(v) ? String(v) : String(Math.round(v * 1000) / 1000);
  const s = JSON.stringify(v);
  return s.length > 80 ? s.slice(0, 79) + '…' : s;
}

export function Modal(props: { title: string; children: ComponentChildren; onClose: () => void }) {
  return (
    <div class="modal-back" onClick={(e) => e.target === e.currentTarget && props.onClose()}>
      <div class="modal" role="dialog" aria-modal="true" aria-label={props.title}>
        <h3>{props.title}</h3>
        {props.children}
      </div>
    </div>
  );
}

export function Confirm(props: { title: string; body: ComponentChildren; action: string; onYes: () => void; onNo: () => void }) {
  return (
    <Modal title={props.title} onClose={props.onNo}>
      <div class="confirm-body">{props.body}</div>
      <div class="actions">
        <button type="button" onClick={props.onNo}>
          Cancel
        </button>
        <button type="button" class="danger" onClick={props.onYes}>
          {props.action}
        </button>
      </div>
    </Modal>
  );
}

/** copyText copies to the clipboard; false when the browser refused. */
export async function copyText(s: string): Promise<boolean> {
  try {
    await navigator.clipboard.writeText(s);
    return true;
  } catch {
    return false;
  }
}
