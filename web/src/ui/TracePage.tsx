import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type Score } from '../lib/api';
import { tryParseAddress } from '../lib/address';
import { recallList, tracePath, neighbour } from '../lib/listmemory';
import { datasetPath, navigate } from '../lib/router';
import { sessionOf, sessionPath, userOf } from '../lib/session';
import { buildTree, fmtDuration, reveal, spanTimes, treeKey } from '../lib/tree';
import type { Annotation, Me, Trace, TraceUsage } from '../lib/types';
import { costTitle, fmtCost, noUsage, spanUsages, type Usage } from '../lib/usage';
import { AnnotationList } from './AnnotationList';
import { copyText, fmtInt, NotFound, scalar, scalarEntries } from './common';
import { EventCard, type CardSpan } from './EventCard';
import { useAnnotations } from './hooks/useAnnotations';
import { useComposer } from './hooks/useComposer';
import { useHighlights } from './hooks/useHighlights';
import { useKeyboardNav } from './hooks/useKeyboardNav';
import { useTracePaintMarks } from './hooks/usePaintMarks';
import { useCallIndex, useLiveTrace, useTraceData } from './hooks/useTraceData';
import { useTraceNav, type Tab } from './hooks/useTraceNav';
import { ScoresPanel } from './ScoresPanel';
import { SpanDetails, TimelineView, TreeView } from './TreeView';
import { VirtualList, type VirtualHandle } from './VirtualList';

const noNotes: Annotation[] = [];

/** stepScores are the current scores on each span, for the tree's step
 * statuses. */
function stepScores(scores: readonly Score[]): Map<string, Score[]> {
  const by = new Map<string, Score[]>();
  for (const sc of scores) {
    const ad = sc.current && sc.address ? tryParseAddress(sc.address) : null;
    if (ad && ad.root === 'spans') by.set(ad.span, [...(by.get(ad.span) ?? []), sc]);
  }
  return by;
}

/** cardSpansOf is, for each span events came from, what its cards show:
 * its usage and how long it took (its times, else its recorded latency).
 * One object per span, kept while the trace and its usage stay (cards
 * compare them by identity). */
function cardSpansOf(trace: Trace | null, usage: Map<string, Usage>): Map<string, CardSpan> {
  const m = new Map<string, CardSpan>();
  const spans = new Map((trace?.spans ?? []).map((s) => [s.id, s]));
  for (const e of trace?.events ?? []) {
    const id = e.span_id;
    if (!id || m.has(id)) continue;
    const s = spans.get(id);
    const u = usage.get(id) ?? noUsage;
    const t = s ? spanTimes(s) : null;
    m.set(id, { id, name: s?.name, usage: u, ms: t ? t[1] - t[0] : u.latencyMs });
  }
  return m;
}

/** headSkip are metadata members the header shows elsewhere (the session
 * and user) or that are a store's bookkeeping (a Langfuse export keeps its
 * whole trace object as the metadata). */
const headSkip = new Set(['session_id', 'session', 'sessionId', 'user_id', 'user', 'userId', 'id', 'projectId', 'bookmarked', 'public', 'createdAt', 'updatedAt', 'htmlPath']);
const HEAD_META = 8;

/** TraceSummary is the line under the trace's title: its metadata (reward,
 * task id, model...) and what it used in all, from the server: tokens in
 * and out, cost ("est." when some of it is priced from the table rather
 * than recorded) and duration. */
function TraceSummary(props: { trace: Trace; usage: TraceUsage | null; partial: boolean }) {
  const { usage: u } = props;
  // Short values only: a header line is no place for a JSON payload.
  const meta = scalarEntries(props.trace.metadata).filter(([k, v]) => !headSkip.has(k) && v !== null && v !== '' && !(typeof v === 'string' && (v.length > 120 || /^\s*[[{]/.test(v))));
  const shown = meta.slice(0, HEAD_META);
  const more = meta.length - shown.length;
  const metaModel = meta.some(([k]) => /^(model|model_name)$/i.test(k));
  const tokens = u && (u.input_tokens !== undefined || u.output_tokens !== undefined);
  if (!shown.length && !u) return null;
  return (
    <div class="trace-summary">
      {shown.map(([k, v]) => (
        <span class="meta-chip" data-key={k} title={`${k}: ${typeof v === 'string' ? v : JSON.stringify(v)}`}>
          <span class="muted">{k}</span> {scalar(v)}
        </span>
      ))}
      {more > 0 && (
        <span class="muted small" title={meta.slice(HEAD_META).map(([k, v]) => `${k}: ${scalar(v)}`).join('\n')}>
          +{more} more
        </span>
      )}
      {u && (
        <span class="usage-totals">
          {tokens && (
            <span class="sum sum-tokens" title={`tokens in all spans${u.total_tokens !== undefined ? `: ${fmtInt(u.total_tokens)} in all` : ''}`}>
              <span class="muted">tokens</span> <b class="sum-in">{fmtInt(u.input_tokens ?? 0)}</b> in · <b class="sum-out">{fmtInt(u.output_tokens ?? 0)}</b> out
            </span>
          )}
          {!tokens && u.total_tokens !== undefined && (
            <span class="sum sum-tokens">
              <b class="sum-total">{fmtInt(u.total_tokens)}</b> <span class="muted">tokens</span>
            </span>
          )}
          {u.cost !== undefined && (
            <span class="sum sum-cost" title={costTitle(u.cost_estimated, u.prices_as_of) + (u.unpriced_spans ? `; ${u.unpriced_spans} spans with tokens have no known price and are left out` : '')}>
              <span class="muted">cost</span> <b class="sum-cost-value">{fmtCost(u.cost)}</b>
              {u.cost_estimated && <span class="est"> est.</span>}
              {!!u.unpriced_spans && <span class="muted"> +?</span>}
            </span>
          )}
          {u.cost === undefined && !!u.unpriced_spans && (
            <span class="sum sum-cost muted" title="no span recorded a cost, and no price is known for their models">
              cost unknown
            </span>
          )}
          {u.duration_ms !== undefined && (
            <span class="sum sum-duration">
              <span class="muted">duration</span> <b>{fmtDuration(u.duration_ms)}</b>
            </span>
          )}
          {!metaModel && (u.models ?? []).length > 0 && (
            <span class="sum sum-models" title={(u.models ?? []).join(', ')}>
              <span class="muted">{(u.models ?? []).length > 1 ? 'models' : 'model'}</span> {(u.models ?? []).slice(0, 3).join(', ')}
              {(u.models ?? []).length > 3 ? ' …' : ''}
            </span>
          )}
        </span>
      )}
    </div>
  );
}

export function TracePage(props: { id: string; hash: string; search: string; me: Me | null }) {
  const { id, hash } = props;
  const meName = props.me?.user?.name ?? null;
  const mem = useMemo(recallList, [id]);
  const [err, setErr] = useState('');
  const [missing, setMissing] = useState(false); // the trace answered 404
  const [dsOwner, setDsOwner] = useState<string | null>(null); // the trace's dataset's owner, once known
  const [dsName, setDsName] = useState<string | null>(null); // and its name, when the trace has a session
  const [dsId, setDsId] = useState(''); // the trace's dataset, once its scores said
  const initialQ = new URLSearchParams(props.search).get('q') ?? '';
  const [q, setQ] = useState(initialQ);
  const [activeQ, setActiveQ] = useState(initialQ);
  const [raw, setRaw] = useState<ReadonlySet<number>>(new Set());
  const [copied, setCopied] = useState('');
  const [scores, setScores] = useState<Score[]>([]);
  const list = useRef<VirtualHandle | null>(null);
  const searchBox = useRef<HTMLInputElement>(null);

  // A trace with spans and no events opens on its tree.
  const { trace, usage, partial, refresh } = useTraceData(id, {
    onError: (m, status) => {
      setErr(m);
      if (status === 404) setMissing(true);
    },
    onFull: (t) => {
      if (!(t.events ?? []).length && (t.spans ?? []).length) nav.setTab('tree');
    },
  });
  const notes = useAnnotations(id, meName, setErr);
  useLiveTrace(id, () => Promise.all([refresh(), notes.reload()]), setErr);
  const tree = useMemo(() => buildTree(trace?.spans ?? []), [trace]);
  const spanU = useMemo(() => spanUsages(usage), [usage]);
  const cardSpans = useMemo(() => cardSpansOf(trace, spanU), [trace, spanU]);
  const { callIndex, outputIndex } = useCallIndex(trace);
  const { hl, steps } = useHighlights(id, trace, notes.anns, activeQ, hash);
  const nav = useTraceNav({ trace, partial, tree, hl, steps, query: activeQ, hash, list });
  const current = nav.cur >= 0 && nav.cur < steps.length ? steps[nav.cur].id : null;
  useTracePaintMarks(trace, partial);
  // From the trace in the address bar, not this page's: keys pressed faster
  // than pages change step on from the latest one.
  const otherTrace = (d: number) => {
    if (!mem) return;
    const m = /^\/traces\/([^/]+)$/.exec(location.pathname);
    const n = neighbour(mem, m ? decodeURIComponent(m[1]) : id, d);
    if (n) navigate(tracePath(n, mem.q));
  };
  // In the tree and the timeline, j/k and the arrows move the selected span
  // and Enter opens or closes it (treeKey); in the chat j/k move the
  // focused event and the arrows scroll as usual.
  const onTree = nav.tab !== 'chat';
  const treeCmd = (key: string) => () => {
    const r = treeKey(tree, nav.treeState, nav.selected, key);
    if (r?.state) nav.setTreeState(r.state);
    if (r?.selected) nav.setSelected(r.selected);
  };
  const treeKeys: Record<string, () => void> = onTree ? { ArrowDown: treeCmd('ArrowDown'), ArrowUp: treeCmd('ArrowUp'), ArrowLeft: treeCmd('ArrowLeft'), ArrowRight: treeCmd('ArrowRight'), Enter: treeCmd('Enter') } : {};
  useKeyboardNav({
    ...treeKeys,
    j: onTree ? treeCmd('j') : () => nav.moveEvent(1),
    k: onTree ? treeCmd('k') : () => nav.moveEvent(-1),
    n: () => nav.step(1),
    p: () => nav.step(-1),
    '/': () => searchBox.current?.focus(),
    '[': () => otherTrace(-1),
    ']': () => otherTrace(1),
  });
  // The dataset is looked up (once) when no list said which it is: its
  // name leads the breadcrumb (a shared link too), its owner says whether
  // the reader may write, and both make the session's link.
  const inList = !!mem && mem.ids.includes(id);
  const session = sessionOf(trace?.metadata);
  useEffect(() => {
    if (!dsId || dsOwner || inList) return;
    api.dataset(dsId).then(
      (d) => {
        setDsOwner(d.owner);
        setDsName(d.name);
      },
      () => {},
    );
  }, [dsId, inList]);
  const composer = useComposer(trace, notes.create);
  // A card's span link opens the tree on that span.
  const openSpan = (span: string) => {
    nav.setTab('tree');
    nav.setSelected(span);
    nav.setTreeState(reveal(tree, nav.treeState, span));
  };
  // Only the dataset's owner may annotate, rate and grade (the API refuses
  // others): a reader not logged in, or another user on a public dataset,
  // gets the trace read-only.
  const knownOwner = mem && mem.ids.includes(id) ? mem.owner : dsOwner;
  const canWrite = !!meName && (knownOwner === null || knownOwner === meName);

  if (err && !trace) {
    const back = mem && mem.ids.includes(id) ? { href: datasetPath(mem.owner, mem.name), label: `back to ${mem.name}` } : undefined;
    return missing ? (
      <NotFound title="Trace not found" me={props.me} back={back}>
        <p>
          There is no trace <code>{id}</code> here, or it is in a private dataset you may not read.
        </p>
      </NotFound>
    ) : (
      <NotFound title="The trace could not be loaded" me={props.me} back={back}>
        <p class="error">{err}</p>
      </NotFound>
    );
  }
  if (!trace) return <p class="muted">Loading trace…</p>;
  const events = trace.events ?? [];
  const hasTree = (trace.spans ?? []).length > 0;
  const selSpan = nav.selected ? tree.byId.get(nav.selected)?.span : undefined;
  const link = `${location.origin}/traces/${encodeURIComponent(id)}${hash ? '#' + hash : ''}`;
  const sel = composer.selBtn;
  // The trace's session links to its view once the dataset is known (from
  // the list it was opened from, else looked up).
  const user = userOf(trace.metadata);
  const sessionHref = session && (inList && mem ? sessionPath(mem.owner, mem.name, session) : dsOwner && dsName ? sessionPath(dsOwner, dsName, session) : '');
  // The user's traces: the dataset's list searched for user:"id".
  const userDataset = inList && mem ? mem : dsOwner && dsName ? { owner: dsOwner, name: dsName } : null;
  const userHref = user && userDataset ? `${datasetPath(userDataset.owner, userDataset.name)}?q=${encodeURIComponent(`user:"${user.replace(/"/g, '')}"`)}` : '';
  const treeProps = { tree, state: nav.treeState, setState: nav.setTreeState, selected: nav.selected, onSelect: nav.setSelected, scores: stepScores(scores), usage: spanU };
  return (
    <div class="trace">
      <div class="trace-head">
        <h2>
          {mem && mem.ids.includes(id) ? (
            <a class="crumb-dataset" href={datasetPath(mem.owner, mem.name) + (mem.q ? '?q=' + encodeURIComponent(mem.q) : '')}>
              {mem.name}
            </a>
          ) : dsOwner && dsName ? (
            <a class="crumb-dataset" href={datasetPath(dsOwner, dsName)}>
              {dsName}
            </a>
          ) : (
            <a href="/">datasets</a>
          )}{' '}
          / trace {trace.index ?? ''} {trace.name ? `· ${trace.name}` : ''}
        </h2>
        <span class="muted">
          {partial ? 'loading all events…' : `${fmtInt(events.length)} events`}{hasTree ? ` · ${tree.byId.size} spans` : ''} · {notes.anns.length} annotations
          {session && (
            <span class="trace-session">
              {' · session '}
              {sessionHref ? (
                <a class="session-link" href={sessionHref}>
                  {session}
                </a>
              ) : (
                session
              )}
            </span>
          )}
          {user && (
            <span class="trace-user">
              {' · user '}
              {userHref ? (
                <a class="user-link" href={userHref} title="this user's traces in the dataset">
                  {user}
                </a>
              ) : (
                user
              )}
            </span>
          )}
        </span>
        <span class="spacer" />
        <div class="tabs" role="tablist">
          {(['chat', 'tree', 'timeline'] as Tab[]).map((t) => (
            <button type="button" role="tab" aria-selected={nav.tab === t} class={`tab tab-${t} ${nav.tab === t ? 'on' : ''}`} disabled={t !== 'chat' && !hasTree} onClick={() => nav.setTab(t)}>
              {t === 'chat' ? 'Chat' : t === 'tree' ? 'Tree' : 'Timeline'}
            </button>
          ))}
        </div>
        <button type="button" class="small share" onClick={() => copyText(link).then((ok) => setCopied(ok ? 'link copied' : link))}>
          Copy link
        </button>
        {copied && <span class="muted copied">{copied}</span>}
      </div>
      <TraceSummary trace={trace} usage={usage} partial={partial} />
      <div class="trace-bar">
        <form
          class="searchbar"
          onSubmit={(e) => {
            e.preventDefault();
            setActiveQ(q.trim());
            nav.setCur(-1);
          }}
        >
          <input ref={searchBox} class="search-input" type="search" placeholder="Find in trace (press /)" value={q} onInput={(e) => setQ(e.currentTarget.value)} aria-label="find in trace" />
          <button type="submit">Find</button>
        </form>
        <div class="stepper">
          <button type="button" class="small" onClick={() => nav.step(-1)} title="previous highlight (p)">
            ◀
          </button>
          <span class="hl-count">{steps.length ? `${nav.cur >= 0 ? nav.cur + 1 : '–'} / ${steps.length}` : 'no highlights'}</span>
          <button type="button" class="small" onClick={() => nav.step(1)} title="next highlight (n)">
            ▶
          </button>
        </div>
        <span class="muted small keys">{onTree ? 'j/k ↑/↓ spans · Enter ←/→ open/close' : 'j/k events'} · n/p highlights · / find · [ ] traces</span>
      </div>
      {err && <p class="error">{err}</p>}
      <div class="trace-body">
        <div class="trace-main" onMouseUp={canWrite ? composer.onMouseUp : undefined} onClick={canWrite ? composer.onClick : undefined}>
          {nav.tab === 'chat' &&
            (events.length ? (
              <VirtualList
                class="chat"
                count={events.length}
                estimate={160}
                overscan={1200}
                handle={(h) => (list.current = h)}
                render={(i) => (
                  <EventCard
                    i={i}
                    e={events[i]}
                    hl={hl}
                    current={current}
                    focused={nav.focus === i}
                    raw={raw.has(i)}
                    callIndex={callIndex}
                    outputIndex={outputIndex}
                    notes={notes.byEvent.get(i) ?? noNotes}
                    me={meName}
                    canWrite={canWrite}
                    span={events[i].span_id ? cardSpans.get(events[i].span_id!) : undefined}
                    onSpan={openSpan}
                    onJump={nav.showEvent}
                    onToggleRaw={(k) =>
                      setRaw((old) => {
                        const s = new Set(old);
                        if (s.has(k)) s.delete(k);
                        else s.add(k);
                        return s;
                      })
                    }
                    onComment={(a) => composer.open(a)}
                    onRate={notes.rate}
                  />
                )}
              />
            ) : (
              <p class="empty">This trace has no events.</p>
            ))}
          {nav.tab === 'tree' && hasTree && <TreeView {...treeProps} />}
          {nav.tab === 'timeline' && hasTree && <TimelineView {...treeProps} />}
        </div>
        <aside class="trace-side">
          {nav.tab !== 'chat' && selSpan && (
            <SpanDetails
              span={selSpan}
              usage={spanU.get(selSpan.id) ?? noUsage}
              hl={hl}
              current={current}
              eventCount={events.filter((e) => e.span_id === selSpan.id).length}
              onEvents={() => {
                const n = events.findIndex((e) => e.span_id === selSpan.id);
                if (n >= 0) {
                  nav.setTab('chat');
                  nav.setFocus(n);
                  setTimeout(() => list.current?.scrollTo(n, 'start'), 0);
                }
              }}
            />
          )}
          {nav.tab !== 'chat' && !selSpan && <p class="muted">Click a span to see its inputs, outputs, value and attributes.</p>}
          <ScoresPanel
            traceId={id}
            listIds={mem && mem.ids.includes(id) ? mem.ids : null}
            onOpen={(n) => navigate(tracePath(n, mem?.q))}
            onScores={setScores}
            onDataset={setDsId}
            readOnly={!canWrite}
          />
          {canWrite && composer.target && (
            <div class="composer panel">
              <h4>
                Comment on <code class="composer-addr">{composer.target.address}</code>
              </h4>
              {composer.target.quote && <blockquote class="quote">{composer.target.quote.slice(0, 300)}</blockquote>}
              <textarea value={composer.draft} onInput={(e) => composer.setDraft(e.currentTarget.value)} rows={3} placeholder="Your comment" aria-label="comment" />
              <div class="row">
                <button type="button" class="primary save-comment" onClick={composer.save}>
                  Save
                </button>
                <button type="button" onClick={composer.close}>
                  Cancel
                </button>
              </div>
            </div>
          )}
          <AnnotationList notes={notes} me={meName} canWrite={canWrite} />
        </aside>
      </div>
      {canWrite && sel && (
        <button
          type="button"
          class="sel-comment primary"
          style={{ left: `${sel.x}px`, top: `${sel.y}px` }}
          onMouseDown={(e) => e.preventDefault()}
          onClick={() => composer.open(sel.address, sel.quote)}
        >
          Comment on selection
        </button>
      )}
    </div>
  );
}
