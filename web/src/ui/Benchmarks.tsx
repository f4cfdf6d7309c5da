import { useEffect, useState } from 'preact/hooks';
import { api, type Benchmark, type BenchmarkResult } from '../lib/api';
import { datasetPath } from '../lib/router';
import type { Dataset } from '../lib/types';
import { fmtInt, fmtPercent } from './common';

/** Benchmarks lists the benchmarks the caller may see; each opens its
 * leaderboard, where the caller can score a dataset of theirs. */
export function Benchmarks(props: { mine: Dataset[]; onScored: () => void }) {
  const [list, setList] = useState<Benchmark[] | null>(null);
  const [err, setErr] = useState('');
  const [open, setOpen] = useState<string | null>(null);
  useEffect(() => {
    api.benchmarks().then(setList, (e) => setErr(e.message));
  }, []);
  if (list !== null && list.length === 0 && !err) return null;
  return (
    <section class="panel benchmarks">
      <h2>Benchmarks</h2>
      {err && <p class="error">{err}</p>}
      {list === null && !err && <p class="muted">Loading…</p>}
      {list && (
        <ul class="bench-list">
          {list.map((b) => (
            <li key={b.id} class="bench" data-benchmark={`${b.name}@${b.version}`}>
              <button type="button" class="link bench-toggle" aria-expanded={open === b.id} onClick={() => setOpen(open === b.id ? null : b.id)}>
                {b.owner}/{b.name}@{b.version}
              </button>{' '}
              <span class="muted">
                {fmtInt(b.item_count)} tasks by {b.key}
                {b.description ? ` — ${b.description}` : ''}
              </span>{' '}
              {b.public && <span class="badge">public</span>}
              {open === b.id && <Leaderboard bench={b} mine={props.mine} onScored={props.onScored} />}
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}

function Leaderboard(props: { bench: Benchmark; mine: Dataset[]; onScored: () => void }) {
  const [entries, setEntries] = useState<BenchmarkResult[] | null>(null);
  const [err, setErr] = useState('');
  const [pick, setPick] = useState('');
  const [busy, setBusy] = useState<string | null>(null);
  const load = () => api.leaderboard(props.bench.id).then(setEntries, (e) => setErr(e.message));
  useEffect(() => {
    load();
  }, [props.bench.id]);
  return (
    <div class="leaderboard">
      {err && <p class="error">{err}</p>}
      {entries && entries.length === 0 && <p class="muted">No dataset scored yet.</p>}
      {entries && entries.length > 0 && (
        <table class="grid">
          <thead>
            <tr>
              <th class="num">#</th>
              <th>Dataset</th>
              <th>Owner</th>
              <th class="num">Accuracy</th>
              <th class="num">Tasks covered</th>
              <th class="num">Traces passed</th>
            </tr>
          </thead>
          <tbody>
            {entries.map((e, i) => (
              <tr key={e.dataset_id} class="entry" data-dataset={e.dataset}>
                <td class="num">{i + 1}</td>
                <td>
                  <a href={datasetPath(e.owner, e.dataset)}>{e.dataset}</a>
                </td>
                <td>{e.owner}</td>
                <td class="num accuracy">{fmtPercent(e.accuracy)}</td>
                <td class="num">
                  {fmtInt(e.summary.covered)}/{fmtInt(e.summary.tasks)}
                </td>
                <td class="num">
                  {fmtInt(e.summary.passed)}/{fmtInt(e.summary.traces)}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {props.mine.length > 0 && (
        <form
          class="row"
          onSubmit={(ev) => {
            ev.preventDefault();
            if (!pick) return;
            setBusy('Scoring…');
            setErr('');
            api.runBenchmark(props.bench.id, pick, (done, total) => setBusy(`Scoring ${fmtInt(done)}/${fmtInt(total)}…`)).then(
              () => {
                setBusy(null);
                load();
                props.onScored();
              },
              (e) => {
                setBusy(null);
                setErr(e.message);
              },
            );
          }}
        >
          <select aria-label="dataset to score" value={pick} onChange={(e) => setPick(e.currentTarget.value)}>
            <option value="">dataset to score…</option>
            {props.mine.map((d) => (
              <option key={d.id} value={d.id}>
                {d.name}
              </option>
            ))}
          </select>
          <button type="submit" class="score-dataset" disabled={!pick || busy !== null}>
            Score
          </button>
          {busy && <span class="muted bench-progress">{busy}</span>}
        </form>
      )}
    </div>
  );
}
