import { useEffect, useMemo, useState } from 'preact/hooks';
import { api } from '../../lib/api';
import type { Trace, TraceEvent, TraceUsage } from '../../lib/types';
import { useLatest } from './useLatest';

export interface TraceData {
  trace: Trace | null;
  /** What the trace used, as the server reads it; null until the whole
   * trace is in. */
  usage: TraceUsage | null;
  /** The first events are in, the whole trace is not yet. */
  partial: boolean;
  /** refresh fetches the whole trace again; it rejects on failure. */
  refresh: () => Promise<void>;
}

/** useTraceData loads a trace. The first events come in a small answer of
 * their own and show first; the whole trace (a 10,000-event trace is
 * megabytes) is asked for once they are on screen, since its arrival holds
 * the page's thread up. The trace is "partial" until it is in. onFull hears
 * of the whole trace when it first arrives. */
export function useTraceData(id: string, opts: { onError: (msg: string, status?: number) => void; onFull?: (t: Trace) => void }): TraceData {
  const [trace, setTrace] = useState<Trace | null>(null);
  const [usage, setUsage] = useState<TraceUsage | null>(null);
  const [partial, setPartial] = useState(false);
  const cb = useLatest(opts);
  useEffect(() => {
    performance.mark('lookout:trace-fetch');
    const loadFull = () =>
      api.traceUsage(id).then(
        ({ trace: t, usage: u }) => {
          performance.mark('lookout:trace-loaded');
          setTrace(t);
          setUsage(u);
          setPartial(false);
          cb.current.onFull?.(t);
        },
        (e) => cb.current.onError(e.message, e.status),
      );
    api.openHead(id).then(
      (h) => {
        if (!h.events.length) return loadFull();
        setTrace({ id: h.id, name: h.name, index: h.index, events: h.events });
        setPartial(true);
        requestAnimationFrame(() => setTimeout(loadFull, 0));
      },
      loadFull, // the whole trace answers, or reports the error
    );
  }, [id]);
  return {
    trace,
    usage,
    partial,
    refresh: () =>
      api.traceUsage(id).then(({ trace: t, usage: u }) => {
        setTrace(t);
        setUsage(u);
      }),
  };
}

/** useLiveTrace calls refresh when the server says the trace changed (spans
 * over OpenTelemetry, appended events, new annotations while its agent
 * runs), at most every 300 ms and never two at once. The stream is open
 * only while the tab is visible: browsers allow few connections per server
 * over HTTP/1.1, and background tabs must not take them all. */
export function useLiveTrace(id: string, refresh: () => Promise<unknown>, onError: (msg: string) => void) {
  const cb = useLatest({ refresh, onError });
  useEffect(() => {
    if (typeof EventSource === 'undefined') return;
    let es: EventSource | null = null;
    let timer = 0;
    let busy = false;
    const run = () => {
      if (busy) return void (timer = window.setTimeout(run, 300));
      busy = true;
      cb.current
        .refresh()
        .catch((e) => cb.current.onError(e.message))
        .finally(() => (busy = false));
    };
    const later = () => {
      clearTimeout(timer);
      timer = window.setTimeout(run, 300);
    };
    const open = () => {
      es = new EventSource(`/api/v1/traces/${encodeURIComponent(id)}/live`);
      es.addEventListener('changed', later);
    };
    const onVisibility = () => {
      if (document.hidden) {
        es?.close();
        es = null;
      } else if (!es) {
        open();
        later(); // what changed while hidden
      }
    };
    if (!document.hidden) open();
    document.addEventListener('visibilitychange', onVisibility);
    return () => {
      clearTimeout(timer);
      es?.close();
      document.removeEventListener('visibilitychange', onVisibility);
    };
  }, [id]);
}

export interface CallIndex {
  /** Tool call id → the event and position of the call. */
  callIndex: Map<string, { event: number; call: number }>;
  /** Tool call id → the event holding its output. */
  outputIndex: Map<string, number>;
}

/** callIndexes links tool calls and their outputs by call id; the first
 * call or output of an id wins. */
export function callIndexes(events: readonly TraceEvent[]): CallIndex {
  const callIndex = new Map<string, { event: number; call: number }>();
  const outputIndex = new Map<string, number>();
  events.forEach((e, i) => {
    (e.tool_calls ?? []).forEach((c, k) => c?.id && !callIndex.has(c.id) && callIndex.set(c.id, { event: i, call: k }));
    if (e.tool_call_id && !outputIndex.has(e.tool_call_id)) outputIndex.set(e.tool_call_id, i);
  });
  return { callIndex, outputIndex };
}

/** useCallIndex is callIndexes of the trace's events. */
export function useCallIndex(trace: Trace | null): CallIndex {
  return useMemo(() => callIndexes(trace?.events ?? []), [trace]);
}
