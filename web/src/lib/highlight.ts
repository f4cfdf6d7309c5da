// Highlights: annotations, analyzer violations, search hits and the URL's
// target, resolved from addresses to exact UTF-16 ranges of the text the UI
// renders. Addresses count code points; JavaScript strings count UTF-16
// units, so every range is converted here and nowhere else.
import { cpToUnits, lineRange, tryParseAddress, type Address } from './address';
import type { Trace, TraceEvent } from './types';

export type HlKind = 'annotation' | 'analyzer' | 'search' | 'target';

export interface HighlightInput {
  id: string;
  kind: HlKind;
  address: string;
  message: string;
}

export interface Highlight extends HighlightInput {
  addr: Address;
  event: number; // -1 for a span address
  span: string;
  field: string; // path inside the event or span, joined by "."; "" for the whole event
  start?: number; // UTF-16 range in the field's text; both undefined: the whole field
  end?: number;
}

/** textParts lists the text fields of an event the chat renders, by field key. */
export function eventTextFields(e: TraceEvent): Map<string, string> {
  const out = new Map<string, string>();
  const c = e.content;
  if (typeof c === 'string') out.set('content', c);
  else if (Array.isArray(c)) {
    c.forEach((p, i) => {
      if (p && typeof p.text === 'string') out.set(`content.${i}.text`, p.text);
    });
    out.set('content', partsText(c));
  }
  (e.tool_calls ?? []).forEach((tc, i) => {
    if (typeof tc?.function?.name === 'string') out.set(`tool_calls.${i}.function.name`, tc.function.name);
    collectStrings(tc?.function?.arguments, `tool_calls.${i}.function.arguments`, out);
  });
  return out;
}

export function partsText(parts: unknown[]): string {
  return parts
    .filter((p: any) => p && p.type === 'text' && typeof p.text === 'string')
    .map((p: any) => p.text)
    .join('\n');
}

function collectStrings(v: unknown, path: string, out: Map<string, string>) {
  if (typeof v === 'string') out.set(path, v);
  else if (Array.isArray(v)) v.forEach((x, i) => collectStrings(x, `${path}.${i}`, out));
  else if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) collectStrings(x, `${path}.${k}`, out);
}

/** valueAt walks a path of keys and indices. */
export function valueAt(v: unknown, path: string[]): unknown {
  for (const p of path) {
    if (v == null || typeof v !== 'object') return undefined;
    v = (v as any)[p];
  }
  return v;
}

/** fieldText is the string an address's path names in the trace, if any. */
export function fieldText(t: Trace, a: Address): string | undefined {
  if (a.root === 'messages') {
    const e = t.events[a.event];
    if (!e) return undefined;
    if (a.path.length === 1 && a.path[0] === 'content' && Array.isArray(e.content)) return partsText(e.content);
    const v = valueAt(e, a.path);
    return typeof v === 'string' ? v : undefined;
  }
  const s = (t.spans ?? []).find((x) => x.id === a.span);
  const v = valueAt(s, a.path);
  return typeof v === 'string' ? v : undefined;
}

/** resolve turns addressed items into highlights with UTF-16 ranges. Items
 * whose address does not parse or does not exist in the trace are dropped. */
export function resolveHighlights(t: Trace, items: HighlightInput[]): Highlight[] {
  const out: Highlight[] = [];
  for (const it of items) {
    const addr = tryParseAddress(it.address);
    if (!addr) continue;
    if (addr.root === 'messages' && !t.events[addr.event]) continue;
    if (addr.root === 'spans' && !(t.spans ?? []).some((s) => s.id === addr.span)) continue;
    const h: Highlight = { ...it, addr, event: addr.event, span: addr.span, field: addr.path.join('.') };
    const sel = addr.sel;
    if (sel && (sel.kind === 'range' || sel.kind === 'line')) {
      const text = fieldText(t, addr);
      if (text === undefined) {
        // A selector on something that is not a string: mark the whole field.
      } else if (sel.kind === 'range') {
        h.start = cpToUnits(text, sel.start);
        h.end = cpToUnits(text, sel.end);
      } else {
        const r = lineRange(text, sel.line);
        if (!r) continue;
        [h.start, h.end] = r;
      }
    }
    out.push(h);
  }
  out.sort(compareHighlights);
  return out;
}

export function compareHighlights(a: Highlight, b: Highlight): number {
  if (a.event !== b.event) return a.event - b.event;
  if (a.field !== b.field) return a.field < b.field ? -1 : 1;
  return (a.start ?? -1) - (b.start ?? -1);
}

/** HighlightIndex finds highlights by event and field quickly. */
export class HighlightIndex {
  readonly all: Highlight[];
  private byEvent = new Map<number, Highlight[]>();
  private bySpan = new Map<string, Highlight[]>();
  constructor(hs: Highlight[]) {
    this.all = hs;
    for (const h of hs) {
      const m = h.event >= 0 ? this.byEvent : (this.bySpan as Map<unknown, Highlight[]>);
      const k = h.event >= 0 ? h.event : h.span;
      let l = m.get(k);
      if (!l) m.set(k, (l = []));
      l.push(h);
    }
  }
  event(i: number): Highlight[] {
    return this.byEvent.get(i) ?? [];
  }
  span(id: string): Highlight[] {
    return this.bySpan.get(id) ?? [];
  }
  /** ranges are the highlights with a range on one field of an event. */
  ranges(i: number, field: string): Highlight[] {
    return this.event(i).filter((h) => h.field === field && h.start !== undefined);
  }
  /** whole are the highlights on a whole field (or the whole event for ""). */
  whole(i: number, field: string): Highlight[] {
    return this.event(i).filter((h) => h.field === field && h.start === undefined);
  }
}

export interface Segment {
  start: number;
  end: number;
  marks: Highlight[]; // highlights covering the whole segment
}

/** segments cuts [start, end) of a text at the edges of the highlights
 * overlapping it, so each piece is covered by one fixed set of highlights. */
export function segments(start: number, end: number, hs: Highlight[]): Segment[] {
  const cuts = new Set<number>([start, end]);
  const over = hs.filter((h) => h.start! < end && h.end! > start && h.end! > h.start!);
  for (const h of over) {
    if (h.start! > start) cuts.add(h.start!);
    if (h.end! < end) cuts.add(h.end!);
  }
  const xs = [...cuts].sort((a, b) => a - b);
  const out: Segment[] = [];
  for (let i = 0; i + 1 < xs.length; i++) {
    const s = xs[i];
    const e = xs[i + 1];
    out.push({ start: s, end: e, marks: over.filter((h) => h.start! <= s && h.end! >= e) });
  }
  if (out.length === 0) out.push({ start, end, marks: [] });
  return out;
}
