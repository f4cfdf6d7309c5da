// The span tree of a trace and its expand/collapse state. The state is an
// immutable set of expanded node ids; every operation returns a new one.
import type { Span } from './types';

export interface Node {
  span: Span;
  depth: number;
  children: Node[];
  parent: Node | null;
}

export interface Tree {
  roots: Node[];
  byId: Map<string, Node>;
}

/** buildTree links spans to their parents (a span whose parent is missing
 * becomes a root), keeping the input order among siblings. */
export function buildTree(spans: Span[]): Tree {
  const byId = new Map<string, Node>();
  for (const s of spans) if (!byId.has(s.id)) byId.set(s.id, { span: s, depth: 0, children: [], parent: null });
  const roots: Node[] = [];
  for (const n of byId.values()) {
    const p = n.span.parent_id ? byId.get(n.span.parent_id) : undefined;
    if (p && p !== n && !isAncestor(n, p)) {
      n.parent = p;
      p.children.push(n);
    } else roots.push(n);
  }
  const setDepth = (n: Node, d: number) => {
    n.depth = d;
    for (const c of n.children) setDepth(c, d + 1);
  };
  for (const r of roots) setDepth(r, 0);
  return { roots, byId };
}

function isAncestor(a: Node, b: Node): boolean {
  for (let x: Node | null = b; x; x = x.parent) if (x === a) return true;
  return false;
}

export type Expanded = ReadonlySet<string>;

/** initialState expands the nodes above the given depth. */
export function initialState(t: Tree, depth = 1): Expanded {
  const s = new Set<string>();
  const walk = (n: Node) => {
    if (n.depth < depth && n.children.length) s.add(n.span.id);
    n.children.forEach(walk);
  };
  t.roots.forEach(walk);
  return s;
}

export function toggle(s: Expanded, id: string): Expanded {
  const n = new Set(s);
  if (n.has(id)) n.delete(id);
  else n.add(id);
  return n;
}

function descendants(n: Node, f: (n: Node) => void) {
  f(n);
  n.children.forEach((c) => descendants(c, f));
}

export function expandBranch(t: Tree, s: Expanded, id: string): Expanded {
  const node = t.byId.get(id);
  if (!node) return s;
  const n = new Set(s);
  descendants(node, (x) => x.children.length && n.add(x.span.id));
  return n;
}

export function collapseBranch(t: Tree, s: Expanded, id: string): Expanded {
  const node = t.byId.get(id);
  if (!node) return s;
  const n = new Set(s);
  descendants(node, (x) => n.delete(x.span.id));
  return n;
}

export function expandAll(t: Tree): Expanded {
  const n = new Set<string>();
  for (const x of t.byId.values()) if (x.children.length) n.add(x.span.id);
  return n;
}

export function collapseAll(): Expanded {
  return new Set();
}

/** reveal expands every ancestor of id so that it is visible. */
export function reveal(t: Tree, s: Expanded, id: string): Expanded {
  const node = t.byId.get(id);
  if (!node) return s;
  const n = new Set(s);
  for (let p = node.parent; p; p = p.parent) n.add(p.span.id);
  return n;
}

/** visible lists the nodes shown, in order: roots and the children of
 * expanded nodes. */
export function visible(t: Tree, s: Expanded): Node[] {
  const out: Node[] = [];
  const walk = (n: Node) => {
    out.push(n);
    if (s.has(n.span.id)) n.children.forEach(walk);
  };
  t.roots.forEach(walk);
  return out;
}

/** spanTimes reads a span's start and end in milliseconds since the epoch. */
export function spanTimes(s: Span): [number, number] | null {
  if (!s.start_time || !s.end_time) return null;
  const a = Date.parse(s.start_time);
  const b = Date.parse(s.end_time);
  if (!Number.isFinite(a) || !Number.isFinite(b) || b < a) return null;
  return [a, b];
}

/** Times is each span's [start, end] in milliseconds; laidOut tells times
 * laid out from recorded latencies rather than read. */
export interface Times {
  of: Map<string, [number, number]>;
  laidOut: boolean;
}

/** layoutTimes gives the spans of a tree their times: their own when any
 * span has some; else, for spans that only record how long they took
 * (Snorkel steps: `latency`), times laid out from those latencies: a step
 * takes its latency, then its substeps start, one after another when its
 * execution is serial (or unset), together when parallel; roots follow
 * each other. Empty when there is neither. */
export function layoutTimes(t: Tree, latencyMs: (s: Span) => number | undefined): Times {
  const of = new Map<string, [number, number]>();
  for (const n of t.byId.values()) {
    const x = spanTimes(n.span);
    if (x) of.set(n.span.id, x);
  }
  if (of.size) return { of, laidOut: false };
  let any = false;
  for (const n of t.byId.values()) if (latencyMs(n.span) !== undefined) any = true;
  if (!any) return { of, laidOut: false };
  // place lays n out from start and returns when its subtree ends.
  const place = (n: Node, start: number, depth: number): number => {
    const own = Math.max(0, latencyMs(n.span) ?? 0);
    of.set(n.span.id, [start, start + own]);
    let end = start + own;
    let at = end;
    for (const c of depth < 200 ? n.children : []) {
      const e = place(c, n.span.execution === 'parallel' ? start + own : at, depth + 1);
      if (n.span.execution !== 'parallel') at = e;
      end = Math.max(end, e);
    }
    return end;
  };
  let at = 0;
  for (const r of t.roots) at = place(r, at, 0);
  return { of, laidOut: true };
}

export function fmtDuration(ms: number): string {
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}

/** treeKey is what a key does in the tree or timeline: j/k and the up and
 * down arrows move the selection among the visible rows (from none: the
 * first going down, the last going up), Enter opens or closes the selected
 * node, the right arrow opens it, the left arrow closes it or goes to its
 * parent. Null when the key changes nothing. */
export function treeKey(t: Tree, s: Expanded, selected: string | null, key: string): { selected?: string; state?: Expanded } | null {
  const rows = visible(t, s);
  if (!rows.length) return null;
  const at = selected === null ? -1 : rows.findIndex((n) => n.span.id === selected);
  const d = key === 'j' || key === 'ArrowDown' ? 1 : key === 'k' || key === 'ArrowUp' ? -1 : 0;
  if (d) {
    const n = at < 0 ? (d > 0 ? 0 : rows.length - 1) : Math.max(0, Math.min(rows.length - 1, at + d));
    return n === at ? null : { selected: rows[n].span.id };
  }
  if (at < 0) return null;
  const node = rows[at];
  const open = s.has(node.span.id);
  if (key === 'Enter') return node.children.length ? { state: toggle(s, node.span.id) } : null;
  if (key === 'ArrowRight') return node.children.length && !open ? { state: toggle(s, node.span.id) } : null;
  if (key === 'ArrowLeft') {
    if (node.children.length && open) return { state: toggle(s, node.span.id) };
    return node.parent ? { selected: node.parent.span.id } : null;
  }
  return null;
}
