import { describe, expect, test } from 'vitest';
import { buttonPlace, lineTarget, rangeTarget } from './useComposer';

describe('rangeTarget', () => {
  test('addresses count code points; the quote is the selected text', () => {
    // '😀' is two UTF-16 units and one code point.
    const text = 'a😀bcd';
    expect(rangeTarget('messages.0.content', text, 3, 5)).toEqual({ address: 'messages.0.content:2-4', quote: 'bc' });
    expect(rangeTarget('messages.0.content', text, 1, 3)).toEqual({ address: 'messages.0.content:1-2', quote: '😀' });
  });
  test('a selection made backwards is the same range', () => {
    expect(rangeTarget('f', 'hello', 4, 1)).toEqual(rangeTarget('f', 'hello', 1, 4));
  });
  test('an empty range is no target', () => {
    expect(rangeTarget('f', 'hello', 2, 2)).toBeNull();
  });
});

describe('lineTarget', () => {
  test('a 0-based line and its text; past the end quotes nothing', () => {
    expect(lineTarget('messages.1.content', 'one\ntwo\nthree', 1)).toEqual({ address: 'messages.1.content:L1', quote: 'two' });
    expect(lineTarget('f', 'one', 5)).toEqual({ address: 'f:L5', quote: '' });
  });
});

describe('buttonPlace', () => {
  test('below the selection, centred on it', () => {
    expect(buttonPlace({ top: 100, bottom: 120, left: 300, width: 200 }, 1000, 800)).toEqual({ x: 400, y: 126 });
  });
  test('above it near the bottom of the window, never above the top', () => {
    expect(buttonPlace({ top: 700, bottom: 780, left: 300, width: 200 }, 1000, 800)).toEqual({ x: 400, y: 664 });
    expect(buttonPlace({ top: 10, bottom: 790, left: 300, width: 200 }, 1000, 800)).toEqual({ x: 400, y: 4 });
  });
  test('kept 110 px from either side', () => {
    expect(buttonPlace({ top: 0, bottom: 20, left: 0, width: 10 }, 1000, 800).x).toBe(110);
    expect(buttonPlace({ top: 0, bottom: 20, left: 980, width: 20 }, 1000, 800).x).toBe(890);
  });
});
