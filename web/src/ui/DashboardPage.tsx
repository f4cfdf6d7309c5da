// A dataset's dashboard (GET /datasets/{id}/dashboard): traces, tokens and
// cost over time and by model, durations, violations by policy, pass
// rates by criterion, tool calls and errors. Charts are inline SVG drawn
// here; every text goes through JSX (no HTML is injected), and colours are
// the theme's variables so that dark mode holds.
import { useEffect, useState } from 'preact/hooks';
import { api, type Dashboard, type DashUsage, type Percentiles } from '../lib/api';
import { datasetPath } from '../lib/router';
import type { Dataset, Me } from '../lib/types';
import { fmtCost } from '../lib/usage';
import { fmtInt, DatasetNotFound } from './common';

/** The time ranges offered: the last so many hours, or all (0). */
export const RANGES: { key: string; label: string; hours: number }[] = [
  { key: '24h', label: 'Last 24 h', hours: 24 },
  { key: '7d', label: '7 days', hours: 24 * 7 },
  { key: '30d', label: '30 days', hours: 24 * 30 },
  { key: 'all', label: 'All', hours: 0 },
];

export function DashboardPage(props: { owner: string; name: string; me: Me | null }) {
  const { owner, name } = props;
  const [ds, setDs] = useState<Dataset | null>(null);
  const [missing, setMissing] = useState(false);
  const [range, setRange] = useState('all');
  const [dash, setDash] = useState<Dashboard | null>(null);
  const [err, setErr] = useState('');
  useEffect(() => {
    api.datasets({ owner, name }).then((found) => (found.length ? setDs(found[0]) : setMissing(true)), (e) => setErr(String(e.message ?? e)));
  }, [owner, name]);
  useEffect(() => {
    if (!ds) return;
    let stop = false;
    const hours = RANGES.find((r) => r.key === range)?.hours ?? 0;
    const from = hours ? new Date(Date.now() - hours * 3600e3).toISOString() : '';
    setDash(null);
    api.dashboard(ds.id, from).then(
      (d) => !stop && setDash(d),
      (e) => !stop && setErr(String(e.message ?? e)),
    );
    return () => {
      stop = true;
    };
  }, [ds, range]);

  if (missing) return <DatasetNotFound owner={owner} name={name} me={props.me} />;
  return (
    <div class="dashboard">
      <div class="dataset-head">
        <h2>
          <a href="/">datasets</a> / {owner} / <a href={datasetPath(owner, name)}>{name}</a> / dashboard
        </h2>
        <div class="range-picker" role="group" aria-label="time range">
          {RANGES.map((r) => (
            <button type="button" class={'small' + (r.key === range ? ' on' : '')} aria-pressed={r.key === range} data-range={r.key} onClick={() => setRange(r.key)}>
              {r.label}
            </button>
          ))}
        </div>
      </div>
      {err && <p class="error">{err}</p>}
      {!dash && !err && <p class="muted">Loading…</p>}
      {dash && <DashboardBody d={dash} />}
    </div>
  );
}

function DashboardBody({ d }: { d: Dashboard }) {
  const t = d.totals;
  const when = (s: string) => fmtWhen(s, d.bucket_seconds);
  return (
    <div class="dash-grid">
      <div class="dash-totals">
        <Stat label="traces" value={fmtInt(t.traces ?? 0)} id="traces" />
        <Stat label="tokens in" value={fmtInt(t.input_tokens)} id="input" />
        <Stat label="tokens out" value={fmtInt(t.output_tokens)} id="output" />
        <Stat label="cost" value={fmtCost(t.cost) + (t.cost_estimated > 0 ? ' est.' : '')} id="cost" title={costNote(t)} />
        <Stat label="tool calls" value={fmtInt(d.tools.reduce((n, x) => n + x.calls, 0))} id="tool-calls" />
      </div>
      <section class="dash-card" data-chart="traces">
        <h3>Traces over time</h3>
        <Bars values={d.buckets.map((b) => b.traces ?? 0)} labels={d.buckets.map((b) => when(b.start!))} fmt={fmtInt} color="var(--accent)" />
      </section>
      <section class="dash-card" data-chart="tokens">
        <h3>Tokens over time</h3>
        <Bars values={d.buckets.map((b) => b.input_tokens + b.output_tokens)} labels={d.buckets.map((b) => when(b.start!))} fmt={fmtInt} color="var(--assistant)" />
      </section>
      <section class="dash-card" data-chart="cost">
        <h3>Cost over time</h3>
        <Bars values={d.buckets.map((b) => b.cost)} labels={d.buckets.map((b) => when(b.start!))} fmt={fmtCost} color="var(--tool)" />
      </section>
      <section class="dash-card" data-chart="models">
        <h3>By model</h3>
        <HBars
          rows={d.models.map((m) => ({ key: m.model || '(no model)', value: m.input_tokens + m.output_tokens, note: `${fmtInt(m.input_tokens)} in · ${fmtInt(m.output_tokens)} out · ${fmtCost(m.cost)}${m.cost_estimated > 0 ? ' est.' : ''}` }))}
          empty="No span recorded a model or tokens."
        />
      </section>
      <section class="dash-card" data-chart="latency">
        <h3>Latency</h3>
        <table class="dash-table">
          <thead>
            <tr>
              <th />
              <th>count</th>
              <th>p50</th>
              <th>p90</th>
              <th>p99</th>
            </tr>
          </thead>
          <tbody>
            <PctRow label="trace duration" p={d.duration_ms} id="duration" />
            <PctRow label="model calls" p={d.llm_latency_ms} id="llm" />
          </tbody>
        </table>
      </section>
      <section class="dash-card" data-chart="policies">
        <h3>Violations by policy</h3>
        <HBars
          rows={d.policies.map((p) => ({ key: p.name || '(other policies)', value: p.rate, note: `${fmtInt(p.traces)} of ${fmtInt(t.traces ?? 0)} traces · ${pct(p.rate)}` }))}
          max={1}
          color="var(--danger)"
          empty="No saved policy."
        />
      </section>
      <section class="dash-card" data-chart="criteria">
        <h3>Evaluation pass rate</h3>
        <HBars
          rows={d.criteria.map((c) => ({ key: c.criterion, value: c.rate ?? 0, note: `${fmtInt(c.passed)} passed · ${fmtInt(c.failed)} failed · ${c.rate === null ? '–' : pct(c.rate)}` }))}
          max={1}
          color="var(--ok)"
          empty="No pass/fail score."
        />
      </section>
      <section class="dash-card dash-wide" data-chart="tools">
        <h3>Tool calls and errors</h3>
        <HBars
          rows={d.tools.map((x) => ({ key: x.name || '(unnamed)', value: x.calls, part: x.errors, note: `${fmtInt(x.calls)} calls · ${fmtInt(x.errors)} errors · ${pct(x.error_rate)}` }))}
          color="var(--tool)"
          empty="No tool call."
        />
      </section>
    </div>
  );
}

function costNote(t: DashUsage): string {
  const parts = [];
  if (t.cost_estimated > 0) parts.push(`${fmtCost(t.cost_estimated)} of it estimated from Lookout's price table`);
  if (t.unpriced_spans) parts.push(`${fmtInt(t.unpriced_spans)} spans with tokens have no known price and are left out`);
  return parts.join('; ') || 'cost recorded by the sources';
}

function Stat(props: { label: string; value: string; id: string; title?: string }) {
  return (
    <div class="dash-stat" data-stat={props.id} title={props.title}>
      <b>{props.value}</b>
      <span class="muted">{props.label}</span>
    </div>
  );
}

function PctRow({ label, p, id }: { label: string; p: Percentiles; id: string }) {
  return (
    <tr data-pct={id}>
      <th>{label}</th>
      <td>{fmtInt(p.count)}</td>
      <td>{fmtMs(p.p50)}</td>
      <td>{fmtMs(p.p90)}</td>
      <td>{fmtMs(p.p99)}</td>
    </tr>
  );
}

const pct = (x: number) => `${(x * 100).toFixed(1)}%`;

export function fmtMs(ms: number | null): string {
  if (ms === null) return '–';
  if (ms < 1000) return `${Math.round(ms)} ms`;
  if (ms < 60e3) return `${(ms / 1000).toFixed(1)} s`;
  return `${(ms / 60e3).toFixed(1)} min`;
}

/** fmtWhen writes a bucket's start as precisely as its width needs. */
function fmtWhen(iso: string, bucket: number): string {
  const s = new Date(iso).toISOString();
  return bucket >= 86400 ? s.slice(0, 10) : s.slice(5, 16).replace('T', ' ');
}

/** Bars is a column chart over the time buckets, in an SVG that scales to
 * its box; each bar has a title with its label and value. */
function Bars(props: { values: number[]; labels: string[]; fmt: (n: number) => string; color: string }) {
  const { values, labels } = props;
  const W = 600;
  const H = 160;
  const top = Math.max(...values, 0);
  if (!values.length || top === 0) return <p class="muted">Nothing in this range.</p>;
  const w = W / values.length;
  return (
    <svg class="chart" viewBox={`0 0 ${W} ${H + 18}`} preserveAspectRatio="none" role="img" aria-label={`max ${props.fmt(top)}`}>
      <line x1="0" y1={H} x2={W} y2={H} stroke="var(--line)" />
      {values.map((v, i) => {
        const h = (v / top) * (H - 14);
        return (
          <rect class="bar" x={i * w + w * 0.1} y={H - h} width={Math.max(w * 0.8, 1)} height={h} fill={props.color} data-value={v}>
            <title>{`${labels[i]}: ${props.fmt(v)}`}</title>
          </rect>
        );
      })}
      <text x="2" y="11" class="chart-text">
        {props.fmt(top)}
      </text>
      <text x="2" y={H + 14} class="chart-text">
        {labels[0]}
      </text>
      {labels.length > 1 && (
        <text x={W - 2} y={H + 14} text-anchor="end" class="chart-text">
          {labels[labels.length - 1]}
        </text>
      )}
    </svg>
  );
}

/** HBars is a list of labelled horizontal bars, part of each (errors)
 * drawn darker; the label and note are text beside the bar. */
function HBars(props: { rows: { key: string; value: number; part?: number; note: string }[]; max?: number; color?: string; empty: string }) {
  if (!props.rows.length) return <p class="muted">{props.empty}</p>;
  const top = props.max ?? Math.max(...props.rows.map((r) => r.value), 1);
  return (
    <ul class="hbars">
      {props.rows.map((r) => (
        <li data-key={r.key}>
          <span class="hbar-key ell" title={r.key}>
            {r.key}
          </span>
          <svg class="hbar" viewBox="0 0 100 10" preserveAspectRatio="none" aria-hidden="true">
            <rect x="0" y="0" width="100" height="10" fill="var(--line2)" />
            <rect x="0" y="0" width={(100 * r.value) / top} height="10" fill={props.color ?? 'var(--accent)'} />
            {!!r.part && <rect x="0" y="0" width={(100 * r.part) / top} height="10" fill="var(--danger)" />}
          </svg>
          <span class="hbar-note muted">{r.note}</span>
        </li>
      ))}
    </ul>
  );
}
