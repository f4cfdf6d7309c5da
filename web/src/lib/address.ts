// Addresses point into a trace (see ../shared/DESIGN.md, "Addresses"):
//   messages.2, messages[2], messages.2.tool_calls.0.function.arguments.to,
//   messages.0.content:5-10 (code points, end exclusive), messages.2.content:L3
//   (0-based line), messages.4.content.1:bbox-10,20,200,80, spans.<id>.attributes.<key>,
//   and the same relative to the event list (0.tool_calls.0.function.name:0-3).

export type Selector =
  | { kind: 'range'; start: number; end: number }
  | { kind: 'line'; line: number }
  | { kind: 'bbox'; x1: number; y1: number; x2: number; y2: number };

export interface Address {
  root: 'messages' | 'spans';
  event: number; // root messages: the event index; -1 for spans
  span: string; // root spans: the span id; '' for messages
  path: string[]; // steps inside the event or span
  sel?: Selector;
}

export class AddressError extends Error {}

const nameChar = (c: string) => !/[.[\]:"\u0000-\u001f\u007f]/.test(c);

/** parseAddress reads an address; it throws AddressError on a malformed one. */
export function parseAddress(text: string): Address {
  let i = 0;
  const s = text.trim();
  const fail = (msg: string): never => {
    throw new AddressError(`address ${JSON.stringify(text)}: ${msg} at ${i}`);
  };
  const steps: string[] = [];
  const readStep = (): string => {
    if (s[i] === '.') {
      i++;
      const st = i;
      while (i < s.length && nameChar(s[i])) i++;
      if (i === st) fail('empty name');
      return s.slice(st, i);
    }
    if (s[i] === '[') {
      i++;
      if (s[i] === '"') {
        const st = i;
        i++;
        while (i < s.length && s[i] !== '"') i += s[i] === '\\' ? 2 : 1;
        if (i >= s.length) fail('unterminated string');
        i++;
        let v: string;
        try {
          v = JSON.parse(s.slice(st, i));
        } catch {
          return fail('bad string');
        }
        if (s[i] !== ']') fail('want ]');
        i++;
        return v;
      }
      const st = i;
      while (i < s.length && /[0-9]/.test(s[i])) i++;
      if (i === st || s[i] !== ']') fail('want digits and ]');
      const v = s.slice(st, i);
      i++;
      return v;
    }
    return fail('want . or [');
  };
  // The first step: messages, spans, or an event index.
  let root: 'messages' | 'spans' = 'messages';
  if (/^[0-9]/.test(s)) {
    const st = i;
    while (i < s.length && /[0-9]/.test(s[i])) i++;
    steps.push(s.slice(st, i));
  } else if (s.startsWith('messages')) {
    i = 'messages'.length;
    steps.push(readStep());
  } else if (s.startsWith('spans')) {
    root = 'spans';
    i = 'spans'.length;
    steps.push(readStep());
  } else {
    fail('want messages, spans or an event index');
  }
  while (i < s.length && s[i] !== ':') steps.push(readStep());
  let sel: Selector | undefined;
  if (s[i] === ':') {
    const rest = s.slice(i + 1);
    let m: RegExpMatchArray | null;
    if ((m = rest.match(/^(\d+)-(\d+)$/))) {
      const start = Number(m[1]);
      const end = Number(m[2]);
      if (start > end) fail('range start after end');
      sel = { kind: 'range', start, end };
    } else if ((m = rest.match(/^L(\d+)$/))) {
      sel = { kind: 'line', line: Number(m[1]) };
    } else if ((m = rest.match(/^bbox-(\d+(?:\.\d+)?),\s*(\d+(?:\.\d+)?),\s*(\d+(?:\.\d+)?),\s*(\d+(?:\.\d+)?)$/))) {
      sel = { kind: 'bbox', x1: +m[1], y1: +m[2], x2: +m[3], y2: +m[4] };
    } else {
      fail('bad selector');
    }
  }
  if (root === 'messages') {
    if (!/^\d+$/.test(steps[0])) fail('the event must be an index');
    return { root, event: Number(steps[0]), span: '', path: steps.slice(1), sel };
  }
  return { root, event: -1, span: steps[0], path: steps.slice(1), sel };
}

/** tryParseAddress is parseAddress returning null instead of throwing. */
export function tryParseAddress(text: string): Address | null {
  try {
    return parseAddress(text);
  } catch {
    return null;
  }
}

function step(p: string): string {
  return /^[^.[\]:"\u0000-\u001f\u007f]+$/.test(p) ? '.' + p : '[' + JSON.stringify(p) + ']';
}

/** formatAddress prints the canonical dotted form. */
export function formatAddress(a: Address): string {
  let out = a.root === 'messages' ? 'messages.' + a.event : 'spans' + step(a.span);
  for (const p of a.path) out += step(p);
  if (a.sel) {
    switch (a.sel.kind) {
      case 'range':
        out += `:${a.sel.start}-${a.sel.end}`;
        break;
      case 'line':
        out += `:L${a.sel.line}`;
        break;
      case 'bbox':
        out += `:bbox-${a.sel.x1},${a.sel.y1},${a.sel.x2},${a.sel.y2}`;
        break;
    }
  }
  return out;
}

/** cpToUnits converts a code point offset in s to a UTF-16 offset (clamped). */
export function cpToUnits(s: string, cp: number): number {
  let u = 0;
  for (let n = 0; n < cp && u < s.length; n++) {
    const c = s.charCodeAt(u);
    u += c >= 0xd800 && c <= 0xdbff && u + 1 < s.length ? 2 : 1;
  }
  return u;
}

/** unitsToCp converts a UTF-16 offset in s to a code point offset. */
export function unitsToCp(s: string, units: number): number {
  let cp = 0;
  for (let u = 0; u < units && u < s.length; cp++) {
    const c = s.charCodeAt(u);
    u += c >= 0xd800 && c <= 0xdbff && u + 1 < s.length ? 2 : 1;
  }
  return cp;
}

/** lineRange returns the UTF-16 range of 0-based line n of s (without its
 * newline), or null when s has fewer lines. */
export function lineRange(s: string, n: number): [number, number] | null {
  let start = 0;
  for (let i = 0; i < n; i++) {
    const nl = s.indexOf('\n', start);
    if (nl < 0) return null;
    start = nl + 1;
  }
  let end = s.indexOf('\n', start);
  if (end < 0) end = s.length;
  return [start, end];
}

/** lineOf returns the 0-based line of UTF-16 offset u in s. */
export function lineOf(s: string, u: number): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i >= 0 && i < u; i = s.indexOf('\n', i + 1)) n++;
  return n;
}
