import { describe, expect, test } from 'vitest';
import type { Trace, TraceSummary } from '../../lib/types';
import { detailsOf, metaKeys, pagesToLoad, snippetOf } from './useTraceList';

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

describe('detailsOf', () => {
  test('the first user message and the analyzer annotations', () => {
    const t = {
      id: 't',
      events: [
        { role: 'system', content: 'be nice' },
        { role: 'user', content: 'x'.repeat(300) },
        { role: 'user', content: 'second' },
      ],
      annotations: [
        { address: 'messages.1', content: 'v', source: 'analyzer' },
        { address: 'messages.1', content: 'note', source: 'user' },
        { address: 'messages.2', content: 'v2', source: 'analyzer' },
      ],
    } as unknown as Trace;
    expect(detailsOf(t)).toEqual({ firstUser: 'x'.repeat(200), violations: 2 });
    expect(detailsOf({ id: 'u', events: [{ role: 'assistant', content: 'hi' }] } as Trace)).toEqual({ firstUser: '', violations: 0 });
  });
});

describe('snippetOf', () => {
  const t = { id: 't', events: [{ role: 'user', content: 'where is 😀 my bag? ' + 'y'.repeat(100) }] } as Trace;
  test('the match with up to 40 units before and 60 after', () => {
    expect(snippetOf(t, { id: 'h', kind: 'search', address: 'messages.0.content:11-17', message: '' })).toEqual({ before: 'where is 😀 ', match: 'my bag', after: '? ' + 'y'.repeat(58) });
  });
  test('none without a range or a text there', () => {
    expect(snippetOf(t, { id: 'h', kind: 'search', address: 'messages.0', message: '' })).toBeUndefined();
    expect(snippetOf(t, { id: 'h', kind: 'search', address: 'messages.5.content:0-2', message: '' })).toBeUndefined();
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
