import { describe, expect, test } from 'vitest';
import { choicesOf } from './ScoresPanel';

describe('choicesOf', () => {
  test('a bool (or untyped) human criterion is pass or fail', () => {
    expect(choicesOf({ name: 'ok', evaluator: 'human' })).toEqual([
      { label: 'pass', value: true },
      { label: 'fail', value: false },
    ]);
    expect(choicesOf({ name: 'ok', evaluator: 'human', type: 'bool' }).map((c) => c.value)).toEqual([true, false]);
  });
  test('a label criterion offers its choices, in order', () => {
    expect(choicesOf({ name: 'tone', evaluator: 'human', type: 'label', choices: ['polite', 'curt'] })).toEqual([
      { label: 'polite', value: 'polite' },
      { label: 'curt', value: 'curt' },
    ]);
  });
  test('a number criterion has no choices (typed in)', () => {
    expect(choicesOf({ name: 'stars', evaluator: 'human', type: 'number' })).toEqual([]);
  });
});
