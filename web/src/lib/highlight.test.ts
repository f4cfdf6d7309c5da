import { describe, expect, it } from 'vitest';
import { HighlightIndex, resolveHighlights, segments, type HighlightInput } from './highlight';
import type { Trace } from './types';

const trace: Trace = {
  id: 't',
  events: [
    { role: 'user', content: '😀 héllo wörld 𝄞 end' },
    { role: 'assistant', content: 'line zero\nline one\nline two' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c1', type: 'function', function: { name: 'send_email', arguments: { to: 'a😀@x.org', n: 3 } } }] },
    { role: 'user', content: [{ type: 'text', text: 'part 😀 zero' }, { type: 'image', image_url: 'data:image/png;base64,AAAA' }] },
  ],
  spans: [{ id: 's1', name: 'root', value: 'x😀yz' }],
};

const mk = (address: string, kind: HighlightInput['kind'] = 'annotation'): HighlightInput => ({ id: address, kind, address, message: 'm ' + address });
const textOf = (t: Trace, h: { event: number; start?: number; end?: number }) => (t.events[h.event].content as string).slice(h.start, h.end);

describe('address → highlight mapping', () => {
  it('maps code point ranges to the exact characters', () => {
    const [h] = resolveHighlights(trace, [mk('messages.0.content:2-7')]);
    expect(h.field).toBe('content');
    expect(textOf(trace, h)).toBe('héllo');
    const [w] = resolveHighlights(trace, [mk('messages.0.content:16-19')]);
    expect(textOf(trace, w)).toBe('end');
    const [clef] = resolveHighlights(trace, [mk('messages.0.content:14-15')]);
    expect(textOf(trace, clef)).toBe('𝄞');
  });
  it('maps lines', () => {
    const [h] = resolveHighlights(trace, [mk('messages.1.content:L1')]);
    expect(textOf(trace, h)).toBe('line one');
    expect(resolveHighlights(trace, [mk('messages.1.content:L7')])).toEqual([]);
  });
  it('maps tool call argument and name ranges', () => {
    const [h] = resolveHighlights(trace, [mk('messages.2.tool_calls.0.function.arguments.to:2-7')]);
    expect(h.field).toBe('tool_calls.0.function.arguments.to');
    expect('a😀@x.org'.slice(h.start, h.end)).toBe('@x.or');
    const [n] = resolveHighlights(trace, [mk('2.tool_calls.0.function.name:0-4', 'analyzer')]);
    expect(n).toMatchObject({ event: 2, field: 'tool_calls.0.function.name', start: 0, end: 4, kind: 'analyzer' });
  });
  it('maps text parts and spans', () => {
    const [p] = resolveHighlights(trace, [mk('messages.3.content.0.text:5-6')]);
    expect('part 😀 zero'.slice(p.start, p.end)).toBe('😀');
    const [s] = resolveHighlights(trace, [mk('spans.s1.value:1-3')]);
    expect(s).toMatchObject({ event: -1, span: 's1', field: 'value' });
    expect('x😀yz'.slice(s.start, s.end)).toBe('😀y');
  });
  it('keeps whole-event and whole-field highlights without a range', () => {
    const [e] = resolveHighlights(trace, [mk('messages.1')]);
    expect(e).toMatchObject({ event: 1, field: '' });
    expect(e.start).toBeUndefined();
    const idx = new HighlightIndex(resolveHighlights(trace, [mk('messages.1'), mk('messages.1.content:L0')]));
    expect(idx.whole(1, '').length).toBe(1);
    expect(idx.ranges(1, 'content').length).toBe(1);
  });
  it('drops addresses that do not parse or point nowhere', () => {
    expect(resolveHighlights(trace, [mk('nonsense'), mk('messages.9'), mk('spans.nope'), mk('messages.0.content:L4')])).toEqual([]);
  });
  it('sorts by event then position', () => {
    const hs = resolveHighlights(trace, [mk('messages.1.content:L2'), mk('messages.0.content:3-4'), mk('messages.1.content:L0')]);
    expect(hs.map((h) => h.address)).toEqual(['messages.0.content:3-4', 'messages.1.content:L0', 'messages.1.content:L2']);
  });
});

describe('segments', () => {
  it('cuts text at overlapping highlight edges', () => {
    const hs = resolveHighlights({ id: 'x', events: [{ role: 'user', content: 'abcdefghij' }] }, [mk('messages.0.content:2-6'), mk('messages.0.content:4-8', 'search')]);
    const segs = segments(0, 10, hs);
    expect(segs.map((s) => [s.start, s.end, s.marks.map((m) => m.kind).join('+')])).toEqual([
      [0, 2, ''],
      [2, 4, 'annotation'],
      [4, 6, 'annotation+search'],
      [6, 8, 'search'],
      [8, 10, ''],
    ]);
    expect(segments(3, 5, hs).map((s) => [s.start, s.end])).toEqual([
      [3, 4],
      [4, 5],
    ]);
  });
});
