import { describe, expect, test } from 'vitest';
import { toggleColumn } from './useDataset';

describe('toggleColumn', () => {
  test('adds at the end in the order picked, removes in place', () => {
    expect(toggleColumn(['b'], 'a', true)).toEqual(['b', 'a']);
    expect(toggleColumn(['b', 'a', 'c'], 'a', false)).toEqual(['b', 'c']);
    expect(toggleColumn([], 'a', false)).toEqual([]);
  });
});
