import { describe, expect, test } from 'vitest';
import { editKey } from './PolicyPanel';

/** apply runs a key on text with the selection marked by | (caret) or
 * [ ] (a range) and returns the text with the new selection marked. */
function apply(marked: string, key: string, shift = false): string {
  let s: number, e: number, src: string;
  if (marked.includes('|')) {
    s = e = marked.indexOf('|');
    src = marked.replace('|', '');
  } else {
    s = marked.indexOf('[');
    e = marked.indexOf(']') - 1;
    src = marked.replace('[', '').replace(']', '');
  }
  const ed = editKey(src, s, e, key, shift);
  if (!ed) return 'null';
  const out = src.slice(0, ed.from) + ed.text + src.slice(ed.to);
  return ed.selStart === ed.selEnd ? out.slice(0, ed.selStart) + '|' + out.slice(ed.selStart) : out.slice(0, ed.selStart) + '[' + out.slice(ed.selStart, ed.selEnd) + ']' + out.slice(ed.selEnd);
}

describe('editKey', () => {
  test('Enter keeps the indentation, and adds one after a colon', () => {
    expect(apply('    a|', 'Enter')).toBe('    a\n    |');
    expect(apply('raise "x" if:|', 'Enter')).toBe('raise "x" if:\n    |');
    expect(apply('    (m: Message)|', 'Enter')).toBe('    (m: Message)\n    |');
    expect(apply('a|', 'Enter')).toBe('a\n|');
  });
  test('Tab inserts an indent, or indents every selected line', () => {
    expect(apply('ab|c', 'Tab')).toBe('ab    |c');
    expect(apply('[a\nb]\nc', 'Tab')).toBe('    [a\n    b]\nc');
    expect(apply('x\n[ab]c', 'Tab')).toBe('x\n    [ab]c');
  });
  test('Shift+Tab takes one indent off the lines, no more than there is', () => {
    expect(apply('      a|', 'Tab', true)).toBe('  a|');
    expect(apply('  a|', 'Tab', true)).toBe('a|');
    expect(apply('[    a\n  b]', 'Tab', true)).toBe('[a\nb]');
  });
  test('other keys are left to the browser', () => {
    expect(apply('a|', 'x')).toBe('null');
    expect(apply('a|', 'Enter', true)).toBe('null');
  });
});
