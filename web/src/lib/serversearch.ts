// The server SearchBackend: the search API answers from the
// store's index, a page of matching traces at a time, with the exact places
// of the query's texts in each.
import { api } from './api';
import type { SearchBackend } from './search';

const PAGE = 500;

export const serverSearch: SearchBackend = {
  full: true,
  async search(datasetId, q, onMatch, onProgress, signal) {
    let cursor = '';
    let found = 0;
    do {
      const page = await api.search(datasetId, q.source, cursor, PAGE);
      if (signal.aborted) return;
      for (const t of page.traces) {
        onMatch(
          t,
          t.hits.map((address, k) => ({ id: `search-${t.id}-${k}`, kind: 'search' as const, address, message: 'search hit' })),
          t.snippet,
        );
      }
      found += page.traces.length;
      onProgress(found, page.total, page.total_is_estimate);
      cursor = page.next;
    } while (cursor && !signal.aborted);
  },
};
