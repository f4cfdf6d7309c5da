// The client-side SearchBackend: pages through the dataset's trace list and,
// when the query needs content, fetches traces a few at a time. Replace with
// a server search API (issue 6) by implementing SearchBackend over it.
import { api } from './api';
import { matchSummary, matchTrace, needsContent, type SearchBackend } from './search';

export const clientSearch: SearchBackend = {
  async search(datasetId, q, onMatch, onProgress, signal) {
    let cursor = '';
    let scanned = 0;
    const content = needsContent(q);
    do {
      const page = await api.traces(datasetId, cursor, 1000);
      cursor = page.next;
      const todo = page.traces.filter((t) => matchSummary(q, t));
      if (!content) {
        for (const t of todo) onMatch(t, []);
      } else {
        let k = 0;
        const worker = async () => {
          while (k < todo.length && !signal.aborted) {
            const s = todo[k++];
            const t = await api.trace(s.id);
            const m = matchTrace(q, t, s);
            if (m.ok && !signal.aborted) onMatch(s, m.hits);
          }
        };
        await Promise.all([worker(), worker(), worker(), worker()]);
      }
      scanned += page.traces.length;
      if (!signal.aborted) onProgress(scanned);
    } while (cursor && !signal.aborted);
  },
};
