// A small, safe markdown parser. It never produces HTML: it returns a tree
// whose text leaves are ranges [s, e) of the source (UTF-16 offsets), so the
// renderer can place highlights at exact characters and map a selection back
// to the source. Raw HTML in the source stays text. Links keep only http,
// https and mailto targets; images only data:image URLs of raster types.

export type Inline =
  | { t: 'text'; s: number; e: number }
  | { t: 'code'; s: number; e: number }
  | { t: 'strong' | 'em' | 'del'; c: Inline[] }
  | { t: 'link'; href: string; c: Inline[] }
  | { t: 'image'; src: string | null; href: string | null; alt: Inline[] };

export type Block =
  | { t: 'p'; lines: Inline[][] }
  | { t: 'h'; level: number; c: Inline[] }
  | { t: 'code'; lang: string; s: number; e: number }
  | { t: 'quote'; lines: Inline[][] }
  | { t: 'list'; ordered: boolean; start: number; items: Block[][] }
  | { t: 'hr' };

/** safeHref returns an absolute http, https or mailto URL, or null. */
export function safeHref(raw: string): string | null {
  const u = raw.trim();
  if (!u || /[\u0000-\u001f\u007f-\u009f\s]/.test(u)) return null;
  let url: URL;
  try {
    url = new URL(u);
  } catch {
    return null;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:' && url.protocol !== 'mailto:') return null;
  return url.href;
}

/** safeImageSrc accepts base64 data URLs of raster images only. */
export function safeImageSrc(raw: string): string | null {
  const u = raw.trim();
  return /^data:image\/(png|jpe?g|gif|webp|bmp|avif);base64,[A-Za-z0-9+/=\s]*$/i.test(u) ? u.replace(/\s+/g, '') : null;
}

/** invariantImage reads Invariant's image content, "local_base64_img: "
 * then the base64 of a PNG, JPEG, GIF or WebP file (or a data URL), as a
 * data URL of that image; null for anything else. */
export function invariantImage(content: string): string | null {
  const m = /^local_base64_img:\s*/.exec(content);
  if (!m) return null;
  const rest = content.slice(m[0].length).trim();
  if (rest.startsWith('data:')) return safeImageSrc(rest);
  if (!/^[A-Za-z0-9+/=\s]+$/.test(rest)) return null;
  const b = rest.replace(/\s+/g, '');
  // The type from the file's first bytes, as base64.
  const type = b.startsWith('iVBORw0KGgo') ? 'png' : b.startsWith('/9j/') ? 'jpeg' : b.startsWith('R0lGOD') ? 'gif' : /^UklGR.{6}XRUJQ/.test(b) ? 'webp' : null;
  return type ? `data:image/${type};base64,${b}` : null;
}

const punct = /[!-/:-@[-`{-~]/;

function findClose(src: string, from: number, e: number, open: string, close: string): number {
  let depth = 0;
  for (let j = from; j < e; j++) {
    const c = src[j];
    if (c === '\\') {
      j++;
      continue;
    }
    if (c === open) depth++;
    else if (c === close) {
      if (depth === 0) return j;
      depth--;
    }
  }
  return -1;
}

/** parseInline parses src[s, e) (one line or less). */
export function parseInline(src: string, s: number, e: number, depth = 0): Inline[] {
  const out: Inline[] = [];
  let from = s;
  const flush = (to: number) => {
    if (to > from) out.push({ t: 'text', s: from, e: to });
  };
  let i = s;
  while (i < e) {
    const c = src[i];
    if (c === '\\' && i + 1 < e && punct.test(src[i + 1])) {
      flush(i);
      out.push({ t: 'text', s: i + 1, e: i + 2 });
      i += 2;
      from = i;
      continue;
    }
    if (c === '`') {
      let n = 1;
      while (src[i + n] === '`' && i + n < e) n++;
      const fence = '`'.repeat(n);
      let j = src.indexOf(fence, i + n);
      while (j >= 0 && j < e && src[j + n] === '`') j = src.indexOf(fence, j + n + 1);
      if (j >= 0 && j + n <= e) {
        flush(i);
        out.push({ t: 'code', s: i + n, e: j });
        i = j + n;
        from = i;
      } else i += n;
      continue;
    }
    if ((c === '[' || (c === '!' && src[i + 1] === '[')) && depth < 4) {
      const b = c === '!' ? i + 1 : i;
      const close = findClose(src, b + 1, e, '[', ']');
      if (close >= 0 && src[close + 1] === '(') {
        const pe = findClose(src, close + 2, e, '(', ')');
        if (pe >= 0) {
          let target = src.slice(close + 2, pe).trim();
          const title = target.match(/^(\S+)\s+("[^"]*"|'[^']*')$/);
          if (title) target = title[1];
          if (target.startsWith('<') && target.endsWith('>')) target = target.slice(1, -1);
          flush(i);
          const label = parseInline(src, b + 1, close, depth + 1);
          if (c === '!') {
            out.push({ t: 'image', src: safeImageSrc(target), href: safeHref(target), alt: label });
          } else {
            const href = safeHref(target);
            if (href) out.push({ t: 'link', href, c: label });
            else out.push({ t: 'text', s: i, e: pe + 1 }); // an unsafe link stays text, all of it
          }
          i = pe + 1;
          from = i;
          continue;
        }
      }
    }
    if (c === '<') {
      const m = src.slice(i, e).match(/^<((?:https?:\/\/|mailto:)[^\s<>]+)>/i);
      const href = m && safeHref(m[1]);
      if (m && href) {
        flush(i);
        out.push({ t: 'link', href, c: [{ t: 'text', s: i + 1, e: i + m[0].length - 1 }] });
        i += m[0].length;
        from = i;
        continue;
      }
    }
    if ((c === 'h' || c === 'H') && (i === s || !/[\w/]/.test(src[i - 1]))) {
      const m = src.slice(i, e).match(/^https?:\/\/[^\s<>"'`]+/i);
      if (m) {
        let u = m[0];
        while (/[.,;:!?)\]]$/.test(u) && !(u.endsWith(')') && u.includes('('))) u = u.slice(0, -1);
        const href = safeHref(u);
        if (href) {
          flush(i);
          out.push({ t: 'link', href, c: [{ t: 'text', s: i, e: i + u.length }] });
          i += u.length;
          from = i;
          continue;
        }
      }
    }
    if ((c === '*' || c === '_' || c === '~') && depth < 6) {
      let n = 1;
      while (src[i + n] === c && i + n < e) n++;
      const k = Math.min(n, 2);
      const okOpen = i + k < e && !/\s/.test(src[i + k]) && (c !== '_' || i === s || !/[\p{L}\p{N}]/u.test(src[i - 1]));
      if (okOpen && (c !== '~' || k === 2)) {
        const delim = c.repeat(k);
        let j = src.indexOf(delim, i + k + 1);
        while (j >= 0 && j + k <= e && (/\s/.test(src[j - 1]) || (c === '_' && /[\p{L}\p{N}]/u.test(src[j + k] ?? '')))) j = src.indexOf(delim, j + 1);
        if (j >= 0 && j + k <= e) {
          flush(i);
          out.push({ t: c === '~' ? 'del' : k === 2 ? 'strong' : 'em', c: parseInline(src, i + k, j, depth + 1) });
          i = j + k;
          from = i;
          continue;
        }
      }
      i += n;
      continue;
    }
    i++;
  }
  flush(e);
  return out;
}

interface Line {
  s: number;
  e: number;
  text: string; // src[s, e) without a trailing \r
}

function splitLines(src: string, end: number): Line[] {
  const out: Line[] = [];
  let s = 0;
  while (s <= end) {
    let e = src.indexOf('\n', s);
    if (e < 0 || e > end) e = end;
    let te = e;
    if (te > s && src[te - 1] === '\r') te--;
    out.push({ s, e: te, text: src.slice(s, te) });
    if (e >= end) break;
    s = e + 1;
  }
  return out;
}

const reFence = /^ {0,3}(`{3,}|~{3,})\s*([\w+#.-]*)/;
const reHeading = /^ {0,3}(#{1,6})[ \t]+/;
const reHr = /^ {0,3}([-*_])( *\1){2,} *$/;
const reQuote = /^ {0,3}> ?/;
const reItem = /^(\s*)([-*+]|\d{1,9}[.)])[ \t]+/;

/** Lists nest at most this deep; deeper items are plain paragraphs (hostile
 * content must not recurse without end). */
const maxListDepth = 8;

/** width is the columns of a run of blanks (a tab counts 4). */
function width(ws: string): number {
  let w = 0;
  for (const c of ws) w += c === '\t' ? 4 : 1;
  return w;
}

const indentOf = (l: Line) => width(l.text.match(/^\s*/)![0]);

/** dedent drops up to n columns of leading blanks from a line, keeping its
 * offsets in the source. */
function dedent(l: Line, n: number): Line {
  let k = 0;
  let w = 0;
  while (k < l.text.length && w < n && (l.text[k] === ' ' || l.text[k] === '\t')) {
    w += l.text[k] === '\t' ? 4 : 1;
    k++;
  }
  return { s: l.s + k, e: l.e, text: l.text.slice(k) };
}

/** parseBlocks parses src[0, end) into blocks. */
export function parseBlocks(src: string, end = src.length): Block[] {
  return parseLines(src, splitLines(src, end), 0);
}

function parseLines(src: string, lines: Line[], depth: number): Block[] {
  const out: Block[] = [];
  let i = 0;
  const startsBlock = (l: Line) => reFence.test(l.text) || reHeading.test(l.text) || reHr.test(l.text) || reQuote.test(l.text) || reItem.test(l.text);
  while (i < lines.length) {
    const l = lines[i];
    if (l.text.trim() === '') {
      i++;
      continue;
    }
    let m: RegExpMatchArray | null;
    if ((m = l.text.match(reFence))) {
      const ch = m[1][0];
      const n = m[1].length;
      let j = i + 1;
      const closeRe = new RegExp(`^ {0,3}${ch === '`' ? '`' : '~'}{${n},}\\s*$`);
      while (j < lines.length && !closeRe.test(lines[j].text)) j++;
      const s = i + 1 < lines.length ? lines[i + 1].s : l.e;
      const e = j - 1 > i ? lines[Math.min(j, lines.length) - 1].e : s;
      out.push({ t: 'code', lang: m[2].toLowerCase(), s, e: Math.max(s, e) });
      i = j + 1;
      continue;
    }
    if ((m = l.text.match(reHeading))) {
      let e = l.e;
      const trail = l.text.match(/[ \t]+#+[ \t]*$/);
      if (trail) e -= trail[0].length;
      out.push({ t: 'h', level: m[1].length, c: parseInline(src, l.s + m[0].length, Math.max(e, l.s + m[0].length)) });
      i++;
      continue;
    }
    if (reHr.test(l.text)) {
      out.push({ t: 'hr' });
      i++;
      continue;
    }
    if (reQuote.test(l.text)) {
      const q: Inline[][] = [];
      while (i < lines.length && (m = lines[i].text.match(reQuote))) {
        q.push(parseInline(src, lines[i].s + m[0].length, lines[i].e));
        i++;
      }
      out.push({ t: 'quote', lines: q });
      continue;
    }
    if ((m = l.text.match(reItem)) && depth < maxListDepth) {
      i = parseList(src, lines, i, depth, out);
      continue;
    }
    const p: Inline[][] = [];
    while (i < lines.length && lines[i].text.trim() !== '' && (p.length === 0 || !startsBlock(lines[i]))) {
      p.push(parseInline(src, lines[i].s, lines[i].e));
      i++;
    }
    out.push({ t: 'p', lines: p });
  }
  return out;
}

/** parseList reads the list that starts at lines[i] into out and returns
 * the line after it. Items of one kind (numbered or not) at the list's
 * level belong to it even with blank lines between them (a loose list);
 * lines indented past an item's marker are its content, nested lists
 * included; the first number is the list's start. */
function parseList(src: string, lines: Line[], i: number, depth: number, out: Block[]): number {
  const first = lines[i].text.match(reItem)!;
  const ordered = /\d/.test(first[2]);
  const base = width(first[1]);
  const items: Line[][] = [];
  let content = 0; // the current item's content column
  const sibling = (l: Line) => {
    const mm = l.text.match(reItem);
    return mm && width(mm[1]) < content && /\d/.test(mm[2]) === ordered ? mm : null;
  };
  while (i < lines.length) {
    const x = lines[i];
    const mm = items.length === 0 ? first : sibling(x);
    if (mm) {
      content = width(mm[0]);
      items.push([{ s: x.s + mm[0].length, e: x.e, text: x.text.slice(mm[0].length) }]);
      i++;
      continue;
    }
    if (x.text.trim() === '') {
      // Blank lines stay in the list when what follows them does.
      let k = i;
      while (k < lines.length && lines[k].text.trim() === '') k++;
      if (k === lines.length || !(sibling(lines[k]) || indentOf(lines[k]) > base)) break;
      if (!sibling(lines[k])) items[items.length - 1].push(...lines.slice(i, k));
      i = k;
      continue;
    }
    // An indented line is the item's content; anything else ends the list.
    if (indentOf(x) <= base || (reItem.test(x.text) && !(indentOf(x) >= content))) break;
    items[items.length - 1].push(dedent(x, content));
    i++;
  }
  out.push({ t: 'list', ordered, start: ordered ? parseInt(first[2], 10) : 1, items: items.map((ls) => parseLines(src, ls, depth + 1)) });
  return i;
}

export interface Token {
  s: number;
  e: number;
  cls: string;
}

const keywords = new Set(
  (
    'abstract and as async await break case catch class const continue def default del do elif else enum except export extends false ' +
    'final finally fn for from func function go if impl import in interface is lambda let match mut new nil none not null or package pass ' +
    'pub raise return self static struct super switch this throw true try type typeof undefined use var void while with yield True False None'
  ).split(' '),
);

/** tokenize finds strings, comments, numbers and keywords in code, for
 * syntax colouring. It is language-agnostic on purpose. */
export function tokenizeCode(src: string, s: number, e: number, lang: string): Token[] {
  const out: Token[] = [];
  const hashComments = /^(py|python|sh|bash|shell|ruby|rb|yaml|yml|toml|r|perl|zsh)$/.test(lang);
  const re = /("(?:[^"\\\n]|\\.)*"?|'(?:[^'\\\n]|\\.)*'?|`[^`]*`?)|(\/\/[^\n]*|\/\*[\s\S]*?(?:\*\/|$)|#[^\n]*)|(\b-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?\b)|([A-Za-z_][\w]*)/g;
  re.lastIndex = s;
  const code = src.slice(0, e);
  let m: RegExpExecArray | null;
  while ((m = re.exec(code))) {
    const a = m.index;
    const b = a + m[0].length;
    if (m[1]) {
      const isKey = (lang === 'json' || lang === '') && /^\s*:/.test(code.slice(b, b + 8));
      out.push({ s: a, e: b, cls: isKey ? 'tk-key' : 'tk-str' });
    } else if (m[2]) {
      if (m[2][0] === '#' && !hashComments) {
        re.lastIndex = a + 1;
        continue;
      }
      out.push({ s: a, e: b, cls: 'tk-com' });
    } else if (m[3]) out.push({ s: a, e: b, cls: 'tk-num' });
    else if (m[4] && keywords.has(m[4])) out.push({ s: a, e: b, cls: 'tk-kw' });
  }
  return out;
}

/** foldPoint returns where to cut long content (at a line end), or -1 when
 * it is short enough to show whole. */
export function foldPoint(src: string, maxChars = 2400, maxLines = 40): number {
  if (src.length <= maxChars * 1.25) {
    let n = 0;
    for (let i = src.indexOf('\n'); i >= 0; i = src.indexOf('\n', i + 1)) if (++n > maxLines * 1.25) break;
    if (n <= maxLines * 1.25) return -1;
  }
  let cut = 0;
  let n = 0;
  for (let i = src.indexOf('\n'); i >= 0 && i <= maxChars && n < maxLines; i = src.indexOf('\n', i + 1)) {
    cut = i;
    n++;
  }
  if (cut === 0) cut = Math.min(maxChars, src.length);
  const c = src.charCodeAt(cut - 1);
  if (c >= 0xd800 && c <= 0xdbff) cut--; // never split a surrogate pair
  return cut;
}
