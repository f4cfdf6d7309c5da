import type { ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, ApiError, cursorAfter, FIRST_TRACES } from '../lib/api';
import { serverSearch } from '../lib/serversearch';
import type { HighlightInput } from '../lib/highlight';
import { eventTextFields } from '../lib/highlight';
import { tryParseAddress, cpToUnits } from '../lib/address';
import { navigate } from '../lib/router';
import { isEmpty, parseQuery, type SearchBackend } from '../lib/search';
import type { Dataset, Me, Trace, TraceSummary } from '../lib/types';
import { copyText, fmtTime, scalar, fmtInt } from './common';
import { EvalPanel } from './EvalPanel';
import { PolicyPanel } from './PolicyPanel';
import { VirtualList, type VirtualHandle } from './VirtualList';

const PAGE = FIRST_TRACES;
const ROW = 34;

interface Details {
  firstUser: string;
  violations: number;
}

/** The list of traces as shown: every trace of the dataset, or matches. */
interface Hit {
  summary: TraceSummary;
  hits: HighlightInput[];
  snippet?: { before: string; match: string; after: string };
}

// Where the dataset page was, for the trace page's [ and ] keys.
export interface ListMemory {
  datasetId: string;
  owner: string;
  name: string;
  ids: string[];
  q: string;
}

export function rememberList(m: ListMemory) {
  try {
    sessionStorage.setItem('lookout.list', JSON.stringify({ ...m, ids: m.ids.slice(0, 100000) }));
  } catch {
    /* storage full or off */
  }
}

function snippetOf(t: Trace, h: HighlightInput): Hit['snippet'] {
  const a = tryParseAddress(h.address);
  if (!a || a.sel?.kind !== 'range') return undefined;
  const text = eventTextFields(t.events[a.event] ?? {}).get(a.path.join('.'));
  if (text === undefined) return undefined;
  const s = cpToUnits(text, a.sel.start);
  const e = cpToUnits(text, a.sel.end);
  return { before: text.slice(Math.max(0, s - 40), s), match: text.slice(s, e), after: text.slice(e, e + 60) };
}

export function DatasetPage(props: { owner: string; name: string; search: string; me: Me | null; backend?: SearchBackend }) {
  const backend = props.backend ?? serverSearch;
  // The side panels (policies, evaluation) render just after the list
  // first paints: the rows are what the page is opened for.
  const [side, setSide] = useState(false);
  const [ds, setDs] = useState<Dataset | null>(null);
  const [err, setErr] = useState('');
  const rows = useRef<(TraceSummary | undefined)[]>([]);
  const loading = useRef(new Set<number>());
  const [, bump] = useState(0);
  const details = useRef(new Map<string, Details | null>());
  const initialQ = new URLSearchParams(props.search).get('q') ?? '';
  const [q, setQ] = useState(initialQ);
  const [active, setActive] = useState(initialQ); // the query shown
  const [results, setResults] = useState<Hit[] | null>(null);
  const [scan, setScan] = useState<{ scanned: number; done: boolean; total?: number; estimate?: boolean } | null>(null);
  const [qErr, setQErr] = useState('');
  const [flagged, setFlagged] = useState<string[] | null>(null);
  const [cols, setCols] = useState<string[]>([]);
  const [showCols, setShowCols] = useState(false);
  const [copied, setCopied] = useState('');
  // Evaluation status per trace and criterion (evaluation runs); polled
  // while a run is going on.
  const [evalStatus, setEvalStatus] = useState<Record<string, Record<string, string>> | null>(null);
  const [statusTick, setStatusTick] = useState(0);
  useEffect(() => {
    if (!ds) return;
    let timer = 0;
    let stop = false;
    const load = () =>
      api.raw<{ traces: Record<string, Record<string, string>>; running?: string[] }>('GET', `/datasets/${encodeURIComponent(ds.id)}/eval/status`).then(
        (r) => {
          if (stop) return;
          setEvalStatus(r.traces);
          if (r.running?.length) timer = window.setTimeout(load, 2000);
        },
        () => setEvalStatus(null),
      );
    load();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [ds?.id, statusTick]);
  const list = useRef<VirtualHandle | null>(null);
  const searchBox = useRef<HTMLInputElement>(null);
  const query = useMemo(() => parseQuery(active), [active]);

  // A layout effect, not a deferred one: the answers are usually on their
  // way already (main.tsx), and the first rows then show in the next frame.
  useLayoutEffect(() => {
    api.openDataset(props.owner, props.name).then(
      ({ datasets: l, first }) => {
        if (!l.length) setErr(`no dataset ${props.owner}/${props.name} (or it is private)`);
        else {
          rows.current = new Array(l[0].trace_count);
          if (first) {
            first.traces.forEach((t, k) => (rows.current[k] = t));
            loading.current.add(0);
          }
          setDs(l[0]);
          try {
            setCols(JSON.parse(localStorage.getItem('lookout.cols.' + l[0].id) ?? '[]'));
          } catch {
            /* none saved */
          }
        }
      },
      (e) => setErr(e.message),
    );
  }, []);

  // Search runs through the backend; results replace the list.
  useEffect(() => {
    if (!ds) return;
    const pq = parseQuery(active);
    const u = new URL(location.href);
    if (active) u.searchParams.set('q', active);
    else u.searchParams.delete('q');
    history.replaceState(null, '', u.pathname + u.search);
    setQErr('');
    if (backend.full ? !active.trim() : isEmpty(pq) || pq.errors.length) {
      setResults(null);
      setScan(null);
      return;
    }
    const ac = new AbortController();
    const found: Hit[] = [];
    setResults([]);
    setScan({ scanned: 0, done: false });
    let last = 0;
    const flush = () => setResults(found.slice().sort((a, b) => a.summary.index - b.summary.index));
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
          // A query the server cannot read is the reader's to fix, not the page's.
          if (e instanceof ApiError && e.code === 'invalid_query') {
            setQErr(e.message);
            setResults(null);
            setScan(null);
          } else setErr(e.message);
        },
      );
    return () => ac.abort();
  }, [ds, active]);

  // Snippets of hits come from the traces the search fetched; fetch again
  // lazily (cached by the browser? no: no-store) only for visible rows.
  const traceCache = useRef(new Map<string, Trace>());

  const loadRange = (first: number, last: number) => {
    if (!ds || results || flagged) return;
    for (let p = Math.floor(first / PAGE); p <= Math.floor(last / PAGE); p++) {
      if (loading.current.has(p)) continue;
      let need = false;
      for (let i = p * PAGE; i < Math.min((p + 1) * PAGE, rows.current.length); i++) if (!rows.current[i]) need = true;
      if (!need) continue;
      loading.current.add(p);
      // Cursors continue after a trace index; rows are placed by position.
      api.traces(ds.id, cursorAfter(p * PAGE - 1), PAGE).then(
        (r) => {
          r.traces.forEach((t, k) => (rows.current[p * PAGE + k] = t));
          bump((x) => x + 1);
        },
        (e) => {
          loading.current.delete(p);
          setErr(e.message);
        },
      );
    }
    loadDetails(first, last);
  };

  // First user message and violation counts need the trace itself: fetch
  // the visible ones, a few at a time, after scrolling settles.
  const detailTimer = useRef(0);
  const loadDetails = (first: number, last: number) => {
    clearTimeout(detailTimer.current);
    detailTimer.current = window.setTimeout(async () => {
      const ids: string[] = [];
      for (let i = first; i <= last; i++) {
        const t = shown(i)?.summary;
        if (t && !details.current.has(t.id)) ids.push(t.id);
      }
      let k = 0;
      const worker = async () => {
        while (k < ids.length) {
          const id = ids[k++];
          details.current.set(id, null);
          try {
            const t = await api.trace(id);
            traceCache.current.set(id, t);
            if (traceCache.current.size > 200) traceCache.current.delete(traceCache.current.keys().next().value!);
            const u = t.events.find((e) => e.role === 'user');
            const text = u ? (eventTextFields(u).get('content') ?? '') : '';
            details.current.set(id, {
              firstUser: text.slice(0, 200),
              violations: (t.annotations ?? []).filter((a) => a.source === 'analyzer').length,
            });
            bump((x) => x + 1);
          } catch {
            details.current.delete(id);
          }
        }
      };
      await Promise.all([worker(), worker(), worker()]);
    }, 120);
  };

  const flaggedSet = useMemo(() => (flagged ? new Set(flagged) : null), [flagged]);
  const shownList: Hit[] | null = useMemo(() => {
    if (results) return flaggedSet ? results.filter((r) => flaggedSet.has(r.summary.id)) : results;
    if (flaggedSet) return null;
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
    })().catch((e) => setErr(e.message));
  }, [flagged, results]);

  const shown = (i: number): Hit | undefined => {
    if (shownList) return shownList[i];
    if (flagged) return flaggedRows[i];
    const t = rows.current[i];
    return t ? { summary: t, hits: [] } : undefined;
  };
  const count = shownList ? shownList.length : flagged ? flaggedRows.length : rows.current.length;

  const metaKeys = useMemo(() => {
    const s = new Set<string>();
    for (let i = 0; i < Math.min(count, 2000); i++) for (const k of Object.keys(shown(i)?.summary.metadata ?? {})) s.add(k);
    Object.keys(ds?.metadata ?? {}).length;
    return [...s].sort();
  }, [count, ds, results, flaggedRows, rows.current[0] !== undefined]);

  const open = (h: Hit) => {
    const ids: string[] = [];
    for (let i = 0; i < count; i++) {
      const t = shown(i);
      if (t) ids.push(t.summary.id);
    }
    rememberList({ datasetId: ds!.id, owner: ds!.owner, name: ds!.name, ids, q: active });
    navigate(`/traces/${encodeURIComponent(h.summary.id)}${active && query.words.length ? '?q=' + encodeURIComponent(active) : ''}`);
  };

  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.key === '/' && !(e.target instanceof HTMLInputElement || e.target instanceof HTMLTextAreaElement)) {
        e.preventDefault();
        searchBox.current?.focus();
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);

  // A paint mark for the benchmark (web/bench): the first rows on screen.
  useLayoutEffect(() => {
    if (performance.getEntriesByName('lookout:list-painted').length || !document.querySelector('.trow[data-trace]')) return;
    requestAnimationFrame(() => performance.mark('lookout:list-painted'));
  });

  useEffect(() => {
    if (!ds || side) return;
    // A timeout queued in the frame's animation callback runs after that
    // frame is painted.
    let timer = 0;
    const raf = requestAnimationFrame(() => (timer = window.setTimeout(() => setSide(true))));
    return () => (cancelAnimationFrame(raf), clearTimeout(timer));
  }, [ds, side]);

  if (err && !ds) return <p class="error">{err}</p>;
  if (!ds) return <p class="muted">Loading…</p>;
  const canWrite = props.me?.user?.name === ds.owner;
  const grid = `70px minmax(120px,1fr) minmax(200px,2.5fr) 70px 60px 60px 70px ${cols.map(() => 'minmax(80px,1fr)').join(' ')}`;
  const row = (i: number): ComponentChildren => {
    const h = shown(i);
    if (!h) return <div class="trow placeholder" style={{ gridTemplateColumns: grid }}>…</div>;
    const t = h.summary;
    const d = details.current.get(t.id);
    const hit = h.hits[0];
    const cached = hit ? traceCache.current.get(t.id) : undefined;
    const sn = h.snippet ?? (hit && cached ? snippetOf(cached, hit) : undefined);
    return (
      <a class="trow" href={`/traces/${encodeURIComponent(t.id)}`} data-trace={t.id} style={{ gridTemplateColumns: grid }} onClick={(e) => (e.preventDefault(), open(h))}>
        <span class="num">{t.index}</span>
        <span class="ell">{t.name ?? ''}</span>
        <span class="ell first-user">
          {sn ? (
            <>
              …{sn.before}
              <mark class="hl hl-search">{sn.match}</mark>
              {sn.after}
            </>
          ) : d ? (
            d.firstUser
          ) : (
            ''
          )}
        </span>
        <span class="num">{t.event_count}</span>
        <span class="num" title="annotations">
          {t.annotation_count || ''}
        </span>
        <span class={`num ${d?.violations ? 'viol' : ''}`} title="violations">
          {d?.violations || ''}
        </span>
        <EvalStatus status={evalStatus?.[t.id]} />
        {cols.map((c) => (
          <span class="ell">{scalar(t.metadata?.[c])}</span>
        ))}
      </a>
    );
  };
  const shareLink = `${location.origin}/datasets/${encodeURIComponent(ds.owner)}/${encodeURIComponent(ds.name)}`;
  return (
    <div class="dataset">
      <div class="dataset-head">
        <h2>
          <a href="/">datasets</a> / {ds.owner} / {ds.name} {ds.public && <span class="badge">public</span>}
        </h2>
        <span class="muted">
          {fmtInt(ds.trace_count)} traces · created {fmtTime(ds.created_at)} · last pushed {fmtTime(ds.last_pushed)}
        </span>
        <button type="button" class="small" onClick={() => copyText(shareLink).then((ok) => setCopied(ok ? 'link copied' : shareLink))}>
          Copy link
        </button>
        {canWrite && (
          <button
            type="button"
            class="small share-toggle"
            title={ds.public ? 'only you will see this dataset' : 'anyone with the link can read this dataset (not change it)'}
            onClick={() => api.setPublic(ds.id, !ds.public).then(setDs, (e) => setErr(e.message))}
          >
            {ds.public ? 'Make private' : 'Make public'}
          </button>
        )}
        {copied && <span class="muted">{copied}</span>}
      </div>
      {Object.keys(ds.metadata ?? {}).length > 0 && (
        <details class="ds-meta" open>
          <summary>Metadata</summary>
          <div class="kvs">
            {Object.entries(ds.metadata).map(([k, v]) => (
              <span class="kv">
                {k}: <b>{scalar(v)}</b>
              </span>
            ))}
          </div>
        </details>
      )}
      <div class="dataset-body">
        <div class="dataset-main">
          <form
            class="searchbar"
            onSubmit={(e) => {
              e.preventDefault();
              setFlagged(null);
              setActive(q.trim());
            }}
          >
            <input
              ref={searchBox}
              class="search-input"
              type="search"
              placeholder="Search: words, is:annotated, meta:key=value, tool:name, role:user, has:violation  (press /)"
              value={q}
              onInput={(e) => setQ(e.currentTarget.value)}
              aria-label="search traces"
            />
            <button type="submit">Search</button>
            <button type="button" class="small" onClick={() => setShowCols(!showCols)}>
              Columns
            </button>
          </form>
          {!backend.full && query.errors.length > 0 && <p class="error">{query.errors.join('; ')}</p>}
          {qErr && (
            <p class="error" role="alert">
              {qErr}
            </p>
          )}
          {showCols && (
            <div class="cols">
              {metaKeys.length === 0 && <span class="muted">no metadata keys on the loaded traces</span>}
              {metaKeys.map((k) => (
                <label>
                  <input
                    type="checkbox"
                    checked={cols.includes(k)}
                    onChange={(e) => {
                      const n = e.currentTarget.checked ? [...cols, k] : cols.filter((c) => c !== k);
                      setCols(n);
                      localStorage.setItem('lookout.cols.' + ds.id, JSON.stringify(n));
                    }}
                  />{' '}
                  {k}
                </label>
              ))}
            </div>
          )}
          <div class="list-status muted">
            {results && scan && (
              <span class="search-status">
                {scan.total !== undefined
                  ? scan.done
                    ? `${fmtInt(results.length)} matching traces`
                    : `${fmtInt(results.length)} of ${scan.estimate ? 'about ' : ''}${fmtInt(scan.total)} matching traces…`
                  : `${fmtInt(results.length)} matching traces${scan.done ? '' : ` (searched ${fmtInt(scan.scanned)} of ${fmtInt(ds.trace_count)}…)`}`}
              </span>
            )}
            {flagged && (
              <span>
                showing {flagged.length} traces the policy flagged{' '}
                <button type="button" class="link" onClick={() => setFlagged(null)}>
                  show all
                </button>
              </span>
            )}
          </div>
          <div class="thead" style={{ gridTemplateColumns: grid }}>
            <span class="num">#</span>
            <span>Name</span>
            <span>{results && query.words.length ? 'Match' : 'First user message'}</span>
            <span class="num">Events</span>
            <span class="num" title="annotations">
              Notes
            </span>
            <span class="num" title="violations">
              Viol.
            </span>
            <span title="evaluation status (lookout eval, evaluation runs)">Eval</span>
            {cols.map((c) => (
              <span>{c}</span>
            ))}
          </div>
          <VirtualList
            class="trace-list"
            count={count}
            estimate={ROW}
            fixed
            overscan={400}
            render={row}
            handle={(h) => (list.current = h)}
            onRange={(a, b) => (results || flagged ? loadDetails(a, b) : loadRange(a, b))}
          />
        </div>
        <aside class="dataset-side">
          {side && <PolicyPanel datasetId={ds.id} canWrite={canWrite} onFlagged={(ids) => setFlagged(ids)} />}
          {side && <EvalPanel datasetId={ds.id} canWrite={canWrite} onStatus={() => setStatusTick((x) => x + 1)} />}
        </aside>
      </div>
    </div>
  );
}

/** EvalStatus sums up a trace's evaluation: error, in progress, evaluated
 * (with passes and fails when known), or nothing when not evaluated. */
function EvalStatus(props: { status?: Record<string, string> }) {
  const st = props.status;
  if (!st) return <span class="eval-status" />;
  const vals = Object.values(st);
  const all = Object.entries(st)
    .map(([c, v]) => `${c}: ${v.replace('_', ' ')}`)
    .join('\n');
  const kind = vals.includes('error') ? 'error' : vals.includes('in_progress') ? 'in_progress' : vals.every((v) => v === 'evaluated') ? 'evaluated' : 'not_evaluated';
  const label = { error: '⚠ error', in_progress: '… running', evaluated: '● done', not_evaluated: '○' }[kind];
  return (
    <span class={`eval-status es-${kind}`} data-eval={kind} title={all}>
      {label}
    </span>
  );
}
