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

import { rateText } from './EvalPanel';

describe('rateText', () => {
  test('a pass rate in percent, a mean as a number, none as a dash', () => {
    expect(rateText({ type: 'bool', rate: 0.42 })).toBe('42%');
    expect(rateText({ type: 'bool', rate: 0.4567 })).toBe('45.7%');
    expect(rateText({ type: 'number', rate: 3.14159 })).toBe('3.14');
    expect(rateText({ type: 'bool', rate: null })).toBe('—');
  });
});
