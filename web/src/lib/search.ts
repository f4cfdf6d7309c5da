// The search box. The server's search API (internal/search, through
// serversearch.ts) answers queries in the full language (OR, groups, kind:,
// events>n, policy:...). This parser and matcher are the subset a backend
// without the server could answer (free words and "quoted phrases",
// is:/not:annotated, meta:key=value and comparisons, tool:, role:,
// has:violation, "-" before a term); the page no longer uses the matcher.
// SearchBackend is the seam.
import { unitsToCp } from './address';
import { eventTextFields, type HighlightInput } from './highlight';
import type { Snippet } from './api';
import type { Trace, TraceSummary } from './types';

export type Filter =
  | { kind: 'annotated'; not: boolean }
  | { kind: 'meta'; key: string; op: '=' | '!=' | '>' | '<' | '>=' | '<='; value: string; not: boolean }
  | { kind: 'tool'; name: string; not: boolean }
  | { kind: 'role'; name: string; not: boolean }
  | { kind: 'violation'; not: boolean };

export interface Query {
  source: string; // the query as typed
  words: string[]; // lower-cased free words and phrases that must all occur
  without: string[]; // lower-cased words that must not occur
  filters: Filter[];
  errors: string[];
}

/** tokenize splits on blanks, keeping "quoted phrases" (with \" escapes) whole. */
export function tokenize(q: string): string[] {
  const out: string[] = [];
  let i = 0;
  while (i < q.length) {
    while (i < q.length && /\s/.test(q[i])) i++;
    if (i >= q.length) break;
    let tok = '';
    while (i < q.length && !/\s/.test(q[i])) {
      if (q[i] === '"') {
        i++;
        while (i < q.length && q[i] !== '"') {
          if (q[i] === '\\' && i + 1 < q.length) i++;
          tok += q[i++];
        }
        i++; // the closing quote (or the end)
      } else tok += q[i++];
    }
    out.push(tok);
  }
  return out;
}

export function parseQuery(q: string): Query {
  const out: Query = { source: q, words: [], without: [], filters: [], errors: [] };
  for (let tok of tokenize(q)) {
    let not = false;
    if (tok.startsWith('-') && tok.length > 1) {
      not = true;
      tok = tok.slice(1);
    }
    const m = tok.match(/^([a-z]+):(.*)$/s);
    if (!m) {
      if (tok) (not ? out.without : out.words).push(tok.toLowerCase());
      continue;
    }
    const [, key, rest] = m;
    switch (key) {
      case 'is':
      case 'not':
        if (rest === 'annotated') out.filters.push({ kind: 'annotated', not: (key === 'not') !== not });
        else out.errors.push(`${key}:${rest}: want ${key}:annotated`);
        break;
      case 'has':
        if (rest === 'violation' || rest === 'violations') out.filters.push({ kind: 'violation', not });
        else out.errors.push(`has:${rest}: want has:violation`);
        break;
      case 'tool':
      case 'role':
        if (!rest) out.errors.push(`${key}: needs a name`);
        else out.filters.push({ kind: key, name: rest, not });
        break;
      case 'meta': {
        const mm = rest.match(/^([^=<>!]+)(=|!=|>=|<=|>|<)(.*)$/s);
        if (!mm) {
          out.errors.push(`meta:${rest}: want meta:key=value or meta:key>number`);
          break;
        }
        const [, k, op, v] = mm;
        if (op !== '=' && op !== '!=' && !isNumber(v)) {
          out.errors.push(`meta:${rest}: ${op} needs a number`);
          break;
        }
        out.filters.push({ kind: 'meta', key: k, op: op as any, value: v, not });
        break;
      }
      case 'session':
      case 'user':
      case 'score':
      case 'verdict':
        // Filters only the server answers: no words to mark.
        break;
      default:
        // Not a filter we know: search for the text itself (URLs, "a:b").
        (not ? out.without : out.words).push(tok.toLowerCase());
    }
  }
  return out;
}

function isNumber(s: string): boolean {
  return s.trim() !== '' && Number.isFinite(Number(s));
}

export function isEmpty(q: Query): boolean {
  return q.words.length === 0 && q.without.length === 0 && q.filters.length === 0;
}

/** needsContent reports whether the query needs a trace's events, not
 * just its summary. */
export function needsContent(q: Query): boolean {
  return q.words.length > 0 || q.without.length > 0 || q.filters.some((f) => f.kind !== 'annotated' && f.kind !== 'meta');
}

function metaValue(meta: Record<string, unknown> | undefined, key: string): unknown {
  if (!meta) return undefined;
  if (key in meta) return meta[key];
  let v: unknown = meta; // dotted keys walk into objects
  for (const p of key.split('.')) {
    if (v == null || typeof v !== 'object') return undefined;
    v = (v as any)[p];
  }
  return v;
}

function matchMeta(f: Extract<Filter, { kind: 'meta' }>, meta: Record<string, unknown> | undefined): boolean {
  const v = metaValue(meta, f.key);
  if (v === undefined) return f.op === '!=';
  if (f.op === '=' || f.op === '!=') {
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    const eq = s.toLowerCase() === f.value.toLowerCase() || (isNumber(f.value) && Number(v) === Number(f.value));
    return f.op === '=' ? eq : !eq;
  }
  const n = typeof v === 'number' ? v : typeof v === 'string' && isNumber(v) ? Number(v) : typeof v === 'boolean' ? Number(v) : NaN;
  if (Number.isNaN(n)) return false;
  const x = Number(f.value);
  switch (f.op) {
    case '>':
      return n > x;
    case '<':
      return n < x;
    case '>=':
      return n >= x;
    case '<=':
      return n <= x;
  }
  return false;
}

/** matchSummary checks the filters a summary can answer: false when the
 * trace surely does not match, true when it might. */
export function matchSummary(q: Query, t: TraceSummary): boolean {
  for (const f of q.filters) {
    if (f.kind === 'annotated' && (t.annotation_count > 0) === f.not) return false;
    if (f.kind === 'meta' && matchMeta(f, t.metadata) === f.not) return false;
  }
  return true;
}

/** textHits finds every occurrence of the words in the trace's text
 * (content, tool names, argument strings), as addresses with code point
 * ranges, case-insensitively. */
export function textHits(t: Trace, words: string[]): HighlightInput[] {
  const out: HighlightInput[] = [];
  if (words.length === 0) return out;
  t.events.forEach((e, i) => {
    for (const [field, text] of eventTextFields(e)) {
      if (field === 'content' && Array.isArray(e.content)) continue; // the parts are searched one by one
      const lower = text.toLowerCase();
      const sameLength = lower.length === text.length;
      for (const w of words) {
        if (!w) continue;
        for (let k = lower.indexOf(w); k >= 0; k = lower.indexOf(w, k + w.length)) {
          if (!sameLength) break; // case folding changed offsets; skip rather than mark wrong text
          const s = unitsToCp(text, k);
          const end = s + unitsToCp(text.slice(k, k + w.length), w.length);
          out.push({ id: `search-${out.length}`, kind: 'search', address: `messages.${i}.${field}:${s}-${end}`, message: `search: ${w}` });
        }
      }
    }
  });
  return out;
}

function allText(t: Trace): string {
  const parts: string[] = [];
  for (const e of t.events) for (const [f, s] of eventTextFields(e)) if (!(f === 'content' && Array.isArray(e.content))) parts.push(s);
  return parts.join('\n').toLowerCase();
}

export interface TraceMatch {
  ok: boolean;
  hits: HighlightInput[];
}

/** matchTrace checks every filter and word against a whole trace. */
export function matchTrace(q: Query, t: Trace, summary?: TraceSummary): TraceMatch {
  if (summary && !matchSummary(q, summary)) return { ok: false, hits: [] };
  const anns = t.annotations ?? [];
  for (const f of q.filters) {
    let m = true;
    switch (f.kind) {
      case 'annotated':
        m = summary ? summary.annotation_count > 0 : anns.length > 0;
        break;
      case 'meta':
        m = matchMeta(f, t.metadata ?? summary?.metadata);
        break;
      case 'violation':
        m = anns.some((a) => a.source === 'analyzer');
        break;
      case 'tool':
        m = t.events.some((e) => (e.tool_calls ?? []).some((c) => c?.function?.name?.toLowerCase() === f.name.toLowerCase()));
        break;
      case 'role':
        m = t.events.some((e) => (e.role ?? '').toLowerCase() === f.name.toLowerCase());
        break;
    }
    if (m === f.not) return { ok: false, hits: [] };
  }
  const text = q.words.length || q.without.length ? allText(t) : '';
  if (q.words.some((w) => !text.includes(w))) return { ok: false, hits: [] };
  if (q.without.some((w) => text.includes(w))) return { ok: false, hits: [] };
  return { ok: true, hits: textHits(t, q.words) };
}

/** A SearchBackend answers a query over a dataset, a page of matches at a time. */
export interface SearchBackend {
  /** full: the backend reads the whole language and reports query errors
   * itself (the client-side parser's are not shown). */
  full?: boolean;
  /** search calls onMatch for each matching trace and onProgress as it
   * goes (traces scanned, or found when the backend knows the total); it
   * stops when signal aborts. */
  search(
    datasetId: string,
    q: Query,
    onMatch: (t: TraceSummary, hits: HighlightInput[], snippet?: Snippet) => void,
    onProgress: (scanned: number, total?: number, estimate?: boolean) => void,
    signal: AbortSignal,
  ): Promise<void>;
}
