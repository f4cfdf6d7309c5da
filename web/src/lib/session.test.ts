import { describe, expect, it } from 'vitest';
import { sessionOf, sessionOrder, sessionQuery, userOf } from './session';
import type { TraceSummary } from './types';

describe('session', () => {
  it('reads the keys by precedence, as the server does', () => {
    expect(sessionOf({ session_id: 'a', session: 'b', sessionId: 'c' })).toBe('a');
    expect(sessionOf({ session_id: null, session: ' ', sessionId: 'c' })).toBe('c');
    expect(sessionOf({ info: { session_id: 'x' } })).toBe('');
    expect(userOf({ user: 42, userId: 'w' })).toBe('42');
    expect(userOf(undefined)).toBe('');
  });
  it('quotes an id for the query', () => {
    expect(sessionQuery('a "b" \\c')).toBe('session:"a \\"b\\" \\\\c"');
  });
  it('orders by time, then index', () => {
    const t = (index: number, timestamp: string | undefined, created_at = '2025-01-01T00:00:00Z'): TraceSummary => ({
      id: String(index), index, metadata: timestamp ? { timestamp } : {}, event_count: 0, annotation_count: 0, created_at,
    });
    const got = sessionOrder([t(0, '2025-06-06T11:31:33.965Z'), t(1, '2025-06-05T15:45:52.971Z'), t(3, '2025-06-06T14:40:28.562Z'), t(2, '2025-06-06T14:40:28.562Z'), t(4, undefined, '2024-01-01T00:00:00Z')]);
    expect(got.map((x) => x.index)).toEqual([4, 1, 0, 2, 3]);
  });
});
