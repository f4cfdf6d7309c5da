import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { api, type Score } from '../lib/api';
import { tryParseAddress } from '../lib/address';
import { recallList, tracePath, neighbour } from '../lib/listmemory';
import { datasetPath, navigate } from '../lib/router';
import { sessionOf, sessionPath, userOf } from '../lib/session';
import { buildTree, treeKey } from '../lib/tree';
import type { Annotation, Me } from '../lib/types';
import { AnnotationList } from './AnnotationList';
import { copyText, fmtInt, NotFound } from './common';
import { EventCard } from './EventCard';
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
  const { trace, partial, refresh } = useTraceData(id, {
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
  // The dataset is looked up (once) when the page needs its owner (may the
  // reader write?) or its name (the session's link), and no list said.
  const inList = !!mem && mem.ids.includes(id);
  const session = sessionOf(trace?.metadata);
  useEffect(() => {
    if (!dsId || dsOwner || inList || !(meName || session)) return;
    api.dataset(dsId).then(
      (d) => {
        setDsOwner(d.owner);
        setDsName(d.name);
      },
      () => {},
    );
  }, [dsId, meName, session, inList]);
  const composer = useComposer(trace, notes.create);
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
  const treeProps = { tree, state: nav.treeState, setState: nav.setTreeState, selected: nav.selected, onSelect: nav.setSelected, scores: stepScores(scores) };
  return (
    <div class="trace">
      <div class="trace-head">
        <h2>
          {mem && mem.ids.includes(id) ? (
            <a href={datasetPath(mem.owner, mem.name) + (mem.q ? '?q=' + encodeURIComponent(mem.q) : '')}>{mem.name}</a>
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
          {user && <span class="trace-user">{` · user ${user}`}</span>}
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
