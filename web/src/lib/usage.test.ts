import { describe, expect, it } from 'vitest';
import { fmtCost, fmtTokens, spanUsages } from './usage';

describe('span usage from the server', () => {
  it('maps each span to its usage, leaving out what it did not record', () => {
    const m = spanUsages({
      input_tokens: 233,
      spans: {
        a: { model: 'gpt-4o', input_tokens: 197, output_tokens: 36, total_tokens: 233, cost: 0.00085, cost_estimated: true },
        b: { total_tokens: 12, latency_ms: 300 },
        c: { model: 'x', input_tokens: 5, output_tokens: 1, total_tokens: 6, aggregate: true },
      },
    });
    expect(m.get('a')).toEqual({ model: 'gpt-4o', input: 197, output: 36, total: 233, cost: 0.00085, estimated: true });
    expect(m.get('b')).toEqual({ total: 12, latencyMs: 300 });
    expect(m.get('c')?.aggregate).toBe(true);
    expect(m.has('d')).toBe(false);
    expect(spanUsages(null).size).toBe(0);
  });
  it('writes tokens in and out, or the total alone, and costs to three digits', () => {
    expect(fmtTokens({ input: 197, output: 36, total: 233 }, String)).toBe('197 in · 36 out');
    expect(fmtTokens({ total: 12 }, String)).toBe('12 tok');
    expect(fmtTokens({}, String)).toBe('');
    expect(fmtCost(2.69e-5 + 4.8e-6)).toBe('$0.0000317');
    expect(fmtCost(1.23456)).toBe('$1.23');
  });
});
