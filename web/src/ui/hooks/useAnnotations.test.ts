import { describe, expect, test } from 'vitest';
import type { Annotation } from '../../lib/types';
import { notesByEvent, rateAction, ratingOf, sortAnnotations } from './useAnnotations';

let n = 0;
const ann = (address: string, more: Partial<Annotation> = {}): Annotation => ({
  id: `a${n++}`,
  trace_id: 't',
  address,
  content: '',
  source: 'user',
  created_at: '2026-01-01T00:00:00Z',
  updated_at: '2026-01-01T00:00:00Z',
  ...more,
});

describe('ratingOf', () => {
  test('only 1 and -1 are ratings', () => {
    expect(ratingOf(ann('messages.0', { extra: { rating: 1 } }))).toBe(1);
    expect(ratingOf(ann('messages.0', { extra: { rating: -1 } }))).toBe(-1);
    for (const extra of [undefined, {}, { rating: 0 }, { rating: 2 }, { rating: '1' }]) expect(ratingOf(ann('messages.0', { extra }))).toBeUndefined();
  });
});

describe('notesByEvent', () => {
  test('groups by event, leaving out spans and bad addresses', () => {
    const a = ann('messages.2.content:0-3');
    const b = ann('messages.0');
    const c = ann('messages.2');
    const by = notesByEvent([a, b, c, ann('spans.abc'), ann('not an address')]);
    expect([...by.keys()].sort()).toEqual([0, 2]);
    expect(by.get(2)).toEqual([a, c]);
    expect(by.get(0)).toEqual([b]);
  });
});

describe('sortAnnotations', () => {
  test('spans first, then by event, then by creation; bad addresses last', () => {
    const late = ann('messages.1', { created_at: '2026-01-02T00:00:00Z' });
    const early = ann('messages.1', { created_at: '2026-01-01T00:00:00Z' });
    const first = ann('messages.0.content:L2', { created_at: '2026-01-03T00:00:00Z' });
    const span = ann('spans.s1', { created_at: '2025-01-01T00:00:00Z' });
    const bad = ann('??', { created_at: '2025-06-01T00:00:00Z' });
    const list = [late, span, bad, early, first];
    expect(sortAnnotations(list)).toEqual([span, first, early, late, bad]);
    expect(list[0]).toBe(late); // the input is left alone
  });
});

describe('rateAction', () => {
  const up = ann('messages.3', { author: 'ann', extra: { rating: 1 } });
  const othersDown = ann('messages.3', { author: 'bob', extra: { rating: -1 } });
  const comment = ann('messages.3', { author: 'ann', content: 'hi' });
  const list = [othersDown, comment, up];
  test('the same rating again takes it back', () => {
    expect(rateAction(list, 3, 1, 'ann')).toEqual({ op: 'delete', id: up.id });
  });
  test('the other rating changes it', () => {
    expect(rateAction(list, 3, -1, 'ann')).toEqual({ op: 'update', id: up.id });
  });
  test('no rating of mine on that event makes one (others\' ratings and comments are not mine)', () => {
    expect(rateAction(list, 3, -1, 'carl')).toEqual({ op: 'create' });
    expect(rateAction(list, 4, 1, 'ann')).toEqual({ op: 'create' });
    expect(rateAction([comment], 3, 1, 'ann')).toEqual({ op: 'create' });
  });
  test('a rating on a part of the event is not the event\'s', () => {
    expect(rateAction([ann('messages.3.content', { author: 'ann', extra: { rating: 1 } })], 3, 1, 'ann')).toEqual({ op: 'create' });
  });
});
