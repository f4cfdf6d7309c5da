// What a trace and its spans used: model, tokens in and out, cost and
// latency. The server reads them from the conventions of each format and
// prices what the source did not (internal/usage; GET /traces/{id}?usage=1):
// the explorer shows its numbers and derives none of its own.
import type { SpanUsageJSON, TraceUsage } from './types';

export interface Usage {
  model?: string;
  input?: number; // tokens in (prompt)
  output?: number; // tokens out (completion)
  total?: number;
  cost?: number; // US dollars
  estimated?: boolean; // the cost is priced from the table, not recorded
  latencyMs?: number; // a recorded latency
  aggregate?: boolean; // its tokens repeat its descendants' (left out of the totals)
}

export const noUsage: Usage = Object.freeze({}) as Usage;

function fromJSON(j: SpanUsageJSON): Usage {
  const u: Usage = {};
  if (typeof j.model === 'string' && j.model) u.model = j.model;
  if (typeof j.input_tokens === 'number') u.input = j.input_tokens;
  if (typeof j.output_tokens === 'number') u.output = j.output_tokens;
  if (typeof j.total_tokens === 'number') u.total = j.total_tokens;
  if (typeof j.cost === 'number') u.cost = j.cost;
  if (j.cost_estimated) u.estimated = true;
  if (typeof j.latency_ms === 'number') u.latencyMs = j.latency_ms;
  if (j.aggregate) u.aggregate = true;
  return u;
}

/** spanUsages maps span ids to their usage, one object per span for the
 * trace's life (cards compare them by identity). */
export function spanUsages(t: TraceUsage | null | undefined): Map<string, Usage> {
  const m = new Map<string, Usage>();
  for (const [id, j] of Object.entries(t?.spans ?? {})) if (j && typeof j === 'object') m.set(id, fromJSON(j));
  return m;
}

/** fmtCost writes an amount in dollars with three significant digits. */
export function fmtCost(x: number): string {
  return '$' + String(Number(x.toPrecision(3)));
}

/** fmtTokens writes tokens in and out ("197 in · 36 out"), or the total
 * alone when that is all there is; '' when there is none. */
export function fmtTokens(u: Usage, fmt: (n: number) => string): string {
  const parts: string[] = [];
  if (u.input !== undefined) parts.push(`${fmt(u.input)} in`);
  if (u.output !== undefined) parts.push(`${fmt(u.output)} out`);
  if (!parts.length && u.total !== undefined) return `${fmt(u.total)} tok`;
  return parts.join(' · ');
}

/** costTitle says where a cost comes from, for the hover. */
export function costTitle(estimated: boolean | undefined, asOf?: string): string {
  return estimated ? `estimated from Lookout's price table${asOf ? ` (prices as of ${asOf})` : ''}: tokens × the model's price per token` : 'cost recorded by the source';
}
