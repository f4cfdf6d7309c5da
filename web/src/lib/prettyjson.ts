// Pretty-printing of JSON text for reading, keeping every character of the
// source except whitespace between tokens, with a map from source offsets
// to offsets in the printed text: highlights (search hits, annotations,
// violations) address the source and are drawn on the printed text.

export interface Pretty {
  text: string;
  /** toPretty maps a UTF-16 offset in the source to one in text; an
   * offset in whitespace the printer dropped maps to the end of the token
   * before it. */
  toPretty(o: number): number;
  /** toSource maps an offset in text back to the source; an offset in
   * whitespace the printer added maps to the end of the token before it. */
  toSource(p: number): number;
}

const INDENT = '  ';

/** prettyJSON indents a JSON document two spaces a level, or returns null
 * when src is not one (callers check with JSON.parse first) or is already
 * printed that way. Strings are copied as written (escapes kept). */
export function prettyJSON(src: string): Pretty | null {
  const out: string[] = [];
  // chunks: source start, printed start, length of each copied run.
  const cs: number[] = [];
  const ps: number[] = [];
  const ls: number[] = [];
  let len = 0;
  let depth = 0;
  const emit = (s: string) => {
    out.push(s);
    len += s.length;
  };
  const copy = (a: number, b: number) => {
    cs.push(a);
    ps.push(len);
    ls.push(b - a);
    emit(src.slice(a, b));
  };
  const newline = () => emit('\n' + INDENT.repeat(depth));
  const ws = (c: string) => c === ' ' || c === '\n' || c === '\r' || c === '\t';
  const n = src.length;
  let i = 0;
  while (i < n) {
    const c = src[i];
    if (ws(c)) {
      i++;
      continue;
    }
    if (c === '"') {
      let j = i + 1;
      while (j < n && src[j] !== '"') j += src[j] === '\\' ? 2 : 1;
      copy(i, Math.min(j + 1, n));
      i = j + 1;
    } else if (c === '{' || c === '[') {
      copy(i, i + 1);
      let j = i + 1;
      while (j < n && ws(src[j])) j++;
      if (src[j] === (c === '{' ? '}' : ']')) {
        copy(j, j + 1);
        i = j + 1;
      } else {
        depth++;
        newline();
        i++;
      }
    } else if (c === '}' || c === ']') {
      depth = Math.max(0, depth - 1);
      newline();
      copy(i, i + 1);
      i++;
    } else if (c === ',') {
      copy(i, i + 1);
      newline();
      i++;
    } else if (c === ':') {
      copy(i, i + 1);
      emit(' ');
      i++;
    } else {
      let j = i + 1;
      while (j < n && !ws(src[j]) && !',:{}[]"'.includes(src[j])) j++;
      copy(i, j);
      i = j;
    }
  }
  const text = out.join('');
  if (text === src) return null;
  // Both starts grow with the chunk index: find the last chunk at or
  // before an offset in either, and move by the distance into it.
  const map = (from: number[], to: number[], o: number) => {
    let lo = 0;
    let hi = from.length - 1;
    if (hi < 0 || o < from[0]) return 0;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (from[mid] <= o) lo = mid;
      else hi = mid - 1;
    }
    return to[lo] + Math.min(o - from[lo], ls[lo]);
  };
  return { text, toPretty: (o) => map(cs, ps, o), toSource: (p) => map(ps, cs, p) };
}
