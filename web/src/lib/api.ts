// A thin client of the /api/v1 JSON API. Requests go to the same origin,
// so the session cookie and local mode apply.
import { readSSE } from './sse';
import type { Annotation, Dataset, DecodeError, Me, Trace, TraceSummary, TraceUsage, UploadResult } from './types';

export class ApiError extends Error {
  constructor(
    public status: number,
    public code: string,
    message: string,
    public details?: Record<string, unknown>,
  ) {
    super(message);
  }
}

// Answers the server embedded in the page (internal/server/ui.go bootData),
// by URL; each is used once, by the first GET of that URL.
const boot = new Map<string, unknown>();
try {
  const el = typeof document !== 'undefined' ? document.getElementById('lookout-boot') : null;
  if (el?.textContent) for (const [u, v] of Object.entries(JSON.parse(el.textContent))) boot.set(u, v);
} catch {
  /* no boot data: every answer comes from the API */
}

async function request<T>(method: string, path: string, body?: unknown): Promise<T> {
  if (method === 'GET' && boot.has('/api/v1' + path)) {
    const v = boot.get('/api/v1' + path);
    boot.delete('/api/v1' + path);
    return v as T;
  }
  const init: RequestInit = { method, headers: { Accept: 'application/json' }, credentials: 'same-origin' };
  if (body !== undefined) {
    init.body = JSON.stringify(body);
    (init.headers as Record<string, string>)['Content-Type'] = 'application/json';
  }
  const res = await fetch('/api/v1' + path, init);
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  let data: any = null;
  try {
    data = text ? JSON.parse(text) : null;
  } catch {
    throw new ApiError(res.status, 'bad_response', `${method} ${path}: ${res.status} ${text.slice(0, 200)}`);
  }
  if (!res.ok) {
    const e = data?.error ?? {};
    throw new ApiError(res.status, e.code ?? 'error', e.message ?? `${method} ${path}: ${res.status}`, e.details);
  }
  return data as T;
}

const enc = encodeURIComponent;

// A trace's first events, requested before the page renders (main.tsx
// starts the fetch as soon as the script runs), taken once by the trace
// page. The server names this URL as a preload of the page
// (internal/server/ui.go), so it must stay exactly as it is here.
const prefetchedHeads = new Map<string, Promise<EventsPage>>();

/** FIRST_EVENTS events come first, so that a long trace shows its first
 * screen before the whole of it has arrived. */
export const FIRST_EVENTS = 100;

/** EventsPage is a slice of a trace's events (GET /traces/{id}/events). */
export interface EventsPage {
  id: string;
  name?: string;
  index?: number;
  total: number;
  offset: number;
  events: Trace['events'];
}

const headURL = (id: string) => `/traces/${enc(id)}/events?limit=${FIRST_EVENTS}`;

/** prefetchTrace asks for a trace page's first events as the script runs.
 * The whole trace waits for them to be on screen (TracePage). */
export function prefetchTrace(id: string) {
  if (prefetchedHeads.has(id)) return;
  const p = request<EventsPage>('GET', headURL(id));
  // The page takes the answer later: a failure (an unknown trace's 404)
  // that comes first must not count as unhandled.
  p.catch(() => {});
  prefetchedHeads.set(id, p);
}

function takeHead(id: string): Promise<EventsPage> {
  const p = prefetchedHeads.get(id);
  prefetchedHeads.delete(id);
  return p ?? request<EventsPage>('GET', headURL(id));
}

/** FIRST_TRACES is the size of a dataset page's first page of traces (and
 * of every page of its list). */
export const FIRST_TRACES = 200;

/** OpenedDataset is a dataset looked up by owner and name, with the first
 * page of its traces. */
export interface OpenedDataset {
  datasets: Dataset[];
  /** sort is the order the first page is in ("key desc", as
   * useTraceList keys it). */
  first: { traces: TraceSummary[]; next: string; sort?: string } | null;
}

const prefetchedDatasets = new Map<string, Promise<OpenedDataset>>();

function openDataset(owner: string, name: string): Promise<OpenedDataset> {
  // In the order the page's URL asks (?sort=, ?order=), as the server
  // embeds it in the page.
  const sort = parseSort(location.search);
  return api.datasets({ owner, name }).then(async (datasets) => ({
    datasets,
    first: datasets.length
      ? await api.traces(datasets[0].id, '', FIRST_TRACES, sort).then(
          (r) => ({ ...r, sort: `${sort.key} ${sort.desc}` }),
          () => null,
        )
      : null,
  }));
}

/** prefetchDataset starts a dataset page's first requests as the script
 * runs (the server also names them as preloads of the page). */
export function prefetchDataset(owner: string, name: string) {
  const k = owner + '/' + name;
  if (prefetchedDatasets.has(k)) return;
  const p = openDataset(owner, name);
  p.catch(() => {}); // as in prefetchTrace
  prefetchedDatasets.set(k, p);
}

function takeDataset(owner: string, name: string): Promise<OpenedDataset> {
  const k = owner + '/' + name;
  const p = prefetchedDatasets.get(k);
  prefetchedDatasets.delete(k);
  return p ?? openDataset(owner, name);
}

export const api = {
  /** openDataset looks a dataset up with its first page of traces,
   * prefetched when possible. */
  openDataset: (owner: string, name: string) => takeDataset(owner, name),
  me: () => request<Me>('GET', '/me'),
  login: (name: string, password: string) => request<unknown>('POST', '/login', { name, password }),
  logout: () => request<void>('POST', '/logout'),
  datasets: async (q: { owner?: string; name?: string } = {}) => {
    const p = new URLSearchParams();
    if (q.owner) p.set('owner', q.owner);
    if (q.name) p.set('name', q.name);
    const qs = p.toString();
    return (await request<{ datasets: Dataset[] }>('GET', '/datasets' + (qs ? '?' + qs : ''))).datasets;
  },
  dataset: (id: string) => request<Dataset>('GET', `/datasets/${enc(id)}`),
  /** dashboard is a dataset's figures over [from, to) (ISO times; '' open). */
  dashboard: (id: string, from = '', to = '') => request<Dashboard>('GET', `/datasets/${enc(id)}/dashboard?from=${enc(from)}&to=${enc(to)}`),
  /** totals are a dataset's traces, tokens and cost. */
  totals: (id: string) => request<DashUsage>('GET', `/datasets/${enc(id)}/totals`),
  createDataset: (name: string, isPublic = false) => request<Dataset>('POST', '/datasets', { name, public: isPublic }),
  /** setPublic shares a dataset with everyone, or makes it private again. */
  setPublic: (id: string, isPublic: boolean) => request<Dataset>('PATCH', `/datasets/${enc(id)}`, { public: isPublic }),
  deleteDataset: (id: string) => request<void>('DELETE', `/datasets/${enc(id)}`),
  /** traces is a page of a dataset's trace list: after cursor, or, for a
   * sorted list (sort.key other than time, or desc), offset traces in. */
  traces: (id: string, cursor = '', limit = 100, sort?: ListSort, offset = 0) =>
    request<{ traces: TraceSummary[]; next: string }>(
      'GET',
      `/datasets/${enc(id)}/traces?limit=${limit}${cursor ? '&cursor=' + enc(cursor) : ''}${sortQuery(sort)}${offset ? '&offset=' + offset : ''}`,
    ),
  trace: (id: string) => request<Trace>('GET', `/traces/${enc(id)}`),
  /** traceUsage is the trace with what it used, as the server reads it. */
  traceUsage: (id: string) => request<{ trace: Trace; usage: TraceUsage }>('GET', `/traces/${enc(id)}?usage=1`),
  /** search runs a query over a dataset from the server's index. */
  search: (id: string, q: string, cursor = '', limit = 50) =>
    request<SearchPage>('GET', `/datasets/${enc(id)}/search?q=${enc(q)}&limit=${limit}${cursor ? '&cursor=' + enc(cursor) : ''}`),
  /** hits are where a query's texts occur in one trace. */
  hits: async (traceId: string, q: string) => (await request<{ hits: string[] }>('GET', `/traces/${enc(traceId)}/hits?q=${enc(q)}`)).hits,
  /** openHead is the first FIRST_EVENTS events, prefetched when possible. */
  openHead: (id: string) => takeHead(id),
  events: (id: string, offset: number, limit: number) => request<EventsPage>('GET', `/traces/${enc(id)}/events?offset=${offset}&limit=${limit}`),
  annotations: async (traceId: string) =>
    (await request<{ annotations: Annotation[] }>('GET', `/traces/${enc(traceId)}/annotations`)).annotations,
  createAnnotation: (traceId: string, a: { address: string; content: string; source?: string; extra?: Record<string, unknown> }) =>
    request<Annotation>('POST', `/traces/${enc(traceId)}/annotations`, a),
  updateAnnotation: (traceId: string, aid: string, a: { content?: string; extra?: Record<string, unknown> }) =>
    request<Annotation>('PUT', `/traces/${enc(traceId)}/annotations/${enc(aid)}`, a),
  deleteAnnotation: (traceId: string, aid: string) => request<void>('DELETE', `/traces/${enc(traceId)}/annotations/${enc(aid)}`),
  /** scores are a trace's current scores and the dataset it is in. */
  scores: (traceId: string) => request<{ scores: Score[]; dataset_id?: string }>('GET', `/traces/${enc(traceId)}/scores`),
  addScore: (traceId: string, sc: { criterion: string; value: unknown; address?: string; source?: string }) =>
    request<Score>('POST', `/traces/${enc(traceId)}/scores`, sc),
  datasetScores: async (datasetId: string, criterion: string) =>
    (await request<{ scores: Score[] }>('GET', `/datasets/${enc(datasetId)}/scores?criterion=${enc(criterion)}`)).scores,
  criteria: async (datasetId: string) => (await request<{ criteria: SavedCriterion[] }>('GET', `/datasets/${enc(datasetId)}/criteria`)).criteria,
  benchmarks: async () => (await request<{ benchmarks: Benchmark[] }>('GET', '/benchmarks')).benchmarks,
  leaderboard: async (id: string) => (await request<{ entries: BenchmarkResult[] }>('GET', `/benchmarks/${enc(id)}/leaderboard`)).entries,
  /** runBenchmark scores a dataset of the caller's against a benchmark,
   * reporting progress from the server's event stream. */
  runBenchmark: async (id: string, datasetId: string, progress: (done: number, total: number) => void) => {
    const res = await fetch(`/api/v1/benchmarks/${enc(id)}/runs`, {
      method: 'POST',
      headers: { Accept: 'text/event-stream', 'Content-Type': 'application/json' },
      credentials: 'same-origin',
      body: JSON.stringify({ dataset: datasetId }),
    });
    if (!res.ok) {
      const j = await res.json().catch(() => ({}));
      throw new ApiError(res.status, j?.error?.code ?? 'error', j?.error?.message ?? `benchmark run: ${res.status}`);
    }
    let result: BenchmarkResult | null = null;
    let failure = '';
    await readSSE(res, (ev, d) => {
      if (ev === 'progress') progress(d.done, d.total);
      else if (ev === 'done') result = d;
      else if (ev === 'error') failure = d?.error?.message ?? 'the run failed';
    });
    if (!result) throw new Error(failure || 'the run ended without a result');
    return result as BenchmarkResult;
  },
  raw: request,
};

/** Benchmark is one version of a named benchmark (internal/eval). */
export interface Benchmark {
  id: string;
  owner: string;
  name: string;
  version: number;
  description: string;
  public: boolean;
  key: string;
  item_count: number;
  created_at: string;
}

/** BenchmarkResult is a dataset's entry on a benchmark's leaderboard. */
export interface BenchmarkResult {
  dataset_id: string;
  dataset: string;
  owner: string;
  accuracy: number;
  summary: { tasks: number; covered: number; missing: number; traces: number; passed: number };
  created_at: string;
}

/** Snippet is a search hit with the text before and after it. */
export interface Snippet {
  before: string;
  match: string;
  after: string;
}

/** SearchPage is a page of a dataset search: matching traces in index
 * order with their hits (addresses with code point ranges) and the text
 * around the first hit, when it is in a string. */
export interface SearchPage {
  traces: (TraceSummary & { hits: string[]; snippet?: Snippet })[];
  next: string;
  total: number;
  total_is_estimate: boolean;
  plan: string;
}

/** Score is one grade of a trace or of a place in it (internal/eval). */
export interface Score {
  id: string;
  trace_id: string;
  address: string;
  criterion: string;
  value: unknown;
  comment?: string;
  source: string;
  author?: string;
  current: boolean;
}

/** SavedCriterion is a dataset's criterion as saved. */
export interface SavedCriterion {
  id: string;
  name: string;
  definition: { name: string; evaluator: string; type?: string; choices?: string[]; target?: string };
}

/** cursorAfter is the list cursor that starts after trace index i (the
 * server's cursor is the base64url of "i<index>"; see internal/store). */
export function cursorAfter(index: number): string {
  if (index < 0) return '';
  return btoa('i' + index).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

export interface UploadProgress {
  phase: 'sending' | 'reading' | 'storing';
  sent: number;
  total: number;
  traces: number;
  errors: number;
}

/** upload sends a file to a dataset with XMLHttpRequest (for upload
 * progress) and reads the server-sent progress events of the answer. */
export function upload(
  datasetId: string,
  file: File,
  opts: { skipInvalid: boolean },
  onProgress: (p: UploadProgress) => void,
): Promise<UploadResult> {
  return new Promise((resolve, reject) => {
    const xhr = new XMLHttpRequest();
    const q = new URLSearchParams({ filename: file.name, mode: opts.skipInvalid ? 'skip-invalid' : 'all-or-nothing' });
    xhr.open('POST', `/api/v1/datasets/${enc(datasetId)}/upload?${q}`);
    xhr.setRequestHeader('Accept', 'text/event-stream');
    xhr.setRequestHeader('Content-Type', 'application/octet-stream');
    let seen = 0;
    let buf = '';
    let result: UploadResult | null = null;
    let failure: ApiError | null = null;
    const total = file.size;
    xhr.upload.onprogress = (e) => onProgress({ phase: 'sending', sent: e.loaded, total, traces: 0, errors: 0 });
    const consume = () => {
      buf += xhr.responseText.slice(seen);
      seen = xhr.responseText.length;
      let k: number;
      while ((k = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, k);
        buf = buf.slice(k + 2);
        let name = 'message';
        let data = '';
        for (const line of block.split('\n')) {
          if (line.startsWith('event:')) name = line.slice(6).trim();
          else if (line.startsWith('data:')) data += line.slice(5).trim();
        }
        let v: any;
        try {
          v = JSON.parse(data);
        } catch {
          continue;
        }
        if (name === 'progress')
          onProgress({ phase: v.stage === 'storing' ? 'storing' : 'reading', sent: v.bytes, total, traces: v.traces, errors: v.errors });
        else if (name === 'done') result = v;
        else if (name === 'error') failure = new ApiError(422, v.error?.code ?? 'error', v.error?.message ?? 'upload failed', v.error?.details);
      }
    };
    xhr.onprogress = consume;
    xhr.onload = () => {
      if (xhr.status !== 200) {
        let e: any = {};
        try {
          e = JSON.parse(xhr.responseText).error ?? {};
        } catch {
          /* not JSON */
        }
        reject(new ApiError(xhr.status, e.code ?? 'error', e.message ?? `upload: ${xhr.status}`, e.details));
        return;
      }
      consume();
      if (result) resolve(result);
      else reject(failure ?? new ApiError(500, 'error', 'the upload ended without a result'));
    };
    xhr.onerror = () => reject(new ApiError(0, 'network', 'the upload failed (network error)'));
    xhr.send(file);
  });
}

export function decodeErrors(e: unknown): DecodeError[] {
  if (e instanceof ApiError && e.details && Array.isArray((e.details as any).errors)) return (e.details as any).errors;
  return [];
}

/** ListSort is the order of a trace list: key time (the default: by
 * index), duration, tokens, cost, violations or score:<criterion>. */
export interface ListSort {
  key: string;
  desc: boolean;
}

/** sorted reports whether a list sort is another than by index ascending. */
export const sorted = (s?: ListSort | null): s is ListSort => !!s && ((s.key !== '' && s.key !== 'time') || s.desc);

/** sortQuery is the list's query parameters of a sort ('' for the default). */
export function sortQuery(s?: ListSort | null): string {
  if (!sorted(s)) return '';
  return `&sort=${encodeURIComponent(s.key || 'time')}${s.desc ? '&order=desc' : ''}`;
}

/** parseSort reads a list sort from a page's query (?sort=key&order=desc). */
export function parseSort(search: string): ListSort {
  const p = new URLSearchParams(search);
  return { key: p.get('sort') || 'time', desc: p.get('order') === 'desc' };
}

/** DashUsage is tokens and cost of a time bucket, a model or a dataset
 * (GET /datasets/{id}/dashboard, /totals). */
export interface DashUsage {
  start?: string;
  traces?: number;
  model?: string;
  spans?: number;
  input_tokens: number;
  output_tokens: number;
  cost: number;
  cost_estimated: number;
  unpriced_spans: number;
}

export interface Percentiles {
  count: number;
  p50: number | null;
  p90: number | null;
  p99: number | null;
}

export interface Dashboard {
  from: string | null;
  to: string | null;
  bucket_seconds: number;
  totals: DashUsage;
  buckets: DashUsage[];
  models: DashUsage[];
  duration_ms: Percentiles;
  llm_latency_ms: Percentiles;
  policies: { id: string; name: string; traces: number; rate: number }[];
  criteria: { criterion: string; passed: number; failed: number; rate: number | null }[];
  tools: { name: string; calls: number; errors: number; error_rate: number }[];
}
