// The session view: a session's traces in order (time, then index), found
// by the search index (session:"id"), each a link to its trace.
import { useEffect, useState } from 'preact/hooks';
import { api } from '../lib/api';
import { rememberList } from '../lib/listmemory';
import { datasetPath } from '../lib/router';
import { sessionOf, sessionOrder, sessionQuery, traceTime, userOf } from '../lib/session';
import type { Dataset, Me, TraceSummary } from '../lib/types';
import { fmtInt, NotFound, DatasetNotFound } from './common';

export function SessionPage(props: { owner: string; name: string; session: string; me: Me | null }) {
  const { owner, name, session } = props;
  const [ds, setDs] = useState<Dataset | null>(null);
  const [traces, setTraces] = useState<TraceSummary[] | null>(null);
  const [err, setErr] = useState('');
  const [missing, setMissing] = useState(false);
  useEffect(() => {
    let stop = false;
    (async () => {
      const found = await api.datasets({ owner, name });
      if (!found.length) return setMissing(true);
      const d = found[0];
      setDs(d);
      const all: TraceSummary[] = [];
      let cursor = '';
      do {
        const page = await api.search(d.id, sessionQuery(session), cursor, 1000);
        all.push(...page.traces);
        cursor = page.next;
      } while (cursor && !stop);
      // The index matches ids without case; a session is its exact id.
      if (!stop) setTraces(sessionOrder(all.filter((t) => sessionOf(t.metadata) === session)));
    })().catch((e) => !stop && setErr(String(e.message ?? e)));
    return () => {
      stop = true;
    };
  }, [owner, name, session]);

  if (missing) return <DatasetNotFound owner={owner} name={name} me={props.me} />;
  if (err)
    return (
      <NotFound title="The session could not be loaded" me={props.me} back={{ href: datasetPath(owner, name), label: `back to ${name}` }}>
        <p class="error">{err}</p>
      </NotFound>
    );
  const users = [...new Set((traces ?? []).map((t) => userOf(t.metadata)).filter(Boolean))];
  const remember = () => ds && traces && rememberList({ datasetId: ds.id, owner, name, ids: traces.map((t) => t.id), q: '' });
  return (
    <div class="session">
      <div class="dataset-head">
        <h2>
          <a href={datasetPath(owner, name)}>{name}</a> / session <span class="session-id">{session}</span>
        </h2>
        <span class="muted session-count">
          {traces ? `${fmtInt(traces.length)} traces` : 'Loading…'}
          {users.length > 0 && ` · user ${users.join(', ')}`}
        </span>
      </div>
      {traces && traces.length === 0 && <p class="muted">No trace of this dataset belongs to this session.</p>}
      {traces && traces.length > 0 && (
        <ol class="session-list">
          {traces.map((t) => (
            <li class="session-trace" data-trace={t.id} data-index={t.index}>
              <a href={`/traces/${encodeURIComponent(t.id)}`} onClick={remember}>
                <span class="num">#{t.index}</span> <span class="session-time">{new Date(traceTime(t)).toISOString().replace('T', ' ').slice(0, 23)}</span>{' '}
                <span class="ell">{t.name ?? ''}</span> <span class="muted">{fmtInt(t.event_count)} events</span>
              </a>
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}
