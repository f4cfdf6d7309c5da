import { useEffect, useRef, useState } from 'preact/hooks';
import { api, ApiError, decodeErrors, upload, type UploadProgress } from '../lib/api';
import { datasetPath } from '../lib/router';
import type { Dataset, DecodeError, Me, UploadResult } from '../lib/types';
import { Benchmarks } from './Benchmarks';
import { Confirm, fmtBytes, fmtTime, openLogin, scalar, scalarEntries, fmtInt } from './common';

export function Home(props: { me: Me | null }) {
  const [datasets, setDatasets] = useState<Dataset[] | null>(null);
  const [err, setErr] = useState('');
  const [del, setDel] = useState<Dataset | null>(null);
  const load = () => api.datasets().then(setDatasets, (e) => setErr(e.message));
  useEffect(() => {
    load();
  }, []);
  const canWrite = !!props.me?.user;
  const mine = (d: Dataset) => props.me?.user?.name === d.owner;
  return (
    <div class="home">
      <section class="panel">
        <h2>Datasets</h2>
        {err && <p class="error">{err}</p>}
        {datasets === null && !err && <p class="muted">Loading…</p>}
        {datasets && datasets.length === 0 && (
          <p class="muted">
            {canWrite ? (
              'No datasets yet. Create one or upload a file below.'
            ) : props.me ? (
              <>
                No public datasets yet.{' '}
                <button type="button" class="link" onClick={openLogin}>
                  Log in
                </button>{' '}
                to create datasets and upload traces.
              </>
            ) : (
              'No datasets yet.'
            )}
          </p>
        )}
        {datasets && datasets.length > 0 && (
          <table class="grid datasets">
            <thead>
              <tr>
                <th>Name</th>
                <th>Owner</th>
                <th class="num">Traces</th>
                <th>Last pushed</th>
                <th>Metadata</th>
                <th />
              </tr>
            </thead>
            <tbody>
              {datasets.map((d) => (
                <tr key={d.id} data-dataset={d.name}>
                  <td>
                    <a href={datasetPath(d.owner, d.name)}>{d.name}</a> {d.public && <span class="badge">public</span>}
                  </td>
                  <td data-label="owner">{d.owner}</td>
                  <td class="num" data-label="traces">
                    {fmtInt(d.trace_count)}
                  </td>
                  <td data-label="last pushed">{fmtTime(d.last_pushed)}</td>
                  <td class="meta-cell">
                    {scalarEntries(d.metadata)
                      .slice(0, 4)
                      .map(([k, v]) => (
                        <span class="kv">
                          {k}: <b>{scalar(v)}</b>
                        </span>
                      ))}
                  </td>
                  <td>
                    {mine(d) && (
                      <button type="button" class="danger small" onClick={() => setDel(d)}>
                        Delete
                      </button>
                    )}
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>
      <Benchmarks mine={canWrite ? (datasets ?? []).filter(mine) : []} onScored={load} />
      {canWrite && <Create onDone={load} />}
      {canWrite && <Upload datasets={(datasets ?? []).filter(mine)} onDone={load} />}
      {!canWrite && props.me && !!datasets?.length && <p class="muted">Log in to create datasets and upload traces.</p>}
      {del && (
        <Confirm
          title={`Delete ${del.name}?`}
          body={
            <p>
              This deletes the dataset <b>{del.name}</b> with its {fmtInt(del.trace_count)} traces and their annotations. It cannot be undone.
            </p>
          }
          action="Delete"
          onNo={() => setDel(null)}
          onYes={() => {
            const d = del;
            setDel(null);
            api.deleteDataset(d.id).then(load, (e) => setErr(e.message));
          }}
        />
      )}
    </div>
  );
}

function Create(props: { onDone: () => void }) {
  const [name, setName] = useState('');
  const [pub, setPub] = useState(false);
  const [err, setErr] = useState('');
  return (
    <section class="panel">
      <h2>New dataset</h2>
      <form
        class="row"
        onSubmit={(e) => {
          e.preventDefault();
          setErr('');
          api.createDataset(name.trim(), pub).then(
            () => {
              setName('');
              props.onDone();
            },
            (x) => setErr(x.message),
          );
        }}
      >
        <input name="name" placeholder="dataset name" value={name} onInput={(e) => setName(e.currentTarget.value)} required />
        <label>
          <input type="checkbox" checked={pub} onChange={(e) => setPub(e.currentTarget.checked)} /> public
        </label>
        <button type="submit">Create</button>
        {err && <span class="error">{err}</span>}
      </form>
    </section>
  );
}

function Upload(props: { datasets: Dataset[]; onDone: () => void }) {
  const [target, setTarget] = useState('');
  const [newName, setNewName] = useState('');
  const [skip, setSkip] = useState(false);
  const [prog, setProg] = useState<UploadProgress | null>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<UploadResult | null>(null);
  const [err, setErr] = useState('');
  const [errors, setErrors] = useState<DecodeError[]>([]);
  const file = useRef<HTMLInputElement>(null);
  const go = async () => {
    const f = file.current?.files?.[0];
    if (!f) return setErr('choose a file');
    setErr('');
    setErrors([]);
    setResult(null);
    setBusy(true);
    try {
      let id = target;
      if (!id) {
        const name = newName.trim() || f.name.replace(/\.[^.]*$/, '');
        const existing = props.datasets.find((d) => d.name === name);
        id = existing ? existing.id : (await api.createDataset(name)).id;
      }
      const r = await upload(id, f, { skipInvalid: skip }, setProg);
      setResult(r);
      setErrors(r.skipped);
      props.onDone();
    } catch (e) {
      setErr(e instanceof ApiError ? e.message : String(e));
      setErrors(decodeErrors(e));
    } finally {
      setBusy(false);
    }
  };
  const pct = prog ? (prog.phase === 'sending' ? (prog.total ? prog.sent / prog.total : 0) * 100 : 100) : 0;
  return (
    <section class="panel upload">
      <h2>Upload traces</h2>
      <p class="muted">Invariant, OpenAI chat, Snorkel, MLflow or Bedrock files, as JSON or JSON lines; the format is detected.</p>
      <div class="row">
        <input type="file" ref={file} name="file" accept=".json,.jsonl,.ndjson,application/json" />
        <select value={target} onChange={(e) => setTarget(e.currentTarget.value)} aria-label="dataset">
          <option value="">new dataset…</option>
          {props.datasets.map((d) => (
            <option value={d.id}>{d.name}</option>
          ))}
        </select>
        {!target && <input name="upload-name" placeholder="new dataset name (default: file name)" value={newName} onInput={(e) => setNewName(e.currentTarget.value)} />}
        <label title="store the valid traces and report the others, instead of rejecting the whole file">
          <input type="checkbox" checked={skip} onChange={(e) => setSkip(e.currentTarget.checked)} /> skip invalid traces
        </label>
        <button type="button" onClick={go} disabled={busy}>
          Upload
        </button>
      </div>
      {prog && (
        <div class="progress-wrap">
          <progress max={100} value={pct} />
          <span class="muted">
            {prog.phase === 'sending' ? `sending ${fmtBytes(prog.sent)} of ${fmtBytes(prog.total)}` : `${prog.phase}: ${prog.traces} traces, ${prog.errors} errors`}
          </span>
        </div>
      )}
      {result && (
        <p class="ok upload-result">
          Stored {result.stored} traces in {result.dataset.name}
          {result.skipped.length ? `, skipped ${result.skipped.length}` : ''}.
        </p>
      )}
      {err && <p class="error upload-error">{err}</p>}
      {errors.length > 0 && (
        <table class="grid errors">
          <thead>
            <tr>
              <th class="num">Line</th>
              <th class="num">Col</th>
              <th>Path</th>
              <th>Problem</th>
            </tr>
          </thead>
          <tbody>
            {errors.map((e) => (
              <tr>
                <td class="num">{e.line ?? ''}</td>
                <td class="num">{e.col ?? ''}</td>
                <td>
                  <code>{e.path ?? ''}</code>
                </td>
                <td>{e.message}</td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
    </section>
  );
}
