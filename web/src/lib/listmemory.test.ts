import { describe, expect, test } from 'vitest';
import { neighbour, recallList, tracePath, type ListMemory } from './listmemory';

const m: ListMemory = { datasetId: 'd', owner: 'o', name: 'n', ids: ['a', 'b', 'c'], q: '' };

describe('neighbour', () => {
  test('the next and previous traces of the list', () => {
    expect(neighbour(m, 'b', 1)).toBe('c');
    expect(neighbour(m, 'b', -1)).toBe('a');
  });
  test('nothing past either end, nor for a trace not in the list', () => {
    expect(neighbour(m, 'c', 1)).toBeUndefined();
    expect(neighbour(m, 'a', -1)).toBeUndefined();
    expect(neighbour(m, 'z', 1)).toBeUndefined();
    expect(neighbour(m, 'z', -1)).toBeUndefined();
  });
});

describe('tracePath', () => {
  test('escapes the id and carries the query', () => {
    expect(tracePath('a/b c', '')).toBe('/traces/a%2Fb%20c');
    expect(tracePath('t1', undefined)).toBe('/traces/t1');
    expect(tracePath('t1', 'role:user "bag"')).toBe('/traces/t1?q=role%3Auser%20%22bag%22');
  });
});

describe('recallList', () => {
  test('is null without session storage', () => {
    expect(recallList()).toBeNull();
  });
});
