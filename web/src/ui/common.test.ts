import { describe, expect, test } from 'vitest';
import { fmtInt, fmtPercent, scalarEntries } from './common';

describe('fmtInt', () => {
  test('groups thousands as en-US does', () => {
    for (const n of [0, 7, 999, 1000, 12345, 100000, 1234567, -1234, 10000000]) expect(fmtInt(n)).toBe(n.toLocaleString('en-US'));
  });
  test('drops fractions', () => {
    expect(fmtInt(1234.9)).toBe('1,234');
  });
});

describe('scalarEntries', () => {
  test('puts the benchmark metadata first and keeps the others in order, objects left out', () => {
    const meta = { a: 1, b: { deep: true }, c: 'x', d: null, e: 2, accuracy: 0.42, benchmark: 'airline', benchmark_version: 3 };
    expect(scalarEntries(meta).map(([k]) => k)).toEqual(['benchmark', 'benchmark_version', 'accuracy', 'a', 'c', 'd', 'e']);
    expect(scalarEntries(null)).toEqual([]);
  });
});

describe('fmtPercent', () => {
  test('one decimal', () => {
    expect(fmtPercent(0.42)).toBe('42%');
    expect(fmtPercent(0.42375)).toBe('42.4%');
    expect(fmtPercent(1)).toBe('100%');
  });
});
