// Shapes of the /api/v1 JSON API (internal/server) and of canonical traces
// (internal/trace). Everything from a trace is untrusted input.

export interface Dataset {
  id: string;
  name: string;
  owner: string;
  public: boolean;
  metadata: Record<string, unknown>;
  created_at: string;
  last_pushed?: string;
  trace_count: number;
}

/** TraceSummary is a row of a trace list: no trace content. The counts of
 * annotations and violations (the analyzer's annotations) are counted when
 * read; the rest is computed by the server when the trace is written. */
export interface TraceSummary {
  id: string;
  index: number;
  name?: string;
  metadata?: Record<string, unknown>;
  event_count: number;
  annotation_count: number;
  violation_count?: number;
  tool_call_count?: number;
  /** The first user message, at most 200 UTF-16 code units. */
  first_user?: string;
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
  /** US dollars, recorded by the source or priced from the server's table
   * (cost_estimated). */
  cost?: number;
  cost_estimated?: boolean;
  unpriced_spans?: number;
  duration_ms?: number;
  /** "pass" or "fail" by criterion, from the current scores. */
  verdicts?: Record<string, 'pass' | 'fail'>;
  /** The mean of the current scores (true 1, false 0) by criterion. */
  scores?: Record<string, number>;
  created_at: string;
}

export interface ToolCall {
  id?: string;
  type?: string;
  function: { name?: string; arguments?: unknown };
  [k: string]: unknown;
}

export interface Part {
  type?: string;
  text?: string;
  image_url?: string | { url?: string };
  [k: string]: unknown;
}

export interface TraceEvent {
  role?: string;
  content?: string | Part[] | null;
  tool_calls?: ToolCall[] | null;
  tool_call_id?: string;
  span_id?: string;
  [k: string]: unknown;
}

export interface Span {
  id: string;
  parent_id?: string;
  name?: string;
  kind?: string;
  start_time?: string;
  end_time?: string;
  status?: string;
  status_message?: string;
  attributes?: Record<string, unknown>;
  metadata?: Record<string, unknown>;
  inputs?: unknown;
  outputs?: unknown;
  value?: unknown;
  execution?: string;
  [k: string]: unknown;
}

export interface TraceAnnotation {
  address: string;
  content: string;
  [k: string]: unknown;
}

export interface Trace {
  id: string;
  name?: string;
  index?: number;
  metadata?: Record<string, unknown>;
  events: TraceEvent[];
  spans?: Span[];
  annotations?: TraceAnnotation[];
  [k: string]: unknown;
}

export interface Annotation {
  id: string;
  trace_id: string;
  address: string;
  content: string;
  source: string;
  author?: string;
  extra?: Record<string, unknown>;
  created_at: string;
  updated_at: string;
}

export interface Me {
  user: { id: string; name: string } | null;
  via: string;
  local_mode: boolean;
}

export interface DecodeError {
  file?: string;
  line?: number;
  col?: number;
  path?: string;
  trace?: number;
  message: string;
  text: string;
}

export interface UploadResult {
  dataset: Dataset;
  stored: number;
  ids: string[];
  skipped: DecodeError[];
}

/** SpanUsageJSON is one span's usage as the server reads it. */
export interface SpanUsageJSON {
  model?: string;
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
  cost?: number;
  cost_estimated?: boolean;
  latency_ms?: number;
  aggregate?: boolean;
}

/** TraceUsage is a trace's usage (GET /traces/{id}?usage=1): totals and
 * each span's; members not recorded are absent. */
export interface TraceUsage {
  input_tokens?: number;
  output_tokens?: number;
  total_tokens?: number;
  cost?: number;
  cost_estimated?: boolean;
  unpriced_spans?: number;
  duration_ms?: number;
  models?: string[];
  prices_as_of?: string;
  spans?: Record<string, SpanUsageJSON>;
}
