// Evaluation runs of a dataset (internal/eval): start a run of the saved
// criteria, follow its progress, read each criterion's pass rate or mean,
// and compare two runs trace by trace.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../lib/api';

export interface Run {
  id: string;
  name: string;
  state: string;
  error?: string;
  progress: { done: number; total: number; errors: number };
  summary?: { criterion: string; type: string; passed: number; failed: number; errors: number; rate: number | null; required: boolean; ok: boolean }[];
  created_at: string;
}

interface Change {
  trace_id: string;
  criterion: string;
  address: string;
  before: unknown;
  after: unknown;
}

/** rateText shows a summary's pass rate (bool) or mean (number). */
export function rateText(s: { type: string; rate: number | null }): string {
  if (s.rate === null) return '—';
  return s.type === 'number' ? s.rate.toFixed(2) : `${Math.round(s.rate * 1000) / 10}%`;
}

const enc = encodeURIComponent;

export function EvalPanel(props: { datasetId: string; canWrite: boolean; onStatus?: () => void }) {
  const { datasetId } = props;
  const [runs, setRuns] = useState<Run[]>([]);
  const [err, setErr] = useState('');
  const [a, setA] = useState('');
  const [b, setB] = useState('');
  const [changes, setChanges] = useState<Change[] | null>(null);
  // The list has no summaries: the five newest runs are read one by one.
  const load = () =>
    api
      .raw<{ runs: Run[] }>('GET', `/datasets/${enc(datasetId)}/eval/runs`)
      .then((r) => Promise.all(r.runs.map((run, i) => (i < 5 ? api.raw<Run>('GET', `/eval/runs/${enc(run.id)}`) : Promise.resolve(run)))))
      .then(setRuns, (e) => setErr(e.message));
  useEffect(() => {
    load();
  }, [datasetId]);
  // While a run goes on, follow it.
  const running = runs.some((r) => r.state === 'running');
  useEffect(() => {
    if (!running) return;
    const t = window.setInterval(() => load().then(() => props.onStatus?.()), 700);
    return () => clearInterval(t);
  }, [running]);

  const start = async () => {
    setErr('');
    try {
      await api.raw('POST', `/datasets/${enc(datasetId)}/eval/runs`, {});
      await load();
    } catch (e) {
      setErr((e as Error).message);
    }
  };
  const compare = async () => {
    if (!a || !b || a === b) return setErr('choose two runs');
    try {
      setChanges((await api.raw<{ changes: Change[] }>('GET', `/eval/runs/${enc(a)}/compare/${enc(b)}`)).changes);
      setErr('');
    } catch (e) {
      setErr((e as Error).message);
    }
  };
  const show = (v: unknown) => (v === true ? 'pass' : v === false ? 'fail' : v === null || v === undefined ? '—' : String(v));

  return (
    <div class="panel eval-panel">
      <h3>Evaluation</h3>
      {props.canWrite && (
        <button type="button" class="small start-run" onClick={start} disabled={running}>
          Run saved criteria
        </button>
      )}
      {runs.length === 0 && <p class="muted small">No evaluation runs yet (lookout eval, or save criteria and run them here).</p>}
      {runs.slice(0, 5).map((r) => (
        <div class="run" data-run={r.id} data-state={r.state}>
          <div class="run-head">
            <b>{r.name || r.id.slice(0, 8)}</b> <span class="muted small">{r.state}</span>{' '}
            {r.state === 'running' && <progress max={r.progress.total || 1} value={r.progress.done} />}
            <span class="muted small">
              {' '}
              {r.progress.done}/{r.progress.total}
            </span>
          </div>
          {r.error && <p class="error small">{r.error}</p>}
          {(r.summary ?? []).map((s) => (
            <div class={`run-crit ${s.ok ? '' : 'below'}`} data-criterion={s.criterion}>
              {s.criterion}: <b class="rate">{rateText(s)}</b>{' '}
              <span class="muted small">
                {s.passed} passed, {s.failed} failed{s.errors ? `, ${s.errors} errors` : ''}
                {s.required ? ' · required' : ''}
              </span>
            </div>
          ))}
        </div>
      ))}
      {runs.length >= 2 && (
        <div class="compare">
          <select aria-label="first run" value={a} onChange={(e) => setA(e.currentTarget.value)}>
            <option value="">run…</option>
            {runs.map((r) => (
              <option value={r.id}>{r.name || r.id.slice(0, 8)}</option>
            ))}
          </select>
          <select aria-label="second run" value={b} onChange={(e) => setB(e.currentTarget.value)}>
            <option value="">run…</option>
            {runs.map((r) => (
              <option value={r.id}>{r.name || r.id.slice(0, 8)}</option>
            ))}
          </select>
          <button type="button" class="small" onClick={compare}>
            Compare
          </button>
        </div>
      )}
      {changes && (
        <div class="changes">
          <p class="muted small">{changes.length} changed verdicts</p>
          {changes.slice(0, 100).map((c) => (
            <div class="change">
              <a href={`/traces/${enc(c.trace_id)}${c.address ? '#' + c.address : ''}`}>{c.trace_id.slice(0, 8)}</a> {c.criterion}: {show(c.before)} → {show(c.after)}
            </div>
          ))}
        </div>
      )}
      {err && <p class="error small">{err}</p>}
    </div>
  );
}
