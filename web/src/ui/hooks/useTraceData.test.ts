import { describe, expect, test } from 'vitest';
import { callIndexes } from './useTraceData';

describe('callIndexes', () => {
  test('links each call id to its call and its output; the first of an id wins', () => {
    const { callIndex, outputIndex } = callIndexes([
      { role: 'user', content: 'hi' },
      { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: {} } }, { id: 'c2', type: 'function', function: { name: 'g', arguments: {} } }] },
      { role: 'tool', tool_call_id: 'c2', content: 'two' },
      { role: 'tool', tool_call_id: 'c1', content: 'one' },
      { role: 'assistant', tool_calls: [{ id: 'c1', type: 'function', function: { name: 'f', arguments: {} } }] },
      { role: 'tool', tool_call_id: 'c1', content: 'again' },
    ] as any);
    expect([...callIndex]).toEqual([
      ['c1', { event: 1, call: 0 }],
      ['c2', { event: 1, call: 1 }],
    ]);
    expect([...outputIndex]).toEqual([
      ['c2', 2],
      ['c1', 3],
    ]);
  });
  test('calls without ids are not linked', () => {
    const { callIndex } = callIndexes([{ role: 'assistant', tool_calls: [{ type: 'function', function: { name: 'f', arguments: {} } }, null] }] as any);
    expect(callIndex.size).toBe(0);
  });
});
