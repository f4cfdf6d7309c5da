import { describe, expect, it } from 'vitest';
import { fmtCost, fmtTokens, spanUsage } from './usage';

describe('span usage', () => {
  it('reads OpenTelemetry GenAI tokens in and out, and any-agent costs', () => {
    const u = spanUsage({
      id: 'a',
      attributes: { 'gen_ai.request.model': 'mistral-small', 'gen_ai.usage.input_tokens': 197, 'gen_ai.usage.output_tokens': 36, 'gen_ai.usage.input_cost': 2.69e-5, 'gen_ai.usage.output_cost': 4.8e-6 },
    });
    expect(u).toEqual({ model: 'mistral-small', input: 197, output: 36, cost: 2.69e-5 + 4.8e-6 });
    expect(fmtTokens(u, String)).toBe('197 in · 36 out');
    expect(fmtCost(u.cost!)).toBe('$0.0000317');
  });
  it('reads OpenInference counts written as strings, and its cost', () => {
    const u = spanUsage({ id: 'b', attributes: { 'llm.model_name': 'gpt-4.1', 'llm.token_count.prompt': '55', 'llm.token_count.completion': '15', 'llm.token_count.total': '70', 'llm.token_count.prompt_details.cache_read': '0', 'llm.cost.total': 0.00023 } });
    expect(u).toEqual({ model: 'gpt-4.1', input: 55, output: 15, total: 70, cost: 0.00023 });
  });
  it('reads Langfuse model, usageDetails and costDetails', () => {
    const u = spanUsage({ id: 'c', model: 'gpt-4.1', usageDetails: { input: 85, output: 29, total: 114 }, costDetails: { input: 0.00017, output: 0.000232, total: 0.000402 }, latency: 1.15 });
    expect(u).toEqual({ model: 'gpt-4.1', input: 85, output: 29, total: 114, cost: 0.000402, latencyMs: 1150 });
    // No usage recorded: nothing shown, not zeros.
    expect(spanUsage({ id: 'd', model: null, usageDetails: {}, costDetails: {}, totalCost: 0 })).toEqual({});
  });
  it('reads MLflow token usage and Snorkel step metadata', () => {
    expect(spanUsage({ id: 'e', attributes: { 'mlflow.chat.tokenUsage': '{"input_tokens": 10, "output_tokens": 3, "total_tokens": 13}' } })).toEqual({ input: 10, output: 3, total: 13 });
    const sn = spanUsage({ id: 'f', attributes: { agent: 'primary_AI', tokens: 12, latency: 0.3 } });
    expect(sn).toEqual({ total: 12, latencyMs: 300 });
    expect(fmtTokens(sn, String)).toBe('12 tok');
  });
  it('does not read usage out of payloads', () => {
    expect(spanUsage({ id: 'g', attributes: { 'output.value': '{"usage": {"input_tokens": 5}}', 'gen_ai.request.max_tokens': 100 } })).toEqual({});
  });
});
