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

/** spanTokens finds a token count in a span's attributes or metadata. */
export function spanTokens(s: Span): number | null {
  let best: number | null = null;
  const visit = (v: unknown, key: string, depth: number) => {
    if (depth > 4 || best !== null) return;
    if (typeof v === 'string' && /^[{[]/.test(v) && v.length < 20000) {
      try {
        v = JSON.parse(v);
      } catch {
        /* not JSON */
      }
    }
    if (typeof v === 'number' && /(^|[._])(total_?tokens|tokens|token_count\.total|totaltokens)$/i.test(key)) {
      best = v;
      return;
    }
    if (v && typeof v === 'object') for (const [k, x] of Object.entries(v)) visit(x, key ? key + '.' + k : k, depth + 1);
  };
  visit(s.attributes, '', 0);
  visit(s.metadata, '', 0);
  return best;
}

export function fmtDuration(ms: number): string {
  if (ms < 1) return `${ms.toFixed(2)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60000) return `${(ms / 1000).toFixed(2)} s`;
  return `${Math.floor(ms / 60000)} min ${Math.round((ms % 60000) / 1000)} s`;
}
