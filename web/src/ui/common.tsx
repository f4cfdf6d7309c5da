import type { ComponentChildren } from 'preact';
import type { Me } from '../lib/types';

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

/** fmtPercent writes 0.4237 as "42.4%". */
export function fmtPercent(x: number): string {
  return `${Math.round(x * 1000) / 10}%`;
}

/** The metadata a benchmark run writes come first, so they are never cut
 * from a short list. */
const firstKeys = ['benchmark', 'benchmark_version', 'accuracy'];

/** scalarEntries are a metadata object's scalar members, the benchmark's
 * first. */
export function scalarEntries(meta: Record<string, unknown> | null | undefined): [string, unknown][] {
  const all = Object.entries(meta ?? {}).filter(([, v]) => v === null || typeof v !== 'object');
  const rank = (k: string) => {
    const i = firstKeys.indexOf(k);
    return i < 0 ? firstKeys.length : i;
  };
  return all.map((e, i) => [e, i] as const).sort((a, b) => rank(a[0][0]) - rank(b[0][0]) || a[1] - b[1]).map(([e]) => e);
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

/** openLogin opens the login form of the page's header. */
export function openLogin() {
  dispatchEvent(new Event('lookout:login'));
}

/** NotFound is a page for what is not there (or not for this reader): what
 * happened, a way back, and for a reader not logged in, a way to log in. */
// DatasetNotFound is the page for a dataset that does not exist or that
// the reader may not read (the two are not told apart).
export function DatasetNotFound(props: { owner: string; name: string; me: Me | null }) {
  return (
    <NotFound title="Dataset not found" me={props.me}>
      <p>
        There is no dataset <code>{props.owner}/{props.name}</code>, or it is private and not yours to read.
      </p>
    </NotFound>
  );
}

export function NotFound(props: { title: string; me: Me | null; back?: { href: string; label: string }; children?: ComponentChildren }) {
  const { me, back } = props;
  return (
    <div class="empty not-found">
      <h2>{props.title}</h2>
      {props.children}
      {me && !me.user && (
        <p class="signin-hint">
          You are not logged in.{' '}
          <button type="button" class="link" onClick={openLogin}>
            Log in
          </button>{' '}
          to see the private datasets you may read.
        </p>
      )}
      <p class="ways">
        <a href="/">Back to datasets</a>
        {back && (
          <>
            {' · '}
            <a href={back.href}>{back.label}</a>
          </>
        )}
      </p>
    </div>
  );
}
