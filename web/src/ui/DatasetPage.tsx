import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, parseSort, sortQuery, type ListSort } from '../lib/api';
import { rememberList, tracePath } from '../lib/listmemory';
import { datasetPath, navigate } from '../lib/router';
import { SESSION_KEYS, sessionOf, sessionPath } from '../lib/session';
import type { SearchBackend } from '../lib/search';
import { serverSearch } from '../lib/serversearch';
import type { Me, TraceSummary } from '../lib/types';
import { costTitle, fmtCost } from '../lib/usage';
import { copyText, fmtInt, fmtTime, NotFound, scalar, DatasetNotFound } from './common';
import { DatasetTotals } from './DatasetTotals';
import { EvalPanel } from './EvalPanel';
import { useDataset, useEvalStatus } from './hooks/useDataset';
import { useDatasetSearch, type Hit } from './hooks/useDatasetSearch';
import { useFindKey, useKeyboardNav } from './hooks/useKeyboardNav';
import { useMedia } from './hooks/useMedia';
import { useAfterPaint, useListPaintMark } from './hooks/usePaintMarks';
import { useTraceList } from './hooks/useTraceList';
import { PolicyPanel } from './PolicyPanel';
import { VirtualList, type VirtualHandle } from './VirtualList';

const ROW = 34;

/** oneLine turns runs of blanks and line breaks into one space. */
const oneLine = (s: string) => s.replace(/\s+/g, ' ');

export function DatasetPage(props: { owner: string; name: string; search: string; me: Me | null; backend?: SearchBackend }) {
  const backend = props.backend ?? serverSearch;
  const [err, setErr] = useState('');
  const [missing, setMissing] = useState(false);
  const initialQ = new URLSearchParams(props.search).get('q') ?? '';
  const [q, setQ] = useState(initialQ);
  const [active, setActive] = useState(initialQ); // the query shown
  const [flagged, setFlagged] = useState<string[] | null>(null);
  const [showCols, setShowCols] = useState(false);
  const [copied, setCopied] = useState('');
  // The row the keys have selected (j/k, arrows; Enter opens it), -1 none.
  const [cursor, setCursor] = useState(-1);
  // The list's order, kept in the URL (?sort=key&order=desc).
  const [sort, setSort] = useState<ListSort>(() => parseSort(props.search));
  // The dataset's evaluation criteria: one verdict column each.
  const [criteria, setCriteria] = useState<string[]>([]);
  const list = useRef<VirtualHandle | null>(null);
  const searchBox = useRef<HTMLInputElement>(null);
  // A narrow window drops the Name column and lets the others shrink.
  const narrow = useMedia('(max-width: 699px)');

  const { ds, setDs, cols, toggleColumn } = useDataset(props.owner, props.name, { onError: setErr, onMissing: () => setMissing(true), onOpen: (d, first) => traces.seed(d.trace_count, first) });
  // Evaluation status per trace and criterion, polled while a run goes on.
  const evalStatus = useEvalStatus(ds?.id);
  const { query, results, scan, queryError, rerun } = useDatasetSearch(ds, active, backend, setErr);
  const traces = useTraceList(ds, results, flagged, setErr, rerun, sort);
  // Criteria saved on the dataset and those its runs graded.
  useEffect(() => {
    if (!ds) return;
    api.criteria(ds.id).then(
      (cs) => setCriteria((old) => mergeNames(old, cs.map((c) => c.name))),
      () => {},
    );
  }, [ds?.id]);
  useEffect(() => {
    const seen = new Set<string>();
    for (const st of Object.values(evalStatus.status ?? {})) for (const c of Object.keys(st)) seen.add(c);
    if (seen.size) setCriteria((old) => mergeNames(old, [...seen]));
  }, [evalStatus.status]);
  // And those the loaded rows have scores on (posted through the API).
  {
    const seen: string[] = [];
    for (let i = 0; i < Math.min(traces.count, 2000); i++) {
      const t = traces.row(i)?.summary;
      if (!t?.scores && !t?.verdicts) continue;
      for (const c of Object.keys({ ...t.scores, ...t.verdicts })) if (!criteria.includes(c) && !seen.includes(c)) seen.push(c);
    }
    if (seen.length) queueMicrotask(() => setCriteria((old) => mergeNames(old, seen)));
  }
  // A run that ends leaves new verdicts: the rows in view are read again.
  const wasRunning = useRef(false);
  useEffect(() => {
    if (wasRunning.current && !evalStatus.running) traces.refresh();
    wasRunning.current = evalStatus.running;
  }, [evalStatus.running]);
  const sortBy = (key: string) => {
    // A new column sorts its largest values first (time: oldest first);
    // the sorted column's header turns the order around.
    const next: ListSort = key === sort.key ? { key, desc: !sort.desc } : { key, desc: key !== 'time' };
    setSort(next);
    setCursor(-1);
    const p = new URLSearchParams(location.search);
    p.delete('sort');
    p.delete('order');
    const rest = p.toString();
    const qs = (rest ? '&' + rest : '') + sortQuery(next);
    history.replaceState(history.state, '', location.pathname + (qs ? '?' + qs.slice(1) : '') + location.hash);
    list.current?.scrollTo(0, 'start');
  };
  useFindKey(searchBox);
  useListPaintMark();
  // The side panels (policies, evaluation) render just after the list
  // first paints: the rows are what the page is opened for.
  const side = useAfterPaint(ds);

  const open = (h: Hit) => {
    const ids: string[] = [];
    for (let i = 0; i < traces.count; i++) {
      const t = traces.row(i);
      if (t) ids.push(t.summary.id);
    }
    rememberList({ datasetId: ds!.id, owner: ds!.owner, name: ds!.name, ids, q: active });
    // With words in the query, the trace page lands on their first hit.
    navigate(tracePath(h.summary.id, query.words.length ? active : ''));
  };

  const moveCursor = (d: number) => {
    if (!traces.count) return;
    const from = cursor >= 0 && cursor < traces.count ? cursor : (list.current?.first() ?? 0) - (d > 0 ? 1 : 0);
    const n = Math.max(0, Math.min(traces.count - 1, from + d));
    setCursor(n);
    list.current?.scrollTo(n, 'nearest');
  };
  // Another list (a search, the flagged traces) starts with no row selected.
  useEffect(() => setCursor(-1), [active, flagged]);
  useKeyboardNav({
    j: () => moveCursor(1),
    k: () => moveCursor(-1),
    ArrowDown: () => moveCursor(1),
    ArrowUp: () => moveCursor(-1),
    Enter: () => {
      const h = cursor >= 0 ? traces.row(cursor) : undefined;
      if (h) open(h);
    },
  });

  if (missing) return <DatasetNotFound owner={props.owner} name={props.name} me={props.me} />;
  if (err && !ds)
    return (
      <NotFound title="The dataset could not be loaded" me={props.me}>
        <p class="error">{err}</p>
      </NotFound>
    );
  if (!ds) return <p class="muted">Loading…</p>;
  const canWrite = props.me?.user?.name === ds.owner;
  // A Session column, linking to the session's view, once a loaded trace
  // names a session (and the window is wide enough for it).
  const sessions = !narrow && traces.metaKeys.some((k) => SESSION_KEYS.includes(k));
  // A narrow window also drops duration, tokens and cost.
  const grid = narrow
    ? `40px minmax(0,2.5fr) 44px 36px 36px 52px ${criteria.map(() => '40px ').join('')}${cols.map(() => 'minmax(0,1fr)').join(' ')}`
    : `70px minmax(120px,1fr) minmax(200px,2.5fr) 70px 60px 60px 76px 76px 70px 70px ${criteria.map(() => 'minmax(56px,90px) ').join('')}${sessions ? 'minmax(80px,0.8fr) ' : ''}${cols.map(() => 'minmax(80px,1fr)').join(' ')}`;
  // A sortable column's header: a button, and aria-sort on the sorted one.
  const sortable = !results && !flagged;
  const head = (key: string, label: ComponentChildren, cls: string, title?: string) => {
    const on = sort.key === key;
    return (
      <span class={cls} role="columnheader" title={title} aria-sort={on ? (sort.desc ? 'descending' : 'ascending') : 'none'} data-sort={key}>
        {sortable ? (
          <button type="button" class={`sort-head ${on ? 'on' : ''}`} onClick={() => sortBy(key)}>
            {label}
            <span class="sort-mark" aria-hidden="true">
              {on ? (sort.desc ? '▼' : '▲') : ''}
            </span>
          </button>
        ) : (
          label
        )}
      </span>
    );
  };
  const row = (i: number): ComponentChildren => {
    const h = traces.row(i);
    if (!h) return <div class={`trow placeholder ${i === cursor ? 'selected' : ''}`} style={{ gridTemplateColumns: grid }}>…</div>;
    // Everything a row shows is in its summary (and a search's snippet):
    // the list fetches no trace.
    const t = h.summary;
    const sn = h.snippet;
    const viol = t.violation_count ?? 0;
    return (
      <a class={`trow ${i === cursor ? 'selected' : ''}`} aria-current={i === cursor ? 'true' : undefined} href={`/traces/${encodeURIComponent(t.id)}`} data-trace={t.id} style={{ gridTemplateColumns: grid }} onClick={(e) => (e.preventDefault(), open(h))}>
        <span class="num">{t.index}</span>
        {!narrow && <span class="ell">{t.name ?? ''}</span>}
        {sn ? (
          // The text before the hit gives way first, cut on its left, so
          // the hit stays in view however narrow the column.
          <span class="first-user snip">
            <span class="snip-before">
              {/* a no-break space: a plain one at the end would move to the left in the right-to-left box */}
              <span>…{oneLine(sn.before).replace(/ $/, '\u00a0')}</span>
            </span>
            <mark class="hl hl-search">{oneLine(sn.match)}</mark>
            <span class="snip-after">{oneLine(sn.after)}</span>
          </span>
        ) : (
          <span class="ell first-user">{t.first_user ?? ''}</span>
        )}
        <span class="num">{t.event_count}</span>
        <span class="num" title="annotations">
          {t.annotation_count || ''}
        </span>
        <span class={`num ${viol ? 'viol' : ''}`} title="violations">
          {viol || ''}
        </span>
        {!narrow && <span class="num dur">{t.duration_ms !== undefined ? fmtDuration(t.duration_ms) : ''}</span>}
        {!narrow && <span class="num tokens">{tokensOf(t) !== undefined ? fmtInt(tokensOf(t)!) : ''}</span>}
        {!narrow && (
          <span class="num cost" title={t.cost !== undefined ? costTitle(t.cost_estimated) : undefined}>
            {t.cost !== undefined ? fmtCost(t.cost) : ''}
          </span>
        )}
        <EvalStatus status={evalStatus.status?.[t.id]} />
        {criteria.map((c) => (
          <Verdict verdict={t.verdicts?.[c]} score={t.scores?.[c]} status={evalStatus.status?.[t.id]?.[c]} running={evalStatus.running} criterion={c} />
        ))}
        {sessions && <SessionCell owner={ds.owner} name={ds.name} session={sessionOf(t.metadata)} />}
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
        <DatasetTotals id={ds.id} />
        <a class="small dashboard-link" href={`${datasetPath(ds.owner, ds.name)}/dashboard`}>
          Dashboard
        </a>
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
          {queryError && (
            <p class="error" role="alert">
              {queryError}
            </p>
          )}
          {showCols && (
            <div class="cols">
              {traces.metaKeys.length === 0 && <span class="muted">no metadata keys on the loaded traces</span>}
              {traces.metaKeys.map((k) => (
                <label>
                  <input
                    type="checkbox"
                    checked={cols.includes(k)}
                    onChange={(e) => toggleColumn(k, e.currentTarget.checked)}
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
          <div class="thead" role="row" style={{ gridTemplateColumns: grid }}>
            {head('time', '#', 'num', 'by index (the order traces came in)')}
            {!narrow && <span>Name</span>}
            <span>{results && query.words.length ? 'Match' : 'First user message'}</span>
            <span class="num">Events</span>
            <span class="num" title="annotations">
              Notes
            </span>
            {head('violations', 'Viol.', 'num', 'violations')}
            {!narrow && head('duration', 'Duration', 'num', 'first to last span or event')}
            {!narrow && head('tokens', 'Tokens', 'num', 'tokens in and out')}
            {!narrow && head('cost', 'Cost', 'num', 'recorded cost, or estimated from the price table')}
            <span title="evaluation status (lookout eval, evaluation runs)">Eval</span>
            {criteria.map((c) => head(`score:${c}`, c, 'verdict-head ell', `criterion ${c}: pass, fail or pending; sorts by the score (true 1, false 0)`))}
            {sessions && <span title="the trace's session: open it to see its traces in order">Session</span>}
            {cols.map((c) => (
              <span>{c}</span>
            ))}
          </div>
          <VirtualList
            class="trace-list"
            count={traces.count}
            estimate={ROW}
            fixed
            overscan={400}
            render={row}
            handle={(h) => (list.current = h)}
            onRange={traces.onRange}
          />
        </div>
        <aside class="dataset-side">
          {side && <PolicyPanel datasetId={ds.id} canWrite={canWrite} onFlagged={(ids) => setFlagged(ids)} onChecked={traces.refresh} />}
          {side && <EvalPanel datasetId={ds.id} canWrite={canWrite} onStatus={evalStatus.refresh} />}
        </aside>
      </div>
    </div>
  );
}

/** SessionCell links a row to its trace's session. The row is a link
 * already, and links do not nest: this one is a span that navigates. */
function SessionCell(props: { owner: string; name: string; session: string }) {
  if (!props.session) return <span class="session-cell" />;
  const go = (e: Event) => {
    e.preventDefault();
    e.stopPropagation();
    navigate(sessionPath(props.owner, props.name, props.session));
  };
  return (
    <span
      class="ell session-cell session-link"
      role="link"
      tabIndex={0}
      title={`session ${props.session}: its traces in order`}
      onClick={go}
      onKeyDown={(e) => e.key === 'Enter' && go(e)}
    >
      {props.session}
    </span>
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

/** mergeNames adds the names of b not in a, keeping a's order (and a
 * itself when nothing is new, so that no render follows). */
function mergeNames(a: string[], b: string[]): string[] {
  const add = b.filter((x) => !a.includes(x));
  return add.length ? [...a, ...add.sort()] : a;
}

/** tokensOf is a row's tokens: the total, else in plus out. */
function tokensOf(t: TraceSummary): number | undefined {
  if (t.total_tokens !== undefined) return t.total_tokens;
  if (t.input_tokens === undefined && t.output_tokens === undefined) return undefined;
  return (t.input_tokens ?? 0) + (t.output_tokens ?? 0);
}

/** fmtDuration writes milliseconds as "850 ms", "12.3 s" or "4m 05s". */
export function fmtDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${Number((ms / 1000).toPrecision(3))} s`;
  const s = Math.round(ms / 1000);
  const h = Math.floor(s / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = String(s % 60).padStart(2, '0');
  return h ? `${h}h ${String(m).padStart(2, '0')}m` : `${m}m ${sec}s`;
}

/** Verdict is a trace's verdict on one criterion: pass, fail, a number
 * (a numeric score), pending (a run is grading it), or nothing. */
function Verdict(props: { verdict?: 'pass' | 'fail'; score?: number; status?: string; running: boolean; criterion: string }) {
  const { verdict, score, status } = props;
  const pending = !verdict && score === undefined && (status === 'in_progress' || (props.running && status === 'not_evaluated'));
  const kind = verdict ?? (score !== undefined ? 'score' : pending ? 'pending' : status === 'error' ? 'error' : '');
  const label = { pass: '✓ pass', fail: '✗ fail', score: score !== undefined ? String(Number(score.toPrecision(3))) : '', pending: '… pending', error: '⚠', '': '' }[kind];
  return (
    <span class={`verdict v-${kind || 'none'}`} data-verdict={kind} data-criterion={props.criterion} title={`${props.criterion}: ${kind || 'not graded'}`}>
      {label}
    </span>
  );
}
