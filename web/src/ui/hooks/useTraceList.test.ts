import { describe, expect, test } from 'vitest';
import type { TraceSummary } from '../../lib/types';
import { metaKeys, pagesToLoad } from './useTraceList';

describe('pagesToLoad', () => {
  const rows = (n: number, have: number[]) => {
    const r: (number | undefined)[] = new Array(n);
    for (const i of have) r[i] = i;
    return r;
  };
  test('the pages the range falls in that miss rows', () => {
    expect(pagesToLoad(0, 9, rows(30, []), new Set(), 10)).toEqual([0]);
    expect(pagesToLoad(5, 25, rows(30, []), new Set(), 10)).toEqual([0, 1, 2]);
  });
  test('not pages being loaded nor pages already full', () => {
    const full = rows(30, [10, 11, 12, 13, 14, 15, 16, 17, 18, 19]);
    expect(pagesToLoad(0, 29, full, new Set([0]), 10)).toEqual([2]);
  });
  test('a page partly filled is asked again; the last page is as long as the list', () => {
    expect(pagesToLoad(0, 29, rows(25, [10, 11, 12, 13, 14, 15, 16, 17, 18, 20, 21, 22, 23, 24]), new Set([0]), 10)).toEqual([1]);
    expect(pagesToLoad(20, 29, rows(25, [20, 21, 22, 23, 24]), new Set(), 10)).toEqual([]);
  });
});

describe('metaKeys', () => {
  test('the keys of the rows loaded, sorted and once each', () => {
    const s = (metadata?: Record<string, unknown>) => ({ summary: { id: 'x', index: 0, metadata } as TraceSummary, hits: [] });
    const rows = [s({ b: 1, a: 2 }), undefined, s(), s({ c: 3, a: 4 })];
    expect(metaKeys(rows.length, (i) => rows[i])).toEqual(['a', 'b', 'c']);
    expect(metaKeys(0, () => s({ z: 1 }))).toEqual([]);
  });
});
