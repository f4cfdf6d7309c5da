import { describe, expect, test } from 'vitest';
import type { HighlightInput } from '../../lib/highlight';
import type { Annotation } from '../../lib/types';
import { highlightInputs } from './useHighlights';

const ann = (id: string, more: Partial<Annotation>): Annotation => ({ id, trace_id: 't', address: 'messages.0', content: '', source: 'user', created_at: '', updated_at: '', ...more });

describe('highlightInputs', () => {
  const search: HighlightInput[] = [{ id: 'search-0', kind: 'search', address: 'messages.1.content:0-3', message: 'search: bag' }];
  test('comments, violations and search hits; bare ratings mark nothing', () => {
    const got = highlightInputs(
      [
        ann('c', { content: 'typo', author: 'ann' }),
        ann('v', { content: 'leaks a secret', source: 'analyzer' }),
        ann('r', { extra: { rating: 1 }, author: 'ann' }),
        ann('rc', { extra: { rating: -1 }, content: 'wrong tool', source: 'user' }),
      ],
      search,
      '',
    );
    expect(got.map((h) => [h.id, h.kind, h.message])).toEqual([
      ['c', 'annotation', 'ann: typo'],
      ['v', 'analyzer', 'violation: leaks a secret'],
      ['rc', 'annotation', 'user: wrong tool'],
      ['search-0', 'search', 'search: bag'],
    ]);
  });
  test('the URL\'s address is the target, when it is an address', () => {
    expect(highlightInputs([], [], 'messages.2.content:4-9').at(-1)).toEqual({ id: 'target', kind: 'target', address: 'messages.2.content:4-9', message: 'linked: messages.2.content:4-9' });
    expect(highlightInputs([], [], 'top-of-page')).toEqual([]);
  });
});
