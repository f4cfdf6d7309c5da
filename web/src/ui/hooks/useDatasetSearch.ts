import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { ApiError, type Snippet } from '../../lib/api';
import type { HighlightInput } from '../../lib/highlight';
import { isEmpty, parseQuery, type Query, type SearchBackend } from '../../lib/search';
import type { Dataset, TraceSummary } from '../../lib/types';

/** A trace as the list shows it: every trace of the dataset, or matches. */
export interface Hit {
  summary: TraceSummary;
  hits: HighlightInput[];
  /** The text around the first hit, from the server's search. */
  snippet?: Snippet;
}

/** How far a search has gone. */
export interface Scan {
  scanned: number;
  done: boolean;
  total?: number;
  estimate?: boolean;
}

/** searches is whether query text (parsed as q) is searched for: a backend
 * that reads the whole language takes any text; otherwise the query must
 * parse and ask for something. */
export function searches(backend: SearchBackend, text: string, q: Query): boolean {
  return backend.full ? !!text.trim() : !isEmpty(q) && !q.errors.length;
}

/** byIndex orders hits by their trace's place in the dataset. */
export function byIndex(hits: readonly Hit[]): Hit[] {
  return hits.slice().sort((a, b) => a.summary.index - b.summary.index);
}

export interface DatasetSearch {
  /** The query shown, parsed. */
  query: Query;
  /** The matches so far in dataset order, or null when not searching. */
  results: Hit[] | null;
  scan: Scan | null;
  /** Why the server could not read the query: the reader's to fix. */
  queryError: string;
  /** rerun searches again, keeping the results shown until the new ones
   * are all in (their rows' counts changed: a policy ran). */
  rerun: () => void;
}

/** useDatasetSearch searches the dataset for text through the backend as
 * it changes, showing matches as they come (at most every 150 ms), and
 * keeps the URL's ?q= in step. */
export function useDatasetSearch(ds: Dataset | null, text: string, backend: SearchBackend, onError: (msg: string) => void): DatasetSearch {
  const [results, setResults] = useState<Hit[] | null>(null);
  const [scan, setScan] = useState<Scan | null>(null);
  const [queryError, setQueryError] = useState('');
  const query = useMemo(() => parseQuery(text), [text]);
  const [gen, setGen] = useState(0);
  // The search last run, to tell a rerun from a new search.
  const last = useRef<{ ds: Dataset; text: string } | null>(null);
  useEffect(() => {
    if (!ds) return;
    const again = last.current?.ds === ds && last.current.text === text;
    last.current = { ds, text };
    const pq = parseQuery(text);
    const u = new URL(location.href);
    if (text) u.searchParams.set('q', text);
    else u.searchParams.delete('q');
    history.replaceState(null, '', u.pathname + u.search);
    setQueryError('');
    if (!searches(backend, text, pq)) {
      setResults(null);
      setScan(null);
      return;
    }
    const ac = new AbortController();
    const found: Hit[] = [];
    if (!again) {
      setResults([]);
      setScan({ scanned: 0, done: false });
    }
    let shown = 0;
    const flush = () => setResults(byIndex(found));
    backend
      .search(
        ds.id,
        pq,
        (t, hits, snippet) => {
          found.push({ summary: t, hits, snippet });
          if (!again && performance.now() - shown > 150) {
            shown = performance.now();
            flush();
          }
        },
        (n, total, estimate) => !again && setScan({ scanned: n, done: false, total, estimate }),
        ac.signal,
      )
      .then(
        () => {
          if (!ac.signal.aborted) {
            flush();
            setScan((s) => ({ ...s, scanned: s?.scanned ?? 0, done: true }));
          }
        },
        (e) => {
          if (ac.signal.aborted) return;
          if (e instanceof ApiError && e.code === 'invalid_query') {
            setQueryError(e.message);
            setResults(null);
            setScan(null);
          } else onError(e.message);
        },
      );
    return () => ac.abort();
  }, [ds, text, gen]);
  return { query, results, scan, queryError, rerun: () => setGen((g) => g + 1) };
}
