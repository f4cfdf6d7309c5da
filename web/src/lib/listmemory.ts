// Where the dataset page was when a trace was opened from it: its traces
// in list order and the query, for the trace page's way back and its [ and
// ] keys. Kept for the browser tab's session.

export interface ListMemory {
  datasetId: string;
  owner: string;
  name: string;
  ids: string[];
  q: string;
}

const key = 'lookout.list';

export function rememberList(m: ListMemory) {
  try {
    sessionStorage.setItem(key, JSON.stringify({ ...m, ids: m.ids.slice(0, 100000) }));
  } catch {
    /* storage full or off */
  }
}

export function recallList(): ListMemory | null {
  try {
    return JSON.parse(sessionStorage.getItem(key) ?? 'null');
  } catch {
    return null;
  }
}

/** tracePath is a trace's page, with the list's query to find again. */
export function tracePath(id: string, q: string | undefined): string {
  return `/traces/${encodeURIComponent(id)}${q ? '?q=' + encodeURIComponent(q) : ''}`;
}

/** neighbour is the trace d places from id in the list, if both are in it. */
export function neighbour(m: ListMemory, id: string, d: number): string | undefined {
  const k = m.ids.indexOf(id);
  return k >= 0 ? m.ids[k + d] : undefined;
}
