import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';
import { fieldText } from '../lib/highlight';
import { tryParseAddress, unitsToCp } from '../lib/address';
import { api } from '../lib/api';
import { HighlightIndex, resolveHighlights, type Highlight, type HighlightInput } from '../lib/highlight';
import { datasetPath, navigate } from '../lib/router';
import { buildTree, initialState, reveal, type Expanded } from '../lib/tree';
import type { Annotation, Me, Trace } from '../lib/types';
import { copyText, fmtInt } from './common';
import type { ListMemory } from './DatasetPage';
import { EventCard } from './EventCard';
import { sourceOffset } from './Rich';
import { ScoresPanel } from './ScoresPanel';
import type { Score } from '../lib/api';
import { SpanDetails, TimelineView, TreeView } from './TreeView';
import { VirtualList, type VirtualHandle } from './VirtualList';

type Tab = 'chat' | 'tree' | 'timeline';

function listMemory(): ListMemory | null {
  try {
    return JSON.parse(sessionStorage.getItem('lookout.list') ?? 'null');
  } catch {
    return null;
  }
}

function isTyping(t: EventTarget | null): boolean {
  return t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement || (t instanceof HTMLElement && t.isContentEditable);
}

const noNotes: Annotation[] = [];

function rating(a: Annotation): number | undefined {
  const r = (a.extra as any)?.rating;
  return r === 1 || r === -1 ? r : undefined;
}

export function TracePage(props: { id: string; hash: string; search: string; me: Me | null }) {
  const { id, hash } = props;
  const [trace, setTrace] = useState<Trace | null>(null);
  const [anns, setAnns] = useState<Annotation[]>([]);
  const [err, setErr] = useState('');
  const [tab, setTab] = useState<Tab>('chat');
  const initialQ = new URLSearchParams(props.search).get('q') ?? '';
  const [q, setQ] = useState(initialQ);
  const [activeQ, setActiveQ] = useState(initialQ);
  // cur and focus are mirrored in refs so that keys pressed faster than
  // the page re-renders still step from the latest place.
  const [cur, setCurState] = useState(-1);
  const [focus, setFocusState] = useState(-1);
  const curRef = useRef(-1);
  const focusRef = useRef(-1);
  const setCur = (n: number) => {
    curRef.current = n;
    setCurState(n);
  };
  const setFocus = (n: number) => {
    focusRef.current = n;
    setFocusState(n);
  };
  const [raw, setRaw] = useState<ReadonlySet<number>>(new Set());
  const [composer, setComposer] = useState<{ address: string; quote: string } | null>(null);
  const [draft, setDraft] = useState('');
  const [editing, setEditing] = useState<{ id: string; text: string } | null>(null);
  const [selBtn, setSelBtn] = useState<{ x: number; y: number; address: string; quote: string } | null>(null);
  const [selected, setSelected] = useState<string | null>(null);
  const [treeState, setTreeState] = useState<Expanded>(new Set());
  const [copied, setCopied] = useState('');
  const [scores, setScores] = useState<Score[]>([]);
  const list = useRef<VirtualHandle | null>(null);
  const chatBox = useRef<HTMLDivElement>(null);
  const searchBox = useRef<HTMLInputElement>(null);
  const pendingHl = useRef<string | null>(null);
  const mem = useMemo(listMemory, [id]);
  const meName = props.me?.user?.name ?? null;

  const loadAnns = () => api.annotations(id).then(setAnns, (e) => setErr(e.message));
  // The first events come in a small answer of their own and show first;
  // the whole trace (a 10,000-event trace is megabytes) is asked for once
  // they are on screen, since its arrival holds the page's thread up. The
  // page is "partial" until it is in.
  const [partial, setPartial] = useState(false);
  useEffect(() => {
    performance.mark('lookout:trace-fetch');
    const loadFull = () =>
      api.trace(id).then(
        (t) => {
          performance.mark('lookout:trace-loaded');
          setTrace(t);
          setPartial(false);
          if (!(t.events ?? []).length && (t.spans ?? []).length) setTab('tree');
        },
        (e) => setErr(e.message),
      );
    api.openHead(id).then(
      (h) => {
        if (!h.events.length) return loadFull();
        setTrace({ id: h.id, name: h.name, index: h.index, events: h.events });
        setPartial(true);
        requestAnimationFrame(() => setTimeout(loadFull, 0));
      },
      loadFull, // the whole trace answers, or reports the error
    );
    loadAnns();
  }, [id]);

  // A trace that grows while its agent runs (spans over OpenTelemetry,
  // appended events, new annotations) is fetched again when the server says
  // it changed, at most every 300 ms. The stream is open only while the tab
  // is visible: browsers allow few connections per server over HTTP/1.1,
  // and background tabs must not take them all.
  useEffect(() => {
    if (typeof EventSource === 'undefined') return;
    let es: EventSource | null = null;
    let timer = 0;
    let busy = false;
    const refresh = () => {
      if (busy) return void (timer = window.setTimeout(refresh, 300));
      busy = true;
      Promise.all([api.trace(id).then(setTrace), loadAnns()])
        .catch((e) => setErr(e.message))
        .finally(() => (busy = false));
    };
    const later = () => {
      clearTimeout(timer);
      timer = window.setTimeout(refresh, 300);
    };
    const open = () => {
      es = new EventSource(`/api/v1/traces/${encodeURIComponent(id)}/live`);
      es.addEventListener('changed', later);
    };
    const onVisibility = () => {
      if (document.hidden) {
        es?.close();
        es = null;
      } else if (!es) {
        open();
        later(); // what changed while hidden
      }
    };
    if (!document.hidden) open();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      clearTimeout(timer);
      es?.close();
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [id]);

  const tree = useMemo(() => buildTree(trace?.spans ?? []), [trace]);
  useEffect(() => setTreeState(initialState(tree, 2)), [tree]);

  const { callIndex, outputIndex, notesByEvent } = useMemo(() => {
    const callIndex = new Map<string, { event: number; call: number }>();
    const outputIndex = new Map<string, number>();
    (trace?.events ?? []).forEach((e, i) => {
      (e.tool_calls ?? []).forEach((c, k) => c?.id && !callIndex.has(c.id) && callIndex.set(c.id, { event: i, call: k }));
      if (e.tool_call_id && !outputIndex.has(e.tool_call_id)) outputIndex.set(e.tool_call_id, i);
    });
    const notesByEvent = new Map<number, Annotation[]>();
    for (const a of anns) {
      const ad = tryParseAddress(a.address);
      if (!ad || ad.root !== 'messages') continue;
      let l = notesByEvent.get(ad.event);
      if (!l) notesByEvent.set(ad.event, (l = []));
      l.push(a);
    }
    return { callIndex, outputIndex, notesByEvent };
  }, [trace, anns]);

  // Where the query's texts are: the server's search hits for this trace
  // (the same language and matching as the dataset search), asked again
  // when the query changes or the trace grows.
  const [searchHits, setSearchHits] = useState<HighlightInput[]>([]);
  const eventCount = trace?.events.length ?? 0;
  useEffect(() => {
    if (!activeQ.trim() || !eventCount) {
      setSearchHits([]);
      return;
    }
    let live = true;
    api.hits(id, activeQ).then(
      (hs) => live && setSearchHits(hs.map((address, k) => ({ id: `search-${k}`, kind: 'search' as const, address, message: `search: ${activeQ}` }))),
      () => live && setSearchHits([]),
    );
    return () => {
      live = false;
    };
  }, [id, activeQ, eventCount]);

  const hl = useMemo(() => {
    if (!trace) return new HighlightIndex([]);
    const inputs: HighlightInput[] = [];
    for (const a of anns) {
      if (rating(a) !== undefined && !a.content) continue;
      inputs.push({ id: a.id, kind: a.source === 'analyzer' ? 'analyzer' : 'annotation', address: a.address, message: `${a.source === 'analyzer' ? 'violation' : a.author ?? a.source}: ${a.content}` });
    }
    inputs.push(...searchHits);
    if (hash && tryParseAddress(hash)) inputs.push({ id: 'target', kind: 'target', address: hash, message: `linked: ${hash}` });
    return new HighlightIndex(resolveHighlights(trace, inputs));
  }, [trace, anns, searchHits, hash]);
  const steps = useMemo(() => hl.all.filter((h) => h.kind !== 'target'), [hl]);
  const current = cur >= 0 && cur < steps.length ? steps[cur].id : null;

  const goToHighlight = (h: Highlight) => {
    if (h.event >= 0) {
      setTab('chat');
      setFocus(h.event);
      pendingHl.current = h.id;
      list.current?.scrollTo(h.event, 'start');
    } else {
      setTab('tree');
      setSelected(h.span);
      setTreeState((s) => reveal(tree, s, h.span));
      pendingHl.current = h.id;
    }
  };
  // After a jump, bring the exact mark into view once it is rendered.
  useEffect(() => {
    const want = pendingHl.current;
    if (!want) return;
    let tries = 0;
    const tick = () => {
      const el = document.querySelector(`[data-hl~="${CSS.escape(want)}"]`);
      if (el) {
        el.scrollIntoView({ block: 'center' });
        pendingHl.current = null;
      } else if (tries++ < 30) requestAnimationFrame(tick);
      else pendingHl.current = null;
    };
    requestAnimationFrame(tick);
  });

  // Search hits: land on the first one, once per query (a live trace that
  // grows does not pull the reader back).
  const landedQ = useRef('');
  useEffect(() => {
    if (!trace || !activeQ || landedQ.current === activeQ) return;
    const first = steps.findIndex((h) => h.kind === 'search');
    if (first >= 0) {
      landedQ.current = activeQ;
      setCur(first);
      goToHighlight(steps[first]);
    }
  }, [trace, activeQ, steps]);

  // The URL's address: scroll to it and mark it, once it is loaded.
  const landedHash = useRef('');
  useEffect(() => {
    if (!trace || !hash || landedHash.current === hash) return;
    const a = tryParseAddress(hash);
    if (!a) return;
    const t = hl.all.find((h) => h.id === 'target');
    if (a.root === 'messages' ? a.event < (trace.events ?? []).length && !partial : !partial) landedHash.current = hash;
    if (a.root === 'messages') {
      setTab('chat');
      setFocus(a.event);
      if (t && t.start !== undefined) pendingHl.current = 'target';
      list.current?.scrollTo(a.event, 'start');
    } else {
      setTab('tree');
      setSelected(a.span);
      setTreeState((s) => reveal(tree, s, a.span));
    }
  }, [trace, hash]);

  // Paint marks for the benchmark (web/bench): the first event on screen,
  // then everything loaded and idle.
  useLayoutEffect(() => {
    if (!trace) return;
    requestAnimationFrame(() => {
      if (!performance.getEntriesByName('lookout:first-event').length && document.querySelector('.card')) performance.mark('lookout:first-event');
      if (partial) return;
      setTimeout(() => {
        if (!performance.getEntriesByName('lookout:interactive').length) {
          performance.mark('lookout:interactive');
          document.documentElement.dataset.ready = '1';
        }
      }, 0);
    });
  }, [trace, partial]);

  const step = (d: number) => {
    if (!steps.length) return;
    const c = curRef.current;
    const n = c < 0 || c >= steps.length ? (d > 0 ? 0 : steps.length - 1) : (c + d + steps.length) % steps.length;
    setCur(n);
    goToHighlight(steps[n]);
  };
  const moveEvent = (d: number) => {
    if (!trace?.events.length) return;
    const f = focusRef.current;
    const from = f >= 0 ? f : (list.current?.first() ?? 0) - (d > 0 ? 1 : 0);
    const n = Math.max(0, Math.min(trace.events.length - 1, from + d));
    setFocus(n);
    setTab('chat');
    list.current?.scrollTo(n, 'start');
  };
  const otherTrace = (d: number) => {
    if (!mem) return;
    // From the trace in the address bar, not this page's: keys pressed
    // faster than pages change step on from the latest one.
    const m = /^\/traces\/([^/]+)$/.exec(location.pathname);
    const k = mem.ids.indexOf(m ? decodeURIComponent(m[1]) : id);
    const n = mem.ids[k + d];
    if (k >= 0 && n) navigate(`/traces/${encodeURIComponent(n)}${mem.q ? '?q=' + encodeURIComponent(mem.q) : ''}`);
  };

  // A layout effect, so that the listener of the next trace page is in
  // place in the same commit that removes this one's: a key pressed while
  // pages change is not lost.
  useLayoutEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target)) {
        if (e.key === 'Escape' && e.target instanceof HTMLElement) e.target.blur();
        return;
      }
      switch (e.key) {
        case 'j':
          moveEvent(1);
          break;
        case 'k':
          moveEvent(-1);
          break;
        case 'n':
          step(1);
          break;
        case 'p':
          step(-1);
          break;
        case '/':
          searchBox.current?.focus();
          break;
        case '[':
          otherTrace(-1);
          break;
        case ']':
          otherTrace(1);
          break;
        default:
          return;
      }
      e.preventDefault();
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  });

  // A text selection inside one field offers a comment on that range.
  const onMouseUp = () => {
    const s = getSelection();
    if (!s || s.isCollapsed || !s.anchorNode || !s.focusNode || !trace) return setSelBtn(null);
    const a = sourceOffset(s.anchorNode, s.anchorOffset);
    const b = sourceOffset(s.focusNode, s.focusOffset);
    const fa = a?.at.closest<HTMLElement>('[data-f]');
    const fb = b?.at.closest<HTMLElement>('[data-f]');
    if (!a || !b || !fa || fa !== fb) return setSelBtn(null);
    const [ua, ub] = [a.o, b.o];
    const [u0, u1] = ua <= ub ? [ua, ub] : [ub, ua];
    const f = fa.dataset.f!;
    const addr = tryParseAddress(f);
    const text = addr ? fieldText(trace, addr) : undefined;
    if (text === undefined || u1 <= u0) return setSelBtn(null);
    const r = s.getRangeAt(0).getBoundingClientRect();
    // Below the selection, or above it when that would leave the window.
    const y = r.bottom + 40 < innerHeight ? r.bottom + 6 : Math.max(4, r.top - 36);
    const x = Math.min(Math.max(r.left + r.width / 2, 110), innerWidth - 110);
    setSelBtn({ x, y, address: `${f}:${unitsToCp(text, u0)}-${unitsToCp(text, u1)}`, quote: text.slice(u0, u1) });
  };
  // A click on a line number (raw view) comments on that line.
  const onClick = (e: MouseEvent) => {
    const ln = (e.target as Element).closest?.<HTMLElement>('button.ln');
    if (!ln || !trace) return;
    const f = ln.closest<HTMLElement>('[data-f]')?.dataset.f;
    if (!f) return;
    const n = Number(ln.dataset.line);
    const addr = tryParseAddress(f);
    const text = addr ? (fieldText(trace, addr) ?? '') : '';
    openComposer(`${f}:L${n}`, text.split('\n')[n] ?? '');
  };
  const openComposer = (address: string, quote = '') => {
    setComposer({ address, quote });
    setDraft('');
    setSelBtn(null);
    setTimeout(() => document.querySelector<HTMLTextAreaElement>('.composer textarea')?.focus(), 0);
  };
  const saveComment = async () => {
    if (!composer) return;
    try {
      await api.createAnnotation(id, { address: composer.address, content: draft });
      setComposer(null);
      setDraft('');
      loadAnns();
    } catch (e) {
      setErr((e as Error).message);
    }
  };
  const annsRef = useRef(anns);
  annsRef.current = anns;
  const rate = async (i: number, r: 1 | -1) => {
    const mine = annsRef.current.find((a) => a.address === `messages.${i}` && rating(a) !== undefined && a.author === meName);
    try {
      if (mine && rating(mine) === r) await api.deleteAnnotation(id, mine.id);
      else if (mine) await api.updateAnnotation(id, mine.id, { extra: { rating: r } });
      else await api.createAnnotation(id, { address: `messages.${i}`, content: '', extra: { rating: r } });
      loadAnns();
    } catch (e) {
      setErr((e as Error).message);
    }
  };

  if (err && !trace) return <p class="error">{err}</p>;
  if (!trace) return <p class="muted">Loading trace…</p>;
  const events = trace.events ?? [];
  const hasTree = (trace.spans ?? []).length > 0;
  const selSpan = selected ? tree.byId.get(selected)?.span : undefined;
  const sortedAnns = anns
    .map((a) => ({ a, ad: tryParseAddress(a.address) }))
    .sort((x, y) => (x.ad?.event ?? 1e9) - (y.ad?.event ?? 1e9) || x.a.created_at.localeCompare(y.a.created_at));
  const link = `${location.origin}/traces/${encodeURIComponent(id)}${hash ? '#' + hash : ''}`;
  // Step statuses for the tree: the current scores on each span.
  const stepScores = new Map<string, Score[]>();
  for (const sc of scores) {
    const ad = sc.current && sc.address ? tryParseAddress(sc.address) : null;
    if (ad && ad.root === 'spans') stepScores.set(ad.span, [...(stepScores.get(ad.span) ?? []), sc]);
  }
  const treeProps = { tree, state: treeState, setState: setTreeState, selected, onSelect: setSelected, scores: stepScores };
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
          {partial ? 'loading all events…' : `${fmtInt(events.length)} events`}{hasTree ? ` · ${tree.byId.size} spans` : ''} · {anns.length} annotations
        </span>
        <span class="spacer" />
        <div class="tabs" role="tablist">
          {(['chat', 'tree', 'timeline'] as Tab[]).map((t) => (
            <button type="button" role="tab" aria-selected={tab === t} class={`tab tab-${t} ${tab === t ? 'on' : ''}`} disabled={t !== 'chat' && !hasTree} onClick={() => setTab(t)}>
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
            setCur(-1);
          }}
        >
          <input ref={searchBox} class="search-input" type="search" placeholder="Find in trace (press /)" value={q} onInput={(e) => setQ(e.currentTarget.value)} aria-label="find in trace" />
          <button type="submit">Find</button>
        </form>
        <div class="stepper">
          <button type="button" class="small" onClick={() => step(-1)} title="previous highlight (p)">
            ◀
          </button>
          <span class="hl-count">{steps.length ? `${cur >= 0 ? cur + 1 : '–'} / ${steps.length}` : 'no highlights'}</span>
          <button type="button" class="small" onClick={() => step(1)} title="next highlight (n)">
            ▶
          </button>
        </div>
        <span class="muted small keys">j/k events · n/p highlights · / find · [ ] traces</span>
      </div>
      {err && <p class="error">{err}</p>}
      <div class="trace-body">
        <div class="trace-main" ref={chatBox} onMouseUp={onMouseUp} onClick={onClick}>
          {tab === 'chat' &&
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
                    focused={focus === i}
                    raw={raw.has(i)}
                    callIndex={callIndex}
                    outputIndex={outputIndex}
                    notes={notesByEvent.get(i) ?? noNotes}
                    me={meName}
                    onJump={(n) => {
                      setFocus(n);
                      list.current?.scrollTo(n, 'start');
                    }}
                    onToggleRaw={(k) =>
                      setRaw((old) => {
                        const s = new Set(old);
                        if (s.has(k)) s.delete(k);
                        else s.add(k);
                        return s;
                      })
                    }
                    onComment={(a) => openComposer(a)}
                    onRate={rate}
                  />
                )}
              />
            ) : (
              <p class="empty">This trace has no events.</p>
            ))}
          {tab === 'tree' && hasTree && <TreeView {...treeProps} />}
          {tab === 'timeline' && hasTree && <TimelineView {...treeProps} />}
        </div>
        <aside class="trace-side">
          {tab !== 'chat' && selSpan && (
            <SpanDetails
              span={selSpan}
              hl={hl}
              current={current}
              eventCount={events.filter((e) => e.span_id === selSpan.id).length}
              onEvents={() => {
                const n = events.findIndex((e) => e.span_id === selSpan.id);
                if (n >= 0) {
                  setTab('chat');
                  setFocus(n);
                  setTimeout(() => list.current?.scrollTo(n, 'start'), 0);
                }
              }}
            />
          )}
          {tab !== 'chat' && !selSpan && <p class="muted">Click a span to see its inputs, outputs, value and attributes.</p>}
          <ScoresPanel
            traceId={id}
            listIds={mem && mem.ids.includes(id) ? mem.ids : null}
            onOpen={(n) => navigate(`/traces/${encodeURIComponent(n)}${mem?.q ? '?q=' + encodeURIComponent(mem.q) : ''}`)}
            onScores={setScores}
          />
          {composer && (
            <div class="composer panel">
              <h4>
                Comment on <code class="composer-addr">{composer.address}</code>
              </h4>
              {composer.quote && <blockquote class="quote">{composer.quote.slice(0, 300)}</blockquote>}
              <textarea value={draft} onInput={(e) => setDraft(e.currentTarget.value)} rows={3} placeholder="Your comment" aria-label="comment" />
              <div class="row">
                <button type="button" class="primary save-comment" onClick={saveComment}>
                  Save
                </button>
                <button type="button" onClick={() => setComposer(null)}>
                  Cancel
                </button>
              </div>
            </div>
          )}
          <div class="annotations">
            <h4>Annotations ({anns.length})</h4>
            {sortedAnns.length === 0 && <p class="muted small">Select text, click a line number in the Lines view, or use Comment on an event.</p>}
            {sortedAnns.map(({ a }) => {
              const own = !!meName && a.author === meName && a.source !== 'analyzer';
              const r = rating(a);
              return (
                <div class={`ann ann-${a.source === 'analyzer' ? 'analyzer' : 'user'}`} data-ann={a.id}>
                  <div class="ann-head">
                    <a href={`#${a.address}`} class="ann-addr">
                      {a.address}
                    </a>
                    <span class="badge">{a.source}</span>
                    {a.author && <span class="muted small">{a.author}</span>}
                    {r !== undefined && <span class="rating">{r > 0 ? '▲ thumbs up' : '▼ thumbs down'}</span>}
                  </div>
                  {editing?.id === a.id ? (
                    <div>
                      <textarea value={editing.text} onInput={(e) => setEditing({ id: a.id, text: e.currentTarget.value })} rows={3} aria-label="edit comment" />
                      <div class="row">
                        <button
                          type="button"
                          class="small primary"
                          onClick={() => api.updateAnnotation(id, a.id, { content: editing.text }).then(() => (setEditing(null), loadAnns()), (e) => setErr(e.message))}
                        >
                          Save
                        </button>
                        <button type="button" class="small" onClick={() => setEditing(null)}>
                          Cancel
                        </button>
                      </div>
                    </div>
                  ) : (
                    a.content && <div class="ann-content">{a.content}</div>
                  )}
                  {own && editing?.id !== a.id && (
                    <div class="row">
                      <button type="button" class="link small edit" onClick={() => setEditing({ id: a.id, text: a.content })}>
                        edit
                      </button>
                      <button type="button" class="link small delete" onClick={() => api.deleteAnnotation(id, a.id).then(loadAnns, (e) => setErr(e.message))}>
                        delete
                      </button>
                    </div>
                  )}
                </div>
              );
            })}
          </div>
        </aside>
      </div>
      {selBtn && (
        <button
          type="button"
          class="sel-comment primary"
          style={{ left: `${selBtn.x}px`, top: `${selBtn.y}px` }}
          onMouseDown={(e) => e.preventDefault()}
          onClick={() => openComposer(selBtn.address, selBtn.quote)}
        >
          Comment on selection
        </button>
      )}
    </div>
  );
}
