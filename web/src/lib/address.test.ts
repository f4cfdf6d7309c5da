import { describe, expect, it } from 'vitest';
import { cpToUnits, formatAddress, lineRange, parseAddress, tryParseAddress, unitsToCp } from './address';

describe('parseAddress', () => {
  it('reads every form of DESIGN.md', () => {
    expect(parseAddress('messages.2')).toEqual({ root: 'messages', event: 2, span: '', path: [], sel: undefined });
    expect(parseAddress('messages[2]').event).toBe(2);
    expect(parseAddress('messages.2.tool_calls.0.function.arguments.to').path).toEqual(['tool_calls', '0', 'function', 'arguments', 'to']);
    expect(parseAddress('messages.0.content:5-10').sel).toEqual({ kind: 'range', start: 5, end: 10 });
    expect(parseAddress('messages.2.content:L3').sel).toEqual({ kind: 'line', line: 3 });
    expect(parseAddress('messages.4.content.1:bbox-10,20, 200,80').sel).toEqual({ kind: 'bbox', x1: 10, y1: 20, x2: 200, y2: 80 });
    const s = parseAddress('spans.0xb802.attributes["gen_ai.request.model"]');
    expect(s).toMatchObject({ root: 'spans', span: '0xb802', path: ['attributes', 'gen_ai.request.model'] });
    expect(parseAddress('0.tool_calls.0.function.name:0-3')).toMatchObject({ event: 0, path: ['tool_calls', '0', 'function', 'name'], sel: { start: 0, end: 3 } });
  });
  it('rejects malformed addresses', () => {
    for (const bad of ['', 'message.1', 'messages', 'messages.x', 'messages.1:9-3', 'messages.1:L', 'messages.1..a', 'messages.1:bbox-1,2', 'spans', 'foo.1']) {
      expect(tryParseAddress(bad), bad).toBeNull();
    }
  });
  it('prints the canonical form that parses back', () => {
    for (const a of ['messages.3.content:L2', 'messages.0.content:5-10', 'spans.s1.attributes["a.b"]', 'messages.1.tool_calls.0.function.arguments.to']) {
      expect(formatAddress(parseAddress(a))).toBe(a);
    }
    expect(formatAddress(parseAddress('messages[2]'))).toBe('messages.2');
  });
});

describe('code points and UTF-16', () => {
  const s = 'a😀b𝄞c'; // two astral characters: 5 code points, 7 units
  it('converts both ways', () => {
    expect([0, 1, 2, 3, 4, 5].map((c) => cpToUnits(s, c))).toEqual([0, 1, 3, 4, 6, 7]);
    expect([0, 1, 3, 4, 6, 7].map((u) => unitsToCp(s, u))).toEqual([0, 1, 2, 3, 4, 5]);
    expect(cpToUnits(s, 99)).toBe(7);
  });
  it('finds lines', () => {
    expect(lineRange('ab\ncd\n\nef', 1)).toEqual([3, 5]);
    expect(lineRange('ab\ncd\n\nef', 2)).toEqual([6, 6]);
    expect(lineRange('ab\ncd\n\nef', 3)).toEqual([7, 9]);
    expect(lineRange('ab', 1)).toBeNull();
  });
});
