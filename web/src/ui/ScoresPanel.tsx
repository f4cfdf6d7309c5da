// Scores of a trace (internal/eval): the current grades, and buttons to
// grade the dataset's human criteria, with keys: 1-9 pick a choice of the
// first criterion still ungraded on this trace, g opens the next trace of
// the list that is not graded on it yet.
import { useEffect, useRef, useState } from 'preact/hooks';
import { api, type SavedCriterion, type Score } from '../lib/api';

interface Choice {
  label: string;
  value: unknown;
}

/** choicesOf lists what a human may answer on a criterion. */
export function choicesOf(c: SavedCriterion['definition']): Choice[] {
  if (c.type === 'label') return (c.choices ?? []).map((x) => ({ label: x, value: x }));
  if (c.type === 'number') return [];
  return [
    { label: 'pass', value: true },
    { label: 'fail', value: false },
  ];
}

function show(v: unknown): string {
  if (v === true) return 'pass';
  if (v === false) return 'fail';
  return typeof v === 'string' ? v : JSON.stringify(v);
}

function isTyping(t: EventTarget | null): boolean {
  return t instanceof HTMLInputElement || t instanceof HTMLTextAreaElement || t instanceof HTMLSelectElement || (t instanceof HTMLElement && t.isContentEditable);
}

export function ScoresPanel(props: {
  traceId: string;
  listIds: string[] | null; // the list the trace was opened from
  onOpen: (traceId: string) => void;
  onScores?: (scores: Score[]) => void;
  onDataset?: (datasetId: string) => void;
  readOnly?: boolean; // the reader may not grade: scores only
}) {
  const { traceId } = props;
  const [scores, setScores] = useState<Score[]>([]);
  const [human, setHuman] = useState<SavedCriterion[]>([]);
  const [datasetId, setDatasetId] = useState('');
  const [msg, setMsg] = useState('');
  const load = () =>
    api.scores(traceId).then(
      (r) => {
        setScores(r.scores);
        props.onScores?.(r.scores);
        if (r.dataset_id) {
          setDatasetId(r.dataset_id);
          props.onDataset?.(r.dataset_id);
        }
        return r.dataset_id;
      },
      (e) => setMsg(e.message),
    );
  useEffect(() => {
    load().then((ds) => {
      if (ds) api.criteria(ds).then((cs) => setHuman(cs.filter((c) => c.definition.evaluator === 'human')), () => setHuman([]));
    });
  }, [traceId]);

  const whole = scores.filter((s) => s.current && !s.address);
  const valueOf = (name: string) => whole.find((s) => s.criterion === name);
  const grade = async (c: SavedCriterion, v: unknown) => {
    try {
      await api.addScore(traceId, { criterion: c.name, value: v, source: 'human' });
      setMsg(`${c.name}: ${show(v)}`);
      await load();
    } catch (e) {
      setMsg((e as Error).message);
    }
  };
  const nextUngraded = async () => {
    const ids = props.listIds;
    if (!ids || !datasetId || !human.length) return setMsg('no list or no human criteria to grade');
    const graded = new Set<string>();
    const per = await Promise.all(human.map((c) => api.datasetScores(datasetId, c.name)));
    // A trace counts as graded once every human criterion has a score.
    const count = new Map<string, number>();
    per.forEach((list) => new Set(list.filter((s) => !s.address).map((s) => s.trace_id)).forEach((id) => count.set(id, (count.get(id) ?? 0) + 1)));
    count.forEach((n, id) => n === human.length && graded.add(id));
    const k = ids.indexOf(traceId);
    const next = [...ids.slice(k + 1), ...ids.slice(0, Math.max(0, k))].find((id) => !graded.has(id));
    if (next) props.onOpen(next);
    else setMsg('every trace of the list is graded');
  };

  // Keys, read through refs so that a listener registered once sees the
  // latest state.
  const grading = props.readOnly ? [] : human;
  const state = useRef({ human: grading, valueOf, grade, nextUngraded });
  state.current = { human: grading, valueOf, grade, nextUngraded };
  useEffect(() => {
    const onKey = (e: KeyboardEvent) => {
      if (e.ctrlKey || e.metaKey || e.altKey || isTyping(e.target)) return;
      const st = state.current;
      if (e.key === 'g') {
        e.preventDefault();
        st.nextUngraded();
        return;
      }
      if (/^[1-9]$/.test(e.key)) {
        const c = st.human.find((x) => !st.valueOf(x.name) && choicesOf(x.definition).length) ?? st.human.find((x) => choicesOf(x.definition).length);
        const ch = c ? choicesOf(c.definition)[Number(e.key) - 1] : undefined;
        if (c && ch) {
          e.preventDefault();
          st.grade(c, ch.value);
        }
      }
    };
    addEventListener('keydown', onKey);
    return () => removeEventListener('keydown', onKey);
  }, []);

  if (!scores.length && !grading.length) return null;
  return (
    <div class="scores panel">
      <h4>Scores</h4>
      {grading.map((c) => {
        const cur = valueOf(c.name);
        const choices = choicesOf(c.definition);
        return (
          <div class="grade" data-criterion={c.name}>
            <span class="grade-name">{c.name}</span>
            {choices.map((ch, i) => (
              <button
                type="button"
                class={`small choice ${cur && JSON.stringify(cur.value) === JSON.stringify(ch.value) ? 'on' : ''}`}
                title={`key ${i + 1}`}
                onClick={() => grade(c, ch.value)}
              >
                {i + 1} {ch.label}
              </button>
            ))}
            {!choices.length && (
              <input
                type="number"
                aria-label={`${c.name} score`}
                value={cur ? String(cur.value) : ''}
                onChange={(e) => e.currentTarget.value !== '' && grade(c, Number(e.currentTarget.value))}
              />
            )}
          </div>
        );
      })}
      {scores
        .filter((s) => s.current)
        .map((s) => (
          <div class="score" data-score={s.criterion}>
            <b>{s.criterion}</b>: <span class={`score-value ${s.value === false ? 'fail' : s.value === true ? 'pass' : ''}`}>{show(s.value)}</span>{' '}
            <span class="muted small">
              {s.source}
              {s.author ? ` · ${s.author}` : ''}
            </span>
            {s.address && (
              <a class="small" href={`#${s.address}`}>
                {' '}
                {s.address}
              </a>
            )}
          </div>
        ))}
      {grading.length > 0 && <p class="muted small keys">1-{Math.min(9, Math.max(...grading.map((c) => choicesOf(c.definition).length), 1))} grade · g next ungraded</p>}
      {msg && <p class="muted small grade-msg">{msg}</p>}
    </div>
  );
}
