import { describe, expect, test } from 'vitest';
import { keyAction } from './useKeyboardNav';

const keys = { j: 1, k: 1, n: 1, p: 1, '/': 1, '[': 1, ']': 1 };
const key = (k: string, mods: Partial<{ ctrlKey: boolean; metaKey: boolean; altKey: boolean }> = {}) => ({ key: k, ctrlKey: false, metaKey: false, altKey: false, ...mods });

describe('keyAction', () => {
  test('a bound key runs its command', () => {
    for (const k of Object.keys(keys)) expect(keyAction(key(k), false, keys)).toEqual({ run: k });
  });
  test('other keys do nothing, Escape included, and inherited names are not commands', () => {
    for (const k of ['J', 'x', 'Enter', 'Escape', 'ArrowDown', 'toString', 'constructor']) expect(keyAction(key(k), false, keys)).toBeNull();
  });
  test('with a modifier held, nothing runs (the browser keeps ctrl+[ and the like)', () => {
    for (const mod of ['ctrlKey', 'metaKey', 'altKey'] as const) {
      expect(keyAction(key('j', { [mod]: true }), false, keys)).toBeNull();
      expect(keyAction(key('/', { [mod]: true }), false, keys)).toBeNull();
    }
  });
  test('while typing in a field, keys are text; Escape leaves the field', () => {
    expect(keyAction(key('j'), true, keys)).toBeNull();
    expect(keyAction(key('/'), true, keys)).toBeNull();
    expect(keyAction(key('Escape'), true, keys)).toEqual({ blur: true });
    expect(keyAction(key('Escape', { ctrlKey: true }), false, keys)).toEqual({ blur: true });
  });
});

describe('keyAction on a focused control', () => {
  test('Enter and Space stay the button\'s or link\'s; other bound keys still run', () => {
    const ks = { Enter: 1, ' ': 1, j: 1, ArrowDown: 1 };
    expect(keyAction(key('Enter'), false, ks, true)).toBeNull();
    expect(keyAction(key(' '), false, ks, true)).toBeNull();
    expect(keyAction(key('j'), false, ks, true)).toEqual({ run: 'j' });
    expect(keyAction(key('ArrowDown'), false, ks, true)).toEqual({ run: 'ArrowDown' });
    expect(keyAction(key('Enter'), false, ks, false)).toEqual({ run: 'Enter' });
  });
});
