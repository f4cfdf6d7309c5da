import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, cursorAfter, FIRST_TRACES } from '../../lib/api';
import { cpToUnits, tryParseAddress } from '../../lib/address';
import { eventTextFields, type HighlightInput } from '../../lib/highlight';
import type { Dataset, Trace, TraceSummary } from '../../lib/types';
import type { Hit } from './useDatasetSearch';

/** Rows are fetched in pages of this many traces. */
export const PAGE = FIRST_TRACES;

/** What a row shows that needs the trace itself. */
export interface Details {
  firstUser: string;
  violations: number;
}

/** detailsOf is a trace's first user message (200 code units at most) and
 * its number of analyzer violations. */
export function detailsOf(t: Trace): Details {
  const u = t.events.find((e) => e.role === 'user');
  const text = u ? (eventTextFields(u).get('content') ?? '') : '';
  return { firstUser: text.slice(0, 200), violations: (t.annotations ?? []).filter((a) => a.source === 'analyzer').length };
}

/** snippetOf is the text around a search hit with a range, for the list's
 * Match column. */
export function snippetOf(t: Trace, h: HighlightInput): Hit['snippet'] {
  const a = tryParseAddress(h.address);
  if (!a || a.sel?.kind !== 'range') return undefined;
  const text = eventTextFields(t.events[a.event] ?? {}).get(a.path.join('.'));
  if (text === undefined) return undefined;
  const s = cpToUnits(text, a.sel.start);
  const e = cpToUnits(text, a.sel.end);
  return { before: text.slice(Math.max(0, s - 40), s), match: text.slice(s, e), after: text.slice(e, e + 60) };
}

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
  /** The row at i, undefined while it is not loaded. */
  row: (i: number) => Hit | undefined;
  details: (traceId: string) => Details | null | undefined;
  /** A trace fetched for its details, if it still is in the cache. */
  cached: (traceId: string) => Trace | undefined;
  /** The metadata keys of the loaded rows (metaKeys). */
  metaKeys: string[];
  /** For the virtual list: rows first..last are in view. */
  onRange: (first: number, last: number) => void;
  /** seed sets the dataset's size and its first page of traces. */
  seed: (total: number, first: { traces: TraceSummary[] } | null) => void;
  /** refresh fetches the rows in view and their details again (their
   * annotations and violations changed: a policy ran over the dataset). */
  refresh: () => void;
}

/** useTraceList is the dataset page's rows: the search results when there
 * are some, else the traces the policy flagged when there are some, else
 * every trace, fetched by page as they scroll into view. The details of
 * the rows in view are fetched a few at a time after scrolling settles. */
export function useTraceList(ds: Dataset | null, results: Hit[] | null, flagged: string[] | null, onError: (msg: string) => void): TraceList {
  const rows = useRef<(TraceSummary | undefined)[]>([]);
  const loading = useRef(new Set<number>());
  const [, bump] = useState(0);
  const details = useRef(new Map<string, Details | null>());
  // Details to fetch again (refresh); shown until the new ones arrive.
  const stale = useRef(new Set<string>());
  // Snippets of hits come from the traces fetched for their details.
  const traceCache = useRef(new Map<string, Trace>());

  const flaggedSet = useMemo(() => (flagged ? new Set(flagged) : null), [flagged]);
  const shownList: Hit[] | null = useMemo(() => {
    if (results) return flaggedSet ? results.filter((r) => flaggedSet.has(r.summary.id)) : results;
    return null;
  }, [results, flaggedSet]);
  const [flaggedRows, setFlaggedRows] = useState<Hit[]>([]);
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
  }, [flagged, results]);

  const row = (i: number): Hit | undefined => {
    if (shownList) return shownList[i];
    if (flagged) return flaggedRows[i];
    const t = rows.current[i];
    return t ? { summary: t, hits: [] } : undefined;
  };
  const count = shownList ? shownList.length : flagged ? flaggedRows.length : rows.current.length;
  const keys = useMemo(() => metaKeys(count, row), [count, ds, results, flaggedRows, rows.current[0] !== undefined]);

  const detailTimer = useRef(0);
  const loadDetails = (first: number, last: number) => {
    clearTimeout(detailTimer.current);
    detailTimer.current = window.setTimeout(async () => {
      const ids: string[] = [];
      for (let i = first; i <= last; i++) {
        const t = row(i)?.summary;
        if (t && (!details.current.has(t.id) || stale.current.has(t.id))) ids.push(t.id);
      }
      let k = 0;
      const worker = async () => {
        while (k < ids.length) {
          const id = ids[k++];
          if (!stale.current.delete(id)) details.current.set(id, null);
          try {
            const t = await api.trace(id);
            traceCache.current.set(id, t);
            if (traceCache.current.size > 200) traceCache.current.delete(traceCache.current.keys().next().value!);
            details.current.set(id, detailsOf(t));
            bump((x) => x + 1);
          } catch {
            if (details.current.get(id) === null) details.current.delete(id);
          }
        }
      };
      await Promise.all([worker(), worker(), worker()]);
    }, 120);
  };
  const loadPage = (p: number) => {
    loading.current.add(p);
    // Cursors continue after a trace index; rows are placed by position.
    api.traces(ds!.id, cursorAfter(p * PAGE - 1), PAGE).then(
      (r) => {
        r.traces.forEach((t, k) => (rows.current[p * PAGE + k] = t));
        bump((x) => x + 1);
      },
      (e) => {
        loading.current.delete(p);
        onError(e.message);
      },
    );
  };
  const loadRange = (first: number, last: number) => {
    if (!ds || results || flagged) return;
    for (const p of pagesToLoad(first, last, rows.current, loading.current, PAGE)) loadPage(p);
    loadDetails(first, last);
  };
  const inView = useRef<[number, number]>([0, 0]);

  return {
    count,
    row,
    details: (id) => details.current.get(id),
    cached: (id) => traceCache.current.get(id),
    metaKeys: keys,
    onRange: (a, b) => {
      inView.current = [a, b];
      if (results || flagged) loadDetails(a, b);
      else loadRange(a, b);
    },
    refresh: () => {
      const [a, b] = inView.current;
      for (const id of details.current.keys()) stale.current.add(id);
      traceCache.current.clear();
      // The rows shown stay until their new summaries arrive.
      if (ds && !results && !flagged) for (let p = Math.floor(a / PAGE); p <= Math.floor(b / PAGE); p++) loadPage(p);
      loadDetails(a, b);
    },
    seed: (total, first) => {
      rows.current = new Array(total);
      if (first) {
        first.traces.forEach((t, k) => (rows.current[k] = t));
        loading.current.add(0);
      }
    },
  };
}
