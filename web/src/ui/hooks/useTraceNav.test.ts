import { describe, expect, test } from 'vitest';
import { moveIndex, stepIndex } from './useTraceNav';

describe('stepIndex', () => {
  test('from no highlight, forward starts at the first and back at the last', () => {
    expect(stepIndex(-1, 1, 5)).toBe(0);
    expect(stepIndex(-1, -1, 5)).toBe(4);
  });
  test('a highlight that is gone (the list shrank) counts as none', () => {
    expect(stepIndex(5, 1, 5)).toBe(0);
    expect(stepIndex(9, -1, 5)).toBe(4);
  });
  test('steps go round at both ends', () => {
    expect(stepIndex(4, 1, 5)).toBe(0);
    expect(stepIndex(0, -1, 5)).toBe(4);
    expect(stepIndex(2, 1, 5)).toBe(3);
    expect(stepIndex(2, -1, 5)).toBe(1);
  });
  test('a single highlight stays itself', () => {
    expect(stepIndex(0, 1, 1)).toBe(0);
    expect(stepIndex(0, -1, 1)).toBe(0);
    expect(stepIndex(-1, -1, 1)).toBe(0);
  });
});

describe('moveIndex', () => {
  const never = () => {
    throw new Error('the view is read only when no event is focused');
  };
  test('from the focused event, held at the first and the last', () => {
    expect(moveIndex(3, never, 1, 10)).toBe(4);
    expect(moveIndex(3, never, -1, 10)).toBe(2);
    expect(moveIndex(9, never, 1, 10)).toBe(9);
    expect(moveIndex(0, never, -1, 10)).toBe(0);
  });
  test('with none focused, down lands on the first event in view and up on the one above', () => {
    expect(moveIndex(-1, () => 6, 1, 10)).toBe(6);
    expect(moveIndex(-1, () => 6, -1, 10)).toBe(5);
    expect(moveIndex(-1, () => 0, 1, 10)).toBe(0);
    expect(moveIndex(-1, () => 0, -1, 10)).toBe(0);
  });
  test('a focus past the end (the trace was replaced) is brought back in', () => {
    expect(moveIndex(50, never, 1, 10)).toBe(9);
    expect(moveIndex(-1, () => 40, 1, 10)).toBe(9);
  });
});
