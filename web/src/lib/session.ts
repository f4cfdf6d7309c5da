// Sessions and users: the ids a trace's metadata names, as the server reads
// them (internal/trace.SessionAndUser), and the order of a session's traces.
import type { TraceSummary } from './types';

/** SESSION_KEYS and USER_KEYS are the top-level metadata keys that name a
 * trace's session and user, in order of precedence. */
export const SESSION_KEYS = ['session_id', 'session', 'sessionId'];
export const USER_KEYS = ['user_id', 'user', 'userId'];

function firstId(meta: Record<string, unknown> | undefined, keys: string[]): string {
  for (const k of keys) {
    const v = meta?.[k];
    if (typeof v === 'string' && v.trim() !== '') return v;
    if (typeof v === 'number' && Number.isFinite(v)) return String(v);
  }
  return '';
}

/** sessionOf is the trace's session id, or ''. */
export const sessionOf = (meta?: Record<string, unknown>) => firstId(meta, SESSION_KEYS);
/** userOf is the trace's user id, or ''. */
export const userOf = (meta?: Record<string, unknown>) => firstId(meta, USER_KEYS);

/** sessionQuery is the search query of a session's traces. */
export const sessionQuery = (id: string) => 'session:"' + id.replace(/[\\"]/g, (c) => '\\' + c) + '"';

export function sessionPath(owner: string, name: string, id: string): string {
  return `/datasets/${encodeURIComponent(owner)}/${encodeURIComponent(name)}/sessions/${encodeURIComponent(id)}`;
}

/** traceTime is when a trace happened, in ms: its metadata's timestamp or
 * start_time when it is a date (a Langfuse trace's timestamp), else when it
 * was stored. */
export function traceTime(t: TraceSummary): number {
  for (const k of ['timestamp', 'start_time']) {
    const v = t.metadata?.[k];
    if (typeof v === 'string') {
      const ms = Date.parse(v);
      if (!Number.isNaN(ms)) return ms;
    }
  }
  return Date.parse(t.created_at);
}

/** sessionOrder sorts a session's traces by time, then index. */
export function sessionOrder(ts: TraceSummary[]): TraceSummary[] {
  return [...ts].sort((a, b) => traceTime(a) - traceTime(b) || a.index - b.index);
}
