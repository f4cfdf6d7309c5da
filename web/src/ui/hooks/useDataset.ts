import { useEffect, useLayoutEffect, useState } from 'preact/hooks';
import { api } from '../../lib/api';
import type { Dataset, TraceSummary } from '../../lib/types';
import { useLatest } from './useLatest';

/** toggleColumn is cols with metadata key k shown (on) or not, in the
 * order the reader picked them. */
export function toggleColumn(cols: readonly string[], k: string, on: boolean): string[] {
  return on ? [...cols, k] : cols.filter((c) => c !== k);
}

const colsKey = (datasetId: string) => 'lookout.cols.' + datasetId;

export interface DatasetState {
  ds: Dataset | null;
  setDs: (d: Dataset) => void;
  /** The metadata keys shown as columns, saved per dataset in the browser. */
  cols: string[];
  toggleColumn: (k: string, on: boolean) => void;
}

/** useDataset opens the dataset owner/name; onOpen hears of it and of its
 * first page of traces (null when that did not come) before it is shown.
 * A layout effect, not a deferred one: the answers are usually on their way
 * already (main.tsx), and the first rows then show in the next frame. */
export function useDataset(
  owner: string,
  name: string,
  opts: { onError: (msg: string) => void; onMissing?: () => void; onOpen: (ds: Dataset, first: { traces: TraceSummary[] } | null) => void },
): DatasetState {
  const [ds, setDs] = useState<Dataset | null>(null);
  const [cols, setCols] = useState<string[]>([]);
  const cb = useLatest(opts);
  useLayoutEffect(() => {
    api.openDataset(owner, name).then(
      ({ datasets: l, first }) => {
        if (!l.length) {
          if (cb.current.onMissing) cb.current.onMissing();
          else cb.current.onError(`no dataset ${owner}/${name} (or it is private)`);
        }
        else {
          cb.current.onOpen(l[0], first);
          setDs(l[0]);
          try {
            setCols(JSON.parse(localStorage.getItem(colsKey(l[0].id)) ?? '[]'));
          } catch {
            /* none saved */
          }
        }
      },
      (e) => cb.current.onError(e.message),
    );
  }, []);
  return {
    ds,
    setDs,
    cols,
    toggleColumn: (k, on) => {
      const n = toggleColumn(cols, k, on);
      setCols(n);
      if (ds) localStorage.setItem(colsKey(ds.id), JSON.stringify(n));
    },
  };
}

/** Evaluation status per trace id and criterion name. */
export type EvalStatuses = Record<string, Record<string, string>>;

/** useEvalStatus is the evaluation status of a dataset's traces, polled
 * every 2 s while a run is going on; refresh asks again (a run started). */
export function useEvalStatus(datasetId: string | undefined): { status: EvalStatuses | null; running: boolean; refresh: () => void } {
  const [status, setStatus] = useState<EvalStatuses | null>(null);
  const [running, setRunning] = useState(false);
  const [tick, setTick] = useState(0);
  useEffect(() => {
    if (!datasetId) return;
    let timer = 0;
    let stop = false;
    const load = () =>
      api.raw<{ traces: EvalStatuses; running?: string[] }>('GET', `/datasets/${encodeURIComponent(datasetId)}/eval/status`).then(
        (r) => {
          if (stop) return;
          setStatus(r.traces);
          setRunning(!!r.running?.length);
          if (r.running?.length) timer = window.setTimeout(load, 2000);
        },
        () => setStatus(null),
      );
    load();
    return () => {
      stop = true;
      clearTimeout(timer);
    };
  }, [datasetId, tick]);
  return { status, running, refresh: () => setTick((x) => x + 1) };
}
