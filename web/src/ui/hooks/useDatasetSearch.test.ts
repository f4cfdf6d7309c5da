import { describe, expect, test } from 'vitest';
import { parseQuery, type SearchBackend } from '../../lib/search';
import type { TraceSummary } from '../../lib/types';
import { byIndex, searches } from './useDatasetSearch';

const full: SearchBackend = { full: true, search: async () => {} };
const local: SearchBackend = { search: async () => {} };

describe('searches', () => {
  test('a full backend takes any text that is not blank', () => {
    expect(searches(full, 'bag', parseQuery('bag'))).toBe(true);
    expect(searches(full, '   ', parseQuery('   '))).toBe(false);
  });
  test('otherwise the query must ask for something and parse', () => {
    expect(searches(local, 'bag', parseQuery('bag'))).toBe(true);
    expect(searches(local, '', parseQuery(''))).toBe(false);
    const bad = parseQuery('meta:');
    if (bad.errors.length) expect(searches(local, 'meta:', bad)).toBe(false);
    expect(searches(full, 'meta:', bad)).toBe(true);
  });
});

describe('byIndex', () => {
  test('dataset order, leaving the input alone', () => {
    const h = (index: number) => ({ summary: { id: `t${index}`, index } as TraceSummary, hits: [] });
    const found = [h(5), h(1), h(3)];
    expect(byIndex(found).map((x) => x.summary.index)).toEqual([1, 3, 5]);
    expect(found.map((x) => x.summary.index)).toEqual([5, 1, 3]);
  });
});
