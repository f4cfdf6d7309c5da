import { useEffect, useMemo, useState } from 'preact/hooks';
import { ApiError } from '../../lib/api';
import type { HighlightInput } from '../../lib/highlight';
import { isEmpty, parseQuery, type Query, type SearchBackend } from '../../lib/search';
import type { Dataset, TraceSummary } from '../../lib/types';

/** A trace as the list shows it: every trace of the dataset, or matches. */
export interface Hit {
  summary: TraceSummary;
  hits: HighlightInput[];
  snippet?: { before: string; match: string; after: string };
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
}

/** useDatasetSearch searches the dataset for text through the backend as
 * it changes, showing matches as they come (at most every 150 ms), and
 * keeps the URL's ?q= in step. */
export function useDatasetSearch(ds: Dataset | null, text: string, backend: SearchBackend, onError: (msg: string) => void): DatasetSearch {
  const [results, setResults] = useState<Hit[] | null>(null);
  const [scan, setScan] = useState<Scan | null>(null);
  const [queryError, setQueryError] = useState('');
  const query = useMemo(() => parseQuery(text), [text]);
  useEffect(() => {
    if (!ds) return;
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
    setResults([]);
    setScan({ scanned: 0, done: false });
    let last = 0;
    const flush = () => setResults(byIndex(found));
    backend
      .search(
        ds.id,
        pq,
        (t, hits) => {
          found.push({ summary: t, hits });
          if (performance.now() - last > 150) {
            last = performance.now();
            flush();
          }
        },
        (n, total, estimate) => setScan({ scanned: n, done: false, total, estimate }),
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
  }, [ds, text]);
  return { query, results, scan, queryError };
}
