import { useEffect, useMemo, useRef } from 'preact/hooks';
import type { HighlightIndex } from '../lib/highlight';
import { collapseAll, collapseBranch, expandAll, expandBranch, fmtDuration, layoutTimes, spanTimes, toggle, visible, type Expanded, type Node, type Tree } from '../lib/tree';
import { costTitle, fmtCost, fmtTokens, noUsage, type Usage } from '../lib/usage';
import { fmtInt } from './common';
import type { Span } from '../lib/types';
import { CodeBlock, Rich } from './Rich';
import { VirtualList, type VirtualHandle } from './VirtualList';

/** useShowSelected scrolls a list of rows just enough to show the selected
 * span whenever the selection moves (by a key, or from a highlight). */
function useShowSelected(rows: Node[], selected: string | null) {
  const list = useRef<VirtualHandle | null>(null);
  useEffect(() => {
    const i = selected === null ? -1 : rows.findIndex((n) => n.span.id === selected);
    if (i >= 0) list.current?.scrollTo(i, 'nearest');
  }, [selected, rows]);
  return (h: VirtualHandle) => (list.current = h);
}

const ROW = 30;

/** Cost is a span's cost, marked "est." when priced from the table. */
export function Cost(props: { u: Usage }) {
  const { u } = props;
  return (
    <span class={`cost ${u.estimated ? 'estimated' : ''}`} title={costTitle(u.estimated)}>
      {fmtCost(u.cost ?? 0)}
      {u.estimated && <span class="est"> est.</span>}
    </span>
  );
}

/** tokenTitle spells a span's tokens out for the hover. */
function tokenTitle(u: Usage): string {
  return ['input', 'output', 'total'].filter((k) => u[k as keyof Usage] !== undefined).map((k) => `${k} ${fmtInt(u[k as 'input'] as number)}`).join(', ') + ' tokens';
}

/** duration is how long a span took: from its times, else as recorded. */
function duration(s: Span, u: Usage): number | undefined {
  const t = spanTimes(s);
  return t ? t[1] - t[0] : u.latencyMs;
}

function statusClass(s?: string): string {
  if (!s) return '';
  const u = s.toUpperCase();
  if (u === 'OK' || u === 'STATUS_CODE_OK' || u === 'SUCCESS') return 'st-ok';
  if (u.includes('ERR') || u.includes('FAIL')) return 'st-err';
  return 'st-other';
}

export interface TreeProps {
  tree: Tree;
  state: Expanded;
  setState: (s: Expanded) => void;
  selected: string | null;
  onSelect: (id: string) => void;
  scores?: Map<string, { criterion: string; value: unknown }[]>; // current scores by span id
  usage: Map<string, Usage>; // each span's usage, by span id (the server's)
}

function Toolbar(props: TreeProps) {
  const { tree, state, setState, selected } = props;
  return (
    <div class="tree-toolbar row">
      <button type="button" class="small" onClick={() => setState(expandAll(tree))}>
        Expand all
      </button>
      <button type="button" class="small" onClick={() => setState(collapseAll())}>
        Collapse all
      </button>
      <button type="button" class="small" disabled={!selected} onClick={() => selected && setState(expandBranch(tree, state, selected))}>
        Expand branch
      </button>
      <button type="button" class="small" disabled={!selected} onClick={() => selected && setState(collapseBranch(tree, state, selected))}>
        Collapse branch
      </button>
      <span class="muted">{tree.byId.size} spans</span>
    </div>
  );
}

export function TreeView(props: TreeProps) {
  const { tree, state, setState, selected, onSelect } = props;
  const rows = useMemo(() => visible(tree, state), [tree, state]);
  const handle = useShowSelected(rows, selected);
  const render = (i: number) => {
    const n = rows[i];
    const s = n.span;
    const u = props.usage.get(s.id) ?? noUsage;
    const tok = fmtTokens(u, fmtInt);
    const d = duration(s, u);
    const par = n.parent?.span.execution === 'parallel';
    return (
      <div
        class={`tree-row ${selected === s.id ? 'selected' : ''}`}
        aria-current={selected === s.id ? 'true' : undefined}
        data-span={s.id}
        style={{ paddingLeft: `${n.depth * 18 + 4}px` }}
        onClick={() => onSelect(s.id)}
        onDblClick={() => setState(toggle(state, s.id))}
      >
        <button
          type="button"
          class={`caret ${n.children.length ? '' : 'leaf'}`}
          aria-label={state.has(s.id) ? 'collapse' : 'expand'}
          aria-expanded={n.children.length ? state.has(s.id) : undefined}
          onClick={(e) => {
            e.stopPropagation();
            if (n.children.length) setState(toggle(state, s.id));
          }}
        >
          {n.children.length ? (state.has(s.id) ? '▾' : '▸') : '·'}
        </button>
        {par && (
          <span class="par" title="runs in parallel with its siblings">
            ∥
          </span>
        )}
        {s.kind && <span class={`badge kind kind-${s.kind.toLowerCase().replace(/[^a-z0-9]+/g, '-')}`}>{s.kind}</span>}
        <span class="tree-name ell">{s.name ?? s.id}</span>
        {(props.scores?.get(s.id) ?? []).map((sc) => (
          <span class={`badge step-score ${sc.value === false ? 'fail' : sc.value === true ? 'pass' : ''}`} title={`${sc.criterion}: ${JSON.stringify(sc.value)}`}>
            {sc.criterion} {sc.value === true ? '✓' : sc.value === false ? '✗' : String(sc.value)}
          </span>
        ))}
        {n.children.length > 0 && <span class="muted small">{n.children.length}</span>}
        <span class="spacer" />
        {u.model && <span class="model ell">{u.model}</span>}
        {tok && (
          <span class="tok" title={tokenTitle(u)}>
            {tok}
          </span>
        )}
        {u.cost !== undefined && <Cost u={u} />}
        {d !== undefined && <span class="lat">{fmtDuration(d)}</span>}
        {s.status && <span class={`status ${statusClass(s.status)}`}>{s.status}</span>}
      </div>
    );
  };
  return (
    <div class="tree">
      <Toolbar {...props} />
      <VirtualList class="tree-list" count={rows.length} estimate={ROW} fixed render={render} handle={handle} />
    </div>
  );
}

export function TimelineView(props: TreeProps) {
  const { tree, state, selected, onSelect } = props;
  const rows = useMemo(() => visible(tree, state), [tree, state]);
  const handle = useShowSelected(rows, selected);
  const times = useMemo(() => layoutTimes(tree, (s) => props.usage.get(s.id)?.latencyMs), [tree, props.usage]);
  const [t0, t1] = useMemo(() => {
    let a = Infinity;
    let b = -Infinity;
    for (const t of times.of.values()) {
      a = Math.min(a, t[0]);
      b = Math.max(b, t[1]);
    }
    return [a, b];
  }, [times]);
  if (!Number.isFinite(t0)) return <p class="empty timeline-empty">These spans have no start and end times, so there is no timeline. The tree shows their structure.</p>;
  const span = Math.max(t1 - t0, 0.001);
  const ticks = Array.from({ length: 6 }, (_, i) => i / 5);
  const render = (i: number) => {
    const n: Node = rows[i];
    const t = times.of.get(n.span.id);
    const left = t ? ((t[0] - t0) / span) * 100 : 0;
    const width = t ? Math.max(((t[1] - t[0]) / span) * 100, 0.3) : 0;
    return (
      <div class={`tl-row ${selected === n.span.id ? 'selected' : ''}`} data-span={n.span.id} onClick={() => onSelect(n.span.id)}>
        <span class="tl-label ell" style={{ paddingLeft: `${n.depth * 12}px` }} title={n.span.name}>
          {n.span.name ?? n.span.id}
        </span>
        <span class="tl-track">
          {t && (
            <span
              class={`tl-bar ${statusClass(n.span.status)}`}
              style={{ left: `${left}%`, width: `${width}%` }}
              title={`${n.span.name}: ${fmtDuration(t[1] - t[0])} from +${fmtDuration(t[0] - t0)}`}
            />
          )}
          {t && (
            <span class="tl-dur" style={{ left: `min(${left + width}%, calc(100% - 70px))` }}>
              {fmtDuration(t[1] - t[0])}
            </span>
          )}
        </span>
      </div>
    );
  };
  return (
    <div class="timeline">
      <Toolbar {...props} />
      {times.laidOut && <p class="muted small tl-note">No timestamps: laid out from each step's recorded latency, a step before its substeps.</p>}
      <div class="tl-axis">
        <span class="tl-label" />
        <span class="tl-track">
          {ticks.map((f) => (
            <span class="tl-tick" style={{ left: `${f * 100}%` }}>
              {fmtDuration(f * span)}
            </span>
          ))}
        </span>
      </div>
      <VirtualList class="tl-list" count={rows.length} estimate={28} fixed render={render} handle={handle} />
    </div>
  );
}

function json(v: unknown): string {
  return JSON.stringify(v, null, 2) ?? '';
}

/** SpanDetails shows a span's fields; string values carry highlights. */
export function SpanDetails(props: { span: Span; usage: Usage; hl: HighlightIndex; current: string | null; onEvents?: () => void; eventCount: number }) {
  const s = props.span;
  const u = props.usage;
  const d = duration(s, u);
  const tok = fmtTokens(u, fmtInt).replace(/ tok$/, '');
  const field = (name: string, v: unknown) => {
    if (v === undefined || v === null || (typeof v === 'object' && Object.keys(v as object).length === 0)) return null;
    const ranges = props.hl.span(s.id).filter((h) => h.field === name && h.start !== undefined);
    return (
      <div class="span-field">
        <h4>{name}</h4>
        {typeof v === 'string' ? (
          <Rich src={v} field={`spans.${s.id}.${name}`} ctx={{ ranges, current: props.current }} mode="markdown" />
        ) : (
          <CodeBlock src={json(v)} s={0} e={json(v).length} lang="json" ctx={{ ranges: [], current: null }} />
        )}
      </div>
    );
  };
  return (
    <div class="span-details" data-span-details={s.id}>
      <h3>
        {s.kind && <span class="badge kind">{s.kind}</span>} {s.name ?? s.id}
      </h3>
      <div class="kvs">
        <span class="kv">
          id: <code>{s.id}</code>
        </span>
        {s.status && <span class="kv">status: {s.status}</span>}
        {s.status_message && <span class="kv">{s.status_message}</span>}
        {u.model && <span class="kv">model: {u.model}</span>}
        {tok && (
          <span class="kv" title={tokenTitle(u)}>
            tokens: {tok}
            {u.total !== undefined && u.input !== undefined ? ` · ${fmtInt(u.total)} total` : ''}
          </span>
        )}
        {u.cost !== undefined && (
          <span class="kv" title={costTitle(u.estimated)}>
            cost: {fmtCost(u.cost)}
            {u.estimated && <span class="est"> est.</span>}
          </span>
        )}
        {u.aggregate && <span class="kv muted" title="these tokens add up the spans below it, and count once in the trace's totals">sum of the spans below</span>}
        {d !== undefined && <span class="kv">latency: {fmtDuration(d)}</span>}
        {s.start_time && <span class="kv">start: {s.start_time}</span>}
        {s.execution && <span class="kv">children: {s.execution}</span>}
        {props.eventCount > 0 && (
          <button type="button" class="link" onClick={props.onEvents}>
            {props.eventCount} events from this span
          </button>
        )}
      </div>
      {field('value', s.value)}
      {field('inputs', s.inputs)}
      {field('outputs', s.outputs)}
      {field('attributes', s.attributes)}
      {field('metadata', s.metadata)}
      {field('usageDetails', s.usageDetails)}
      {field('costDetails', s.costDetails)}
      {field('modelParameters', s.modelParameters)}
    </div>
  );
}
