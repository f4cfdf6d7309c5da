// Write, save and run a guardrail policy over a dataset (internal/server
// policy.go): syntax colouring, errors at line:col, live progress, the list
// of flagged traces to filter to, and each saved policy's mode (what the
// gateway does with a violation: block the call, or only log it).
import type { ComponentChildren } from 'preact';
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError } from '../lib/api';
import { tokenizeCode } from '../lib/markdown';
import { readSSE } from '../lib/sse';

type Mode = 'block' | 'log';

interface Policy {
  id: string;
  name: string;
  source: string;
  mode: Mode;
  updated_at?: string;
}

const INDENT = '    ';

/** editKey is what Tab, Shift+Tab or Enter does to the text with the
 * selection [s, e): the range of it to replace, the new text and where the
 * caret or selection goes; null for other keys. Tab indents (every line of
 * a selection), Shift+Tab takes up to one indent off
 * the lines, Enter keeps the line's indentation and adds one after a line
 * ending with a colon. */
export function editKey(src: string, s: number, e: number, key: string, shift: boolean): { from: number; to: number; text: string; selStart: number; selEnd: number } | null {
  const lineStart = (at: number) => src.lastIndexOf('\n', at - 1) + 1;
  if (key === 'Enter' && !shift) {
    const ls = lineStart(s);
    const indent = /^[ \t]*/.exec(src.slice(ls, s))![0];
    const more = /:\s*$/.test(src.slice(ls, s)) ? INDENT : '';
    const text = '\n' + indent + more;
    return { from: s, to: e, text, selStart: s + text.length, selEnd: s + text.length };
  }
  if (key !== 'Tab') return null;
  // A selection, even within a line, indents its lines as a block.
  const multi = s !== e;
  if (!shift && !multi) return { from: s, to: e, text: INDENT, selStart: s + INDENT.length, selEnd: s + INDENT.length };
  const from = lineStart(s);
  // A selection ending at the start of a line leaves that line alone.
  const last = e > s && src[e - 1] === '\n' ? e - 1 : e;
  let to = src.indexOf('\n', last);
  if (to < 0) to = src.length;
  const lines = src.slice(from, to).split('\n');
  let firstDelta = 0;
  const out = lines.map((l, k) => {
    let d: number;
    let nl: string;
    if (shift) {
      const n = /^ {0,4}/.exec(l)![0].length || (l.startsWith('\t') ? 1 : 0);
      nl = l.slice(n);
      d = -n;
    } else {
      nl = INDENT + l;
      d = INDENT.length;
    }
    if (k === 0) firstDelta = d;
    return nl;
  });
  const text = out.join('\n');
  const delta = text.length - (to - from);
  return { from, to, text, selStart: Math.max(from, s + firstDelta), selEnd: multi ? e + delta : Math.max(from, e + firstDelta) };
}

/** lastKey is where the policy last opened on a dataset is remembered, so
 * that a reload opens it again. */
const lastKey = (datasetId: string) => `lookout.policy.${datasetId}`;
function remember(datasetId: string, id: string) {
  try {
    // '' (a new policy chosen) is remembered too: the reload opens the example.
    localStorage.setItem(lastKey(datasetId), id);
  } catch {
    /* storage refused: nothing to remember */
  }
}
function recall(datasetId: string): string | null {
  try {
    return localStorage.getItem(lastKey(datasetId));
  } catch {
    return null;
  }
}

/** ModeSelect picks a policy's mode. */
function ModeSelect(props: { value: Mode; label: string; class?: string; onChange: (m: Mode) => void }) {
  return (
    <select
      class={props.class}
      value={props.value}
      aria-label={props.label}
      title="what the gateway does with a violation: block the call, or only log it"
      onChange={(e) => props.onChange(e.currentTarget.value as Mode)}
    >
      <option value="log">log</option>
      <option value="block">block</option>
    </select>
  );
}

interface Diagnostic {
  line: number;
  col: number;
  message: string;
  class?: string;
}

export const examplePolicy = `raise "tool call after a refusal" if:
    (msg: Message)
    (call: ToolCall)
    msg -> call
    "cannot" in msg.content
`;

function diagnostics(e: unknown): Diagnostic[] {
  if (!(e instanceof ApiError) || !e.details) return [];
  const d = e.details as any;
  if (Array.isArray(d.diagnostics) && d.diagnostics.length) return d.diagnostics;
  if (typeof d.line === 'number') return [{ line: d.line, col: d.col ?? 0, message: e.message, class: d.class }];
  return [];
}

function Editor(props: { value: string; onInput: (s: string) => void; onFocus: () => void; errLines: Set<number> }) {
  const pre = useRef<HTMLPreElement>(null);
  const src = props.value;
  const toks = tokenizeCode(src, 0, src.length, 'py');
  const out: ComponentChildren[] = [];
  let at = 0;
  for (const t of toks) {
    if (t.s > at) out.push(src.slice(at, t.s));
    out.push(<span class={t.cls}>{src.slice(t.s, t.e)}</span>);
    at = t.e;
  }
  out.push(src.slice(at) + '\n');
  const lines = src.split('\n').length;
  return (
    <div class="editor">
      <div class="gutter" aria-hidden="true">
        {Array.from({ length: lines }, (_, i) => (
          <div class={props.errLines.has(i + 1) ? 'gl err' : 'gl'}>{i + 1}</div>
        ))}
      </div>
      <div class="editor-body">
        <pre class="editor-hl" ref={pre} aria-hidden="true">
          {out}
        </pre>
        <textarea
          class="editor-input"
          spellcheck={false}
          value={src}
          aria-label="policy source"
          onInput={(e) => props.onInput(e.currentTarget.value)}
          onFocus={props.onFocus}
          onKeyDown={(ev) => {
            if (ev.ctrlKey || ev.metaKey || ev.altKey || ev.isComposing) return;
            const ta = ev.currentTarget;
            const ed = editKey(ta.value, ta.selectionStart, ta.selectionEnd, ev.key, ev.shiftKey);
            if (!ed) return;
            ev.preventDefault();
            ta.setSelectionRange(ed.from, ed.to);
            // insertText keeps the browser's undo history; setRangeText is
            // the fallback where it is not supported.
            if (!document.execCommand('insertText', false, ed.text)) {
              ta.setRangeText(ed.text, ed.from, ed.to, 'end');
              ta.dispatchEvent(new Event('input', { bubbles: true }));
            }
            ta.setSelectionRange(ed.selStart, ed.selEnd);
          }}
          onScroll={(e) => {
            if (pre.current) {
              pre.current.scrollTop = e.currentTarget.scrollTop;
              pre.current.scrollLeft = e.currentTarget.scrollLeft;
            }
          }}
        />
      </div>
    </div>
  );
}

export interface CheckState {
  running: boolean;
  total: number;
  checked: number;
  failed: number;
  errored: number;
  violations: number;
  flagged: string[];
  error: string;
}

export function PolicyPanel(props: { datasetId: string; canWrite: boolean; onFlagged: (ids: string[]) => void; onChecked?: () => void }) {
  const { datasetId } = props;
  const [policies, setPolicies] = useState<Policy[]>([]);
  const [sel, setSel] = useState<string>('');
  const [name, setName] = useState('no-tool-after-refusal');
  const [src, setSrc] = useState(examplePolicy);
  const [mode, setMode] = useState<Mode>('log');
  const [diags, setDiags] = useState<Diagnostic[]>([]);
  const [msg, setMsg] = useState('');
  const [check, setCheck] = useState<CheckState | null>(null);
  const [ok, setOk] = useState(false); // the last syntax check passed
  const abort = useRef<AbortController | null>(null);
  const opened = useRef(false);
  // The user is in the editor: a late list does not replace its text. Focus
  // counts, not only input: a select-all before typing would otherwise be
  // undone by the list, and the typing land after the opened policy.
  const touched = useRef(false);
  const open = (p: Policy) => {
    setSel(p.id);
    setName(p.name);
    setSrc(p.source);
    setMode(p.mode ?? 'log');
  };
  const load = () =>
    api.raw<{ policies: Policy[] }>('GET', `/datasets/${encodeURIComponent(datasetId)}/policies`).then(
      (r) => {
        const ps = r.policies ?? [];
        setPolicies(ps);
        // On first load the editor opens the policy last opened or saved
        // here, else the one saved last, rather than the example (unless
        // the user went into the editor before the list came).
        if (!opened.current && ps.length && !touched.current) {
          const want = recall(datasetId);
          const p = ps.find((x) => x.id === want) ?? [...ps].sort((a, b) => (b.updated_at ?? '').localeCompare(a.updated_at ?? ''))[0];
          if (want !== '' && p) open(p);
        }
        opened.current = true;
      },
      () => setPolicies([]),
    );
  useEffect(() => {
    load();
    return () => abort.current?.abort();
  }, [datasetId]);

  const validate = async (): Promise<boolean> => {
    setMsg('');
    setOk(false);
    try {
      await api.raw('POST', '/policy/check', { policy: src, messages: [] });
      setDiags([]);
      setOk(true);
      return true;
    } catch (e) {
      const d = diagnostics(e);
      setDiags(d.length ? d : [{ line: 0, col: 0, message: (e as Error).message }]);
      return false;
    }
  };
  const save = async (): Promise<string | null> => {
    setMsg('');
    try {
      const body = { name: name.trim(), source: src, mode };
      const p = sel
        ? await api.raw<Policy>('PUT', `/datasets/${encodeURIComponent(datasetId)}/policies/${encodeURIComponent(sel)}`, body)
        : await api.raw<Policy>('POST', `/datasets/${encodeURIComponent(datasetId)}/policies`, body);
      setDiags([]);
      setSel(p.id);
      remember(datasetId, p.id);
      setMsg(`saved ${p.name}`);
      load();
      return p.id;
    } catch (e) {
      const d = diagnostics(e);
      setDiags(d);
      if (!d.length) setMsg((e as Error).message);
      return null;
    }
  };
  // setPolicyMode saves a saved policy's new mode at once.
  const setPolicyMode = async (p: Policy, m: Mode) => {
    setMsg('');
    try {
      const out = await api.raw<Policy>('PUT', `/datasets/${encodeURIComponent(datasetId)}/policies/${encodeURIComponent(p.id)}`, { mode: m });
      setPolicies((ps) => ps.map((x) => (x.id === out.id ? out : x)));
      if (sel === out.id) setMode(out.mode);
      setMsg(`${out.name}: mode ${out.mode}`);
    } catch (e) {
      setMsg((e as Error).message);
      load();
    }
  };
  const run = async () => {
    const id = await save();
    if (!id) return;
    abort.current?.abort();
    const ac = new AbortController();
    abort.current = ac;
    const st: CheckState = { running: true, total: 0, checked: 0, failed: 0, errored: 0, violations: 0, flagged: [], error: '' };
    setCheck({ ...st });
    try {
      const res = await fetch(`/api/v1/datasets/${encodeURIComponent(datasetId)}/policies/${encodeURIComponent(id)}/check`, {
        method: 'POST',
        headers: { Accept: 'text/event-stream', 'Content-Type': 'application/json' },
        body: '{}',
        signal: ac.signal,
      });
      if (!res.ok) {
        const j = await res.json().catch(() => ({}));
        throw new Error(j?.error?.message ?? `check: ${res.status}`);
      }
      let last = 0;
      await readSSE(
        res,
        (ev, d) => {
          if (d.metadata) st.total = d.metadata.num_traces ?? 0;
          else if (ev === 'done') {
            st.running = false;
            st.violations = d.violations ?? st.violations;
          } else if (ev === 'error') st.error = d?.error?.message ?? 'the check failed';
          else if (d.trace_id) {
            st.checked++;
            if (d.status === 'failed') {
              st.failed++;
              st.flagged.push(d.trace_id);
              st.violations += (d.errors ?? []).length;
            } else if (d.status === 'error') st.errored++;
          }
          const now = performance.now();
          if (now - last > 100 || ev === 'done') {
            last = now;
            setCheck({ ...st, flagged: [...st.flagged] });
          }
        },
        ac.signal,
      );
    } catch (e) {
      if (!ac.signal.aborted) st.error = (e as Error).message;
    }
    st.running = false;
    setCheck({ ...st, flagged: [...st.flagged] });
    // The run wrote its violations as annotations: the list shows them.
    if (!ac.signal.aborted) props.onChecked?.();
  };
  const errLines = new Set(diags.map((d) => d.line));
  return (
    <section class="panel policy-panel">
      <h3>Policies</h3>
      <div class="row">
        <select
          value={sel}
          aria-label="saved policy"
          onChange={(e) => {
            const id = e.currentTarget.value;
            setSel(id);
            remember(datasetId, id);
            const p = policies.find((x) => x.id === id);
            if (p) open(p);
          }}
        >
          <option value="">new policy</option>
          {policies.map((p) => (
            <option value={p.id}>{p.name}</option>
          ))}
        </select>
        <input value={name} onInput={(e) => setName(e.currentTarget.value)} aria-label="policy name" placeholder="policy name" />
        <label class="muted">
          mode <ModeSelect value={mode} label="policy mode" onChange={setMode} />
        </label>
      </div>
      {policies.length > 0 && (
        <ul class="policy-modes">
          {policies.map((p) => (
            <li data-policy={p.name}>
              <span class="policy-name">{p.name}</span>
              {props.canWrite ? (
                <ModeSelect value={p.mode} label={`mode of ${p.name}`} class="policy-mode" onChange={(m) => setPolicyMode(p, m)} />
              ) : (
                <span class={`badge mode-${p.mode}`}>{p.mode}</span>
              )}
            </li>
          ))}
        </ul>
      )}
      <Editor
        value={src}
        onFocus={() => {
          touched.current = true;
        }}
        onInput={(v) => {
          touched.current = true;
          setSrc(v);
          setOk(false);
        }}
        errLines={errLines}
      />
      {diags.length > 0 && (
        <ul class="diags">
          {diags.map((d) => (
            <li class="error">
              {d.line ? `${d.line}:${d.col}: ` : ''}
              {d.message}
            </li>
          ))}
        </ul>
      )}
      <div class="row">
        <button type="button" onClick={validate}>
          Check syntax
        </button>
        {props.canWrite && (
          <button type="button" onClick={save}>
            Save
          </button>
        )}
        {props.canWrite && (
          <button type="button" class="primary run-policy" onClick={run} disabled={check?.running}>
            Save and run on dataset
          </button>
        )}
        {ok && diags.length === 0 && (
          <span class="ok syntax-ok" role="status">
            ✓ syntax OK
          </span>
        )}
        {msg && <span class="muted">{msg}</span>}
      </div>
      {check && (
        <div class="check-progress">
          <progress max={check.total || 1} value={check.checked} />
          <span class="check-status">
            {check.running ? 'checking' : 'checked'} {check.checked}/{check.total}: {check.failed} flagged, {check.violations} violations
            {check.errored ? `, ${check.errored} errors` : ''}
          </span>
          {check.error && <span class="error">{check.error}</span>}
          {!check.running && check.flagged.length > 0 && (
            <button type="button" class="show-flagged" onClick={() => props.onFlagged(check.flagged)}>
              Show the {check.flagged.length} flagged traces
            </button>
          )}
        </div>
      )}
    </section>
  );
}
