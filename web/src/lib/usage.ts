// What a span says it used: its model, tokens in and out, the cost its
// source recorded and a recorded latency, read from the conventions the
// formats carry: OpenTelemetry GenAI (gen_ai.usage.input_tokens, ...),
// OpenInference (llm.token_count.prompt, llm.cost.total, ...), MLflow
// (mlflow.chat.tokenUsage), Langfuse observations (model, usageDetails,
// costDetails, latency), any-agent (gen_ai.usage.input_cost) and Snorkel
// step metadata (tokens, latency). Nothing is estimated: a cost shows only
// where the source recorded one.
import type { Span } from './types';

export interface Usage {
  model?: string;
  input?: number; // tokens in (prompt)
  output?: number; // tokens out (completion)
  total?: number;
  cost?: number; // as recorded, in US dollars
  latencyMs?: number; // a recorded latency (seconds in the source)
}

/** num reads a count or an amount: a number, or a string that is one
 * (OpenInference attributes are often strings). */
function num(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isFinite(v) ? v : undefined;
  if (typeof v === 'string' && /^\s*-?\d+(\.\d+)?([eE][+-]?\d+)?\s*$/.test(v)) return Number(v);
  return undefined;
}

/** flatten lists the members of attributes or metadata under dotted keys;
 * JSON strings under keys about usage or tokens (mlflow.chat.tokenUsage)
 * are read too, other payloads are not (an agent's output may quote its
 * children's usage). */
function flatten(v: unknown, key: string, out: Map<string, unknown>, depth: number) {
  if (depth > 4) return;
  if (typeof v === 'string' && /usage|token/i.test(key) && /^\s*\{/.test(v) && v.length < 20000) {
    try {
      v = JSON.parse(v);
    } catch {
      /* not JSON */
    }
  }
  if (v && typeof v === 'object' && !Array.isArray(v)) {
    for (const [k, x] of Object.entries(v)) flatten(x, key ? key + '.' + k : k, out, depth + 1);
  } else if (key && !out.has(key)) out.set(key, v);
}

/** find is the first value whose key is one of names or ends with "." and
 * one of them, in the order of names. */
function find<T>(m: Map<string, unknown>, names: string[], read: (v: unknown) => T | undefined): T | undefined {
  for (const n of names)
    for (const [k, v] of m) {
      if (k !== n && !k.endsWith('.' + n)) continue;
      const x = read(v);
      if (x !== undefined) return x;
    }
  return undefined;
}

const str = (v: unknown) => (typeof v === 'string' && v !== '' ? v : undefined);
const obj = (v: unknown): Record<string, unknown> | undefined => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : undefined);
const sum = (a?: number, b?: number) => (a === undefined && b === undefined ? undefined : (a ?? 0) + (b ?? 0));

/** spanUsage is what a span recorded of its model, tokens, cost and
 * latency; members it does not record are left out. */
export function spanUsage(s: Span): Usage {
  const u: Usage = {};
  // Langfuse observations carry these as members of their own.
  const ud = obj(s.usageDetails);
  const cd = obj(s.costDetails);
  u.model = str(s.model);
  if (ud) {
    u.input = num(ud.input);
    u.output = num(ud.output);
    u.total = num(ud.total);
  }
  if (cd && Object.keys(cd).length) u.cost = num(cd.total) ?? sum(num(cd.input), num(cd.output));
  const lat = num(s.latency);
  if (lat !== undefined) u.latencyMs = lat * 1000;

  const m = new Map<string, unknown>();
  flatten(s.attributes, '', m, 0);
  flatten(s.metadata, '', m, 0);
  if (!m.size) return clean(u);
  u.model ??= find(m, ['gen_ai.response.model', 'gen_ai.request.model', 'llm.model_name', 'model_name', 'model'], str);
  u.input ??= find(m, ['input_tokens', 'prompt_tokens', 'token_count.prompt', 'inputTokens', 'promptTokens'], num);
  u.output ??= find(m, ['output_tokens', 'completion_tokens', 'token_count.completion', 'outputTokens', 'completionTokens'], num);
  u.total ??= find(m, ['total_tokens', 'token_count.total', 'totalTokens', 'tokens'], num);
  u.cost ??=
    find(m, ['gen_ai.usage.cost', 'llm.cost.total', 'total_cost', 'totalCost'], num) ??
    sum(find(m, ['input_cost', 'llm.cost.prompt', 'prompt_cost'], num), find(m, ['output_cost', 'llm.cost.completion', 'completion_cost'], num));
  if (u.latencyMs === undefined) {
    const l = find(m, ['latency'], num);
    if (l !== undefined) u.latencyMs = l * 1000;
  }
  return clean(u);
}

function clean(u: Usage): Usage {
  for (const k of Object.keys(u) as (keyof Usage)[]) if (u[k] === undefined) delete u[k];
  return u;
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
