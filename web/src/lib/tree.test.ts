import { describe, expect, it } from 'vitest';
import { buildTree, collapseAll, collapseBranch, expandAll, expandBranch, initialState, reveal, layoutTimes, spanTimes, toggle, treeKey, visible } from './tree';
import type { Span } from './types';

const spans: Span[] = [
  { id: 'r', name: 'root' },
  { id: 'a', parent_id: 'r', name: 'a' },
  { id: 'a1', parent_id: 'a', name: 'a1' },
  { id: 'a1x', parent_id: 'a1', name: 'a1x' },
  { id: 'b', parent_id: 'r', name: 'b' },
  { id: 'orphan', parent_id: 'missing', name: 'orphan' },
  { id: 'loop1', parent_id: 'loop2' },
  { id: 'loop2', parent_id: 'loop1' },
];
const names = (t: ReturnType<typeof buildTree>, s: ReadonlySet<string>) => visible(t, s).map((n) => n.span.id);

describe('tree expand/collapse state', () => {
  const t = buildTree(spans);
  it('builds the tree; orphans become roots and a cycle is cut', () => {
    expect(t.roots.map((n) => n.span.id)).toEqual(['r', 'orphan', 'loop2']);
    expect(t.byId.get('loop1')!.parent!.span.id).toBe('loop2');
    expect(t.byId.get('a1x')!.depth).toBe(3);
  });
  it('starts expanded to a depth', () => {
    expect(names(t, initialState(t, 1))).toEqual(['r', 'a', 'b', 'orphan', 'loop2', 'loop1']);
    expect(names(t, initialState(t, 0))).toEqual(['r', 'orphan', 'loop2']);
  });
  it('toggles one node', () => {
    let s = initialState(t, 1);
    s = toggle(s, 'a');
    expect(names(t, s)).toEqual(['r', 'a', 'a1', 'b', 'orphan', 'loop2', 'loop1']);
    s = toggle(s, 'a');
    expect(names(t, s)).toEqual(['r', 'a', 'b', 'orphan', 'loop2', 'loop1']);
    s = toggle(s, 'r');
    expect(names(t, s)).toEqual(['r', 'orphan', 'loop2', 'loop1']);
  });
  it('expands and collapses a branch', () => {
    let s = expandBranch(t, initialState(t, 1), 'a');
    expect(names(t, s)).toEqual(['r', 'a', 'a1', 'a1x', 'b', 'orphan', 'loop2', 'loop1']);
    s = collapseBranch(t, s, 'a');
    expect(names(t, s)).toEqual(['r', 'a', 'b', 'orphan', 'loop2', 'loop1']);
    // Re-opening a collapsed branch one level does not bring back its inner levels.
    expect(names(t, toggle(s, 'a'))).toEqual(['r', 'a', 'a1', 'b', 'orphan', 'loop2', 'loop1']);
  });
  it('expands and collapses all', () => {
    expect(names(t, expandAll(t))).toEqual(['r', 'a', 'a1', 'a1x', 'b', 'orphan', 'loop2', 'loop1']);
    expect(names(t, collapseAll())).toEqual(['r', 'orphan', 'loop2']);
  });
  it('reveals a deep node', () => {
    expect(names(t, reveal(t, collapseAll(), 'a1x'))).toEqual(['r', 'a', 'a1', 'a1x', 'b', 'orphan', 'loop2']);
  });
  it('never mutates the state it is given', () => {
    const s = initialState(t, 1);
    const before = [...s];
    toggle(s, 'a');
    expandBranch(t, s, 'r');
    collapseBranch(t, s, 'r');
    expect([...s]).toEqual(before);
  });
});

describe('span facts', () => {
  it('reads times', () => {
    expect(spanTimes({ id: 'x', start_time: '2024-01-01T00:00:00Z', end_time: '2024-01-01T00:00:01.5Z' })).toEqual([1704067200000, 1704067201500]);
    expect(spanTimes({ id: 'x', start_time: '2024-01-01T00:00:02Z', end_time: '2024-01-01T00:00:01Z' })).toBeNull();
  });
  it('lays out spans with latencies and no times: a step, then its substeps', () => {
    const lat = (s: { attributes?: Record<string, unknown> }) => (typeof s.attributes?.latency === 'number' ? s.attributes.latency * 1000 : undefined);
    const t = buildTree([
      { id: 'r', attributes: { latency: 0.1 } },
      { id: 'a', parent_id: 'r', attributes: { latency: 0.2 } },
      { id: 'b', parent_id: 'r', attributes: { latency: 0.3 } },
      { id: 'p', attributes: { latency: 0.05 }, execution: 'parallel' },
      { id: 'p1', parent_id: 'p', attributes: { latency: 0.2 } },
      { id: 'p2', parent_id: 'p', attributes: { latency: 0.1 } },
    ]);
    const { of, laidOut } = layoutTimes(t, lat);
    expect(laidOut).toBe(true);
    const ms = (id: string) => of.get(id)!.map((x) => Math.round(x));
    expect([ms('r'), ms('a'), ms('b')]).toEqual([[0, 100], [100, 300], [300, 600]]);
    expect([ms('p'), ms('p1'), ms('p2')]).toEqual([[600, 650], [650, 850], [650, 750]]);
    // Spans with times keep theirs; with neither, there is no timeline.
    const timed = buildTree([{ id: 'x', start_time: '2024-01-01T00:00:00Z', end_time: '2024-01-01T00:00:01Z', attributes: { latency: 5 } }]);
    expect(layoutTimes(timed, lat)).toEqual({ of: new Map([['x', [1704067200000, 1704067201000]]]), laidOut: false });
    expect(layoutTimes(buildTree([{ id: 'y' }]), lat).of.size).toBe(0);
  });
});

describe('treeKey', () => {
  const t = buildTree(spans);
  const s = initialState(t, 1); // r, a, b, orphan, loop2, loop1 visible
  it('moves the selection among visible rows, held at the ends', () => {
    expect(treeKey(t, s, null, 'j')).toEqual({ selected: 'r' });
    expect(treeKey(t, s, null, 'ArrowUp')).toEqual({ selected: 'loop1' });
    expect(treeKey(t, s, 'a', 'ArrowDown')).toEqual({ selected: 'b' });
    expect(treeKey(t, s, 'a', 'k')).toEqual({ selected: 'r' });
    expect(treeKey(t, s, 'r', 'k')).toBeNull();
    expect(treeKey(t, s, 'loop1', 'j')).toBeNull();
  });
  it('Enter and the right arrow open a node, the left arrow closes it, then goes to the parent', () => {
    const opened = treeKey(t, s, 'a', 'Enter')!.state!;
    expect(names(t, opened)).toContain('a1');
    expect(treeKey(t, opened, 'a', 'ArrowRight')).toBeNull();
    expect(names(t, treeKey(t, s, 'a', 'ArrowRight')!.state!)).toContain('a1');
    expect(names(t, treeKey(t, opened, 'a', 'ArrowLeft')!.state!)).not.toContain('a1');
    expect(treeKey(t, s, 'a', 'ArrowLeft')).toEqual({ selected: 'r' });
    expect(treeKey(t, s, 'b', 'Enter')).toBeNull(); // a leaf
    expect(treeKey(t, s, null, 'Enter')).toBeNull();
  });
});
