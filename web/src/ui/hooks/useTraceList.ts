import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, cursorAfter, FIRST_TRACES, sorted, type ListSort } from '../../lib/api';
import type { Dataset, TraceSummary } from '../../lib/types';
import type { Hit } from './useDatasetSearch';

/** Rows are fetched in pages of this many traces. */
export const PAGE = FIRST_TRACES;

/** pagesToLoad are the pages of size `page` that rows first..last fall in,
 * neither being loaded nor fully loaded already. */
export function pagesToLoad(first: number, last: number, rows: readonly (unknown | undefined)[], loading: ReadonlySet<number>, page: number): number[] {
  const out: number[] = [];
  for (let p = Math.floor(first / page); p <= Math.floor(last / page); p++) {
    if (loading.has(p)) continue;
    let need = false;
    for (let i = p * page; i < Math.min((p + 1) * page, rows.length); i++) if (!rows[i]) need = true;
    if (need) out.push(p);
  }
  return out;
}

/** metaKeys are the metadata keys of the first 2,000 rows, sorted. */
export function metaKeys(count: number, row: (i: number) => Hit | undefined): string[] {
  const s = new Set<string>();
  for (let i = 0; i < Math.min(count, 2000); i++) for (const k of Object.keys(row(i)?.summary.metadata ?? {})) s.add(k);
  return [...s].sort();
}

export interface TraceList {
  count: number;
  /** The row at i, undefined while it is not loaded. Rows are the list's
   * summaries (first user message, counts, usage): the list fetches no
   * trace. */
  row: (i: number) => Hit | undefined;
  /** The metadata keys of the loaded rows (metaKeys). */
  metaKeys: string[];
  /** For the virtual list: rows first..last are in view. */
  onRange: (first: number, last: number) => void;
  /** seed sets the dataset's size and its first page of traces. */
  seed: (total: number, first: { traces: TraceSummary[]; sort?: string } | null) => void;
  /** refresh fetches the summaries of the rows in view again (their
   * annotations and violations changed: a policy ran over the dataset);
   * the rows shown stay until the new ones arrive. */
  refresh: () => void;
}

/** useTraceList is the dataset page's rows: the search results when there
 * are some, else the traces the policy flagged when there are some, else
 * every trace, fetched by page as they scroll into view. A search's rows
 * are refreshed by searching again (onRefreshResults). */
export function useTraceList(
  ds: Dataset | null,
  results: Hit[] | null,
  flagged: string[] | null,
  onError: (msg: string) => void,
  onRefreshResults?: () => void,
  sort?: ListSort,
): TraceList {
  const rows = useRef<(TraceSummary | undefined)[]>([]);
  const loading = useRef(new Set<number>());
  const [, bump] = useState(0);

  const flaggedSet = useMemo(() => (flagged ? new Set(flagged) : null), [flagged]);
  const shownList: Hit[] | null = useMemo(() => {
    if (results) return flaggedSet ? results.filter((r) => flaggedSet.has(r.summary.id)) : results;
    return null;
  }, [results, flaggedSet]);
  const [flaggedRows, setFlaggedRows] = useState<Hit[]>([]);
  const [flaggedGen, setFlaggedGen] = useState(0);
  useEffect(() => {
    if (!flagged || results) return;
    // Flagged traces: their summaries from the list.
    (async () => {
      const want = new Set(flagged);
      const out: Hit[] = [];
      let cursor = '';
      do {
        const page = await api.traces(ds!.id, cursor, 1000);
        for (const t of page.traces) if (want.has(t.id)) out.push({ summary: t, hits: [] });
        cursor = page.next;
      } while (cursor && out.length < want.size);
      setFlaggedRows(out);
    })().catch((e) => onError(e.message));
  }, [flagged, results, flaggedGen]);

  const row = (i: number): Hit | undefined => {
    if (shownList) return shownList[i];
    if (flagged) return flaggedRows[i];
    const t = rows.current[i];
    return t ? { summary: t, hits: [] } : undefined;
  };
  const count = shownList ? shownList.length : flagged ? flaggedRows.length : rows.current.length;
  const keys = useMemo(() => metaKeys(count, row), [count, ds, results, flaggedRows, rows.current[0] !== undefined]);

  const loadPage = (p: number) => {
    loading.current.add(p);
    // Cursors continue after a trace index; a sorted list's pages start at
    // an offset (the server finds it in the sort's index). Rows are placed
    // by position; an answer for another order than the one shown now is
    // dropped.
    const gen = sortGen.current;
    const req = sorted(sortRef.current) ? api.traces(ds!.id, '', PAGE, sortRef.current, p * PAGE) : api.traces(ds!.id, cursorAfter(p * PAGE - 1), PAGE);
    req.then(
      (r) => {
        if (gen !== sortGen.current) return;
        r.traces.forEach((t, k) => (rows.current[p * PAGE + k] = t));
        bump((x) => x + 1);
      },
      (e) => {
        loading.current.delete(p);
        onError(e.message);
      },
    );
  };
  const inView = useRef<[number, number]>([0, 0]);
  // The order shown; a new one empties the rows and loads those in view.
  const sortKey = sort ? `${sort.key} ${sort.desc}` : 'time false';
  const sortRef = useRef(sort);
  const sortGen = useRef(0);
  const seenSort = useRef(sortKey);
  sortRef.current = sort;
  useEffect(() => {
    if (seenSort.current === sortKey) return;
    seenSort.current = sortKey;
    sortGen.current++;
    rows.current = new Array(rows.current.length);
    loading.current.clear();
    stale.current.clear();
    bump((x) => x + 1);
    if (!ds || results || flagged) return;
    const [a, b] = inView.current;
    for (const p of pagesToLoad(a, b, rows.current, loading.current, PAGE)) loadPage(p);
  }, [sortKey]);
  // Pages loaded before a refresh and not since: fetched again in view.
  const stale = useRef(new Set<number>());

  return {
    count,
    row,
    metaKeys: keys,
    onRange: (a, b) => {
      inView.current = [a, b];
      if (!ds || results || flagged) return;
      for (const p of pagesToLoad(a, b, rows.current, loading.current, PAGE)) loadPage(p);
      for (let p = Math.floor(a / PAGE); p <= Math.floor(b / PAGE); p++) if (stale.current.delete(p)) loadPage(p);
    },
    refresh: () => {
      if (results) return onRefreshResults?.();
      if (flagged) return setFlaggedGen((g) => g + 1);
      if (!ds) return;
      const [a, b] = inView.current;
      // The pages in view now, the others loaded when they come into view
      // again; their rows stay shown until then.
      for (const p of loading.current) if (p < Math.floor(a / PAGE) || p > Math.floor(b / PAGE)) stale.current.add(p);
      for (let p = Math.floor(a / PAGE); p <= Math.floor(b / PAGE); p++) loadPage(p);
    },
    seed: (total, first) => {
      rows.current = new Array(total);
      stale.current.clear();
      // The first page prefetched, when it is in the order shown.
      if (first && (first.sort ?? 'time false') === seenSort.current) {
        first.traces.forEach((t, k) => (rows.current[k] = t));
        loading.current.add(0);
      }
    },
  };
}
