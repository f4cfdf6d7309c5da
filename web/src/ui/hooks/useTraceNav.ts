import { useEffect, useRef, useState, type MutableRef } from 'preact/hooks';
import { tryParseAddress } from '../../lib/address';
import type { Highlight, HighlightIndex } from '../../lib/highlight';
import { initialState, reveal, type Expanded, type Tree } from '../../lib/tree';
import type { Trace } from '../../lib/types';
import type { VirtualHandle } from '../VirtualList';

export type Tab = 'chat' | 'tree' | 'timeline';

/** stepIndex is the highlight d steps from cur among n (n > 0), going round
 * at the ends; from no highlight (cur out of range) it starts at the first
 * going forward and at the last going back. */
export function stepIndex(cur: number, d: number, n: number): number {
  return cur < 0 || cur >= n ? (d > 0 ? 0 : n - 1) : (cur + d + n) % n;
}

/** moveIndex is the event d from the focused one among n (n > 0), held at
 * the ends. With none focused it steps from the first event in view
 * (firstVisible, asked only then): down lands on it, up on the one above. */
export function moveIndex(focus: number, firstVisible: () => number, d: number, n: number): number {
  const from = focus >= 0 ? focus : firstVisible() - (d > 0 ? 1 : 0);
  return Math.max(0, Math.min(n - 1, from + d));
}

export interface TraceNav {
  tab: Tab;
  setTab: (t: Tab) => void;
  /** The focused event, -1 for none. */
  focus: number;
  setFocus: (n: number) => void;
  /** The current highlight among steps, -1 for none. */
  cur: number;
  setCur: (n: number) => void;
  /** The selected span's id. */
  selected: string | null;
  setSelected: (id: string | null) => void;
  /** The tree's expanded spans. */
  treeState: Expanded;
  setTreeState: (s: Expanded) => void;
  /** showEvent focuses event n and scrolls it to the top of the chat. */
  showEvent: (n: number) => void;
  /** step goes to the next (d = 1) or previous (-1) highlight. */
  step: (d: number) => void;
  /** moveEvent focuses the next (d = 1) or previous (-1) event. */
  moveEvent: (d: number) => void;
}

/** useTraceNav is where the reader is in a trace: the tab, the focused
 * event, the current highlight, the selected span and the open part of the
 * tree. Jumps to a highlight bring its mark into view once it is rendered;
 * the page lands once on the first search hit of each query and on the
 * URL's address. */
export function useTraceNav(args: {
  trace: Trace | null;
  partial: boolean;
  tree: Tree;
  hl: HighlightIndex;
  steps: Highlight[];
  query: string;
  hash: string;
  list: MutableRef<VirtualHandle | null>;
}): TraceNav {
  const { trace, partial, tree, hl, steps, query, hash, list } = args;
  const [tab, setTab] = useState<Tab>('chat');
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
  const [selected, setSelected] = useState<string | null>(null);
  const [treeState, setTreeState] = useState<Expanded>(new Set());
  const pendingHl = useRef<string | null>(null);

  useEffect(() => setTreeState(initialState(tree, 2)), [tree]);

  const showEvent = (n: number) => {
    setFocus(n);
    list.current?.scrollTo(n, 'start');
  };
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
    if (!trace || !query || landedQ.current === query) return;
    const first = steps.findIndex((h) => h.kind === 'search');
    if (first >= 0) {
      landedQ.current = query;
      setCur(first);
      goToHighlight(steps[first]);
    }
  }, [trace, query, steps]);

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

  return {
    tab,
    setTab,
    focus,
    setFocus,
    cur,
    setCur,
    selected,
    setSelected,
    treeState,
    setTreeState,
    showEvent,
    step: (d) => {
      if (!steps.length) return;
      const n = stepIndex(curRef.current, d, steps.length);
      setCur(n);
      goToHighlight(steps[n]);
    },
    moveEvent: (d) => {
      const count = trace?.events.length ?? 0;
      if (!count) return;
      const n = moveIndex(focusRef.current, () => list.current?.first() ?? 0, d, count);
      setFocus(n);
      setTab('chat');
      list.current?.scrollTo(n, 'start');
    },
  };
}
