import { describe, expect, it } from 'vitest';
import { matchSummary, matchTrace, needsContent, parseQuery, textHits, tokenize } from './search';
import type { Trace, TraceSummary } from './types';

describe('search box parser', () => {
  it('marks no words for the filters only the server answers', () => {
    const q = parseQuery('session:"s 1" user:u score:accuracy>0.5 verdict:correct=fail refund');
    expect(q.words).toEqual(['refund']);
    expect(q.errors).toEqual([]);
  });
  it('tokenizes phrases', () => {
    expect(tokenize(' a "b c"  meta:k="x y" ')).toEqual(['a', 'b c', 'meta:k=x y']);
  });
  it('reads every filter of issue 5', () => {
    const q = parseQuery('Refund "credit card" is:annotated not:annotated meta:model=gpt-4o meta:reward>0.5 meta:n<=3 tool:book_reservation role:tool has:violation -cancel');
    expect(q.words).toEqual(['refund', 'credit card']);
    expect(q.without).toEqual(['cancel']);
    expect(q.errors).toEqual([]);
    expect(q.filters).toEqual([
      { kind: 'annotated', not: false },
      { kind: 'annotated', not: true },
      { kind: 'meta', key: 'model', op: '=', value: 'gpt-4o', not: false },
      { kind: 'meta', key: 'reward', op: '>', value: '0.5', not: false },
      { kind: 'meta', key: 'n', op: '<=', value: '3', not: false },
      { kind: 'tool', name: 'book_reservation', not: false },
      { kind: 'role', name: 'tool', not: false },
      { kind: 'violation', not: false },
    ]);
  });
  it('reports malformed filters', () => {
    expect(parseQuery('is:cool').errors).toHaveLength(1);
    expect(parseQuery('meta:reward>high').errors[0]).toMatch(/needs a number/);
    expect(parseQuery('meta:nokey').errors).toHaveLength(1);
    expect(parseQuery('tool:').errors).toHaveLength(1);
    expect(parseQuery('-has:violation').filters).toEqual([{ kind: 'violation', not: true }]);
  });
  it('treats unknown prefixes as text', () => {
    expect(parseQuery('https://x.org').words).toEqual(['https://x.org']);
  });
});

const sum = (o: Partial<TraceSummary>): TraceSummary => ({ id: 'a', index: 0, event_count: 2, annotation_count: 0, created_at: '', ...o });
const t: Trace = {
  id: 'a',
  metadata: { reward: 1, model: 'gpt-4o' },
  events: [
    { role: 'user', content: 'Please REFUND my ticket 😀 refund' },
    { role: 'assistant', content: null, tool_calls: [{ id: 'c', function: { name: 'refund', arguments: { reason: 'late refund' } } }] },
    { role: 'tool', content: 'ok', tool_call_id: 'c' },
  ],
  annotations: [{ address: 'messages.1', content: 'bad', source: 'analyzer' }],
};

describe('matching', () => {
  it('answers summary filters without content', () => {
    const q = parseQuery('is:annotated meta:reward>=1');
    expect(needsContent(q)).toBe(false);
    expect(matchSummary(q, sum({ annotation_count: 1, metadata: { reward: 1 } }))).toBe(true);
    expect(matchSummary(q, sum({ annotation_count: 0, metadata: { reward: 1 } }))).toBe(false);
    expect(matchSummary(q, sum({ annotation_count: 2, metadata: { reward: 0 } }))).toBe(false);
    expect(matchSummary(parseQuery('meta:model=GPT-4o'), sum({ metadata: { model: 'gpt-4o' } }))).toBe(true);
  });
  it('matches content filters and words', () => {
    expect(matchTrace(parseQuery('tool:refund role:tool has:violation'), t).ok).toBe(true);
    expect(matchTrace(parseQuery('tool:cancel'), t).ok).toBe(false);
    expect(matchTrace(parseQuery('-has:violation'), t).ok).toBe(false);
    expect(matchTrace(parseQuery('role:system'), t).ok).toBe(false);
    expect(matchTrace(parseQuery('refund -ticket'), t).ok).toBe(false);
    expect(matchTrace(parseQuery('"my ticket"'), t).ok).toBe(true);
  });
  it('finds hits as code point addresses', () => {
    const hits = textHits(t, ['refund']);
    expect(hits.map((h) => h.address)).toEqual([
      'messages.0.content:7-13',
      'messages.0.content:26-32', // after the emoji: code points, not UTF-16 units
      'messages.1.tool_calls.0.function.name:0-6',
      'messages.1.tool_calls.0.function.arguments.reason:5-11',
    ]);
    expect(new Set(hits.map((h) => h.id)).size).toBe(hits.length);
  });
});
