import { useState } from 'preact/hooks';
import { tryParseAddress, unitsToCp } from '../../lib/address';
import { fieldText } from '../../lib/highlight';
import type { Trace } from '../../lib/types';
import { sourceOffset } from '../Rich';

/** A place to comment on: an address and the text it covers. */
export interface Target {
  address: string;
  quote: string;
}

/** rangeTarget is the comment target of the UTF-16 range [a, b) (either
 * order) of the text of field f; null for an empty range. Addresses count
 * code points. */
export function rangeTarget(f: string, text: string, a: number, b: number): Target | null {
  const [u0, u1] = a <= b ? [a, b] : [b, a];
  if (u1 <= u0) return null;
  return { address: `${f}:${unitsToCp(text, u0)}-${unitsToCp(text, u1)}`, quote: text.slice(u0, u1) };
}

/** lineTarget is the comment target of 0-based line n of field f. */
export function lineTarget(f: string, text: string, n: number): Target {
  return { address: `${f}:L${n}`, quote: text.split('\n')[n] ?? '' };
}

/** buttonPlace is where the "comment on selection" button goes for a
 * selection's box: below it, or above it when that would leave the window,
 * and never off its sides. */
export function buttonPlace(r: { top: number; bottom: number; left: number; width: number }, width: number, height: number): { x: number; y: number } {
  const y = r.bottom + 40 < height ? r.bottom + 6 : Math.max(4, r.top - 36);
  const x = Math.min(Math.max(r.left + r.width / 2, 110), width - 110);
  return { x, y };
}

export interface Composer {
  /** The open comment's target, or null. */
  target: Target | null;
  draft: string;
  setDraft: (s: string) => void;
  /** The button offered over a text selection, or null. */
  selBtn: (Target & { x: number; y: number }) | null;
  open: (address: string, quote?: string) => void;
  close: () => void;
  save: () => Promise<void>;
  /** For the trace's body: a text selection inside one field offers a
   * comment on that range; a click on a line number (raw view) comments on
   * that line. */
  onMouseUp: () => void;
  onClick: (e: MouseEvent) => void;
}

/** useComposer is the comment being written on a trace; create saves it
 * and resolves to whether it was. */
export function useComposer(trace: Trace | null, create: (address: string, content: string) => Promise<boolean>): Composer {
  const [target, setTarget] = useState<Target | null>(null);
  const [draft, setDraft] = useState('');
  const [selBtn, setSelBtn] = useState<Composer['selBtn']>(null);
  const open = (address: string, quote = '') => {
    setTarget({ address, quote });
    setDraft('');
    setSelBtn(null);
    setTimeout(() => document.querySelector<HTMLTextAreaElement>('.composer textarea')?.focus(), 0);
  };
  const fieldOf = (f: string) => {
    const addr = tryParseAddress(f);
    return addr && trace ? fieldText(trace, addr) : undefined;
  };
  return {
    target,
    draft,
    setDraft,
    selBtn,
    open,
    close: () => setTarget(null),
    save: async () => {
      if (!target) return;
      if (await create(target.address, draft)) {
        setTarget(null);
        setDraft('');
      }
    },
    onMouseUp: () => {
      const s = getSelection();
      if (!s || s.isCollapsed || !s.anchorNode || !s.focusNode || !trace) return setSelBtn(null);
      const a = sourceOffset(s.anchorNode, s.anchorOffset);
      const b = sourceOffset(s.focusNode, s.focusOffset);
      const fa = a?.at.closest<HTMLElement>('[data-f]');
      const fb = b?.at.closest<HTMLElement>('[data-f]');
      if (!a || !b || !fa || fa !== fb) return setSelBtn(null);
      const f = fa.dataset.f!;
      const text = fieldOf(f);
      const t = text === undefined ? null : rangeTarget(f, text, a.o, b.o);
      if (!t) return setSelBtn(null);
      setSelBtn({ ...buttonPlace(s.getRangeAt(0).getBoundingClientRect(), innerWidth, innerHeight), ...t });
    },
    onClick: (e: MouseEvent) => {
      const ln = (e.target as Element).closest?.<HTMLElement>('button.ln');
      if (!ln || !trace) return;
      const f = ln.closest<HTMLElement>('[data-f]')?.dataset.f;
      if (!f) return;
      const t = lineTarget(f, fieldOf(f) ?? '', Number(ln.dataset.line));
      open(t.address, t.quote);
    },
  };
}
