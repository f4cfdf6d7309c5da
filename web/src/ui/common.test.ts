import { describe, expect, test } from 'vitest';
import { fmtInt } from './common';

describe('fmtInt', () => {
  test('groups thousands as en-US does', () => {
    for (const n of [0, 7, 999, 1000, 12345, 100000, 1234567, -1234, 10000000]) expect(fmtInt(n)).toBe(n.toLocaleString('en-US'));
  });
  test('drops fractions', () => {
    expect(fmtInt(1234.9)).toBe('1,234');
  });
});
