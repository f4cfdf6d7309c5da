import { useEffect, useMemo, useState } from 'preact/hooks';
import { tryParseAddress } from '../../lib/address';
import { api } from '../../lib/api';
import { HighlightIndex, resolveHighlights, type Highlight, type HighlightInput } from '../../lib/highlight';
import type { Annotation, Trace } from '../../lib/types';
import { ratingOf } from './useAnnotations';

/** highlightInputs is what a trace page marks: annotations with text (a
 * bare rating marks nothing) and analyzer violations, the search hits, and
 * the URL's address when it is one. */
export function highlightInputs(anns: readonly Annotation[], searchHits: readonly HighlightInput[], hash: string): HighlightInput[] {
  const inputs: HighlightInput[] = [];
  for (const a of anns) {
    if (ratingOf(a) !== undefined && !a.content) continue;
    inputs.push({ id: a.id, kind: a.source === 'analyzer' ? 'analyzer' : 'annotation', address: a.address, message: `${a.source === 'analyzer' ? 'violation' : a.author ?? a.source}: ${a.content}` });
  }
  inputs.push(...searchHits);
  if (hash && tryParseAddress(hash)) inputs.push({ id: 'target', kind: 'target', address: hash, message: `linked: ${hash}` });
  return inputs;
}

/** useHighlights resolves a trace's marks. Search hits are the server's for
 * this trace (the same language and matching as the dataset search), asked
 * again when the query changes or the trace grows. steps are the marks the
 * stepper walks: all but the URL's target. */
export function useHighlights(id: string, trace: Trace | null, anns: Annotation[], query: string, hash: string): { hl: HighlightIndex; steps: Highlight[] } {
  const [searchHits, setSearchHits] = useState<HighlightInput[]>([]);
  const eventCount = trace?.events.length ?? 0;
  useEffect(() => {
    if (!query.trim() || !eventCount) {
      setSearchHits([]);
      return;
    }
    let live = true;
    api.hits(id, query).then(
      (hs) => live && setSearchHits(hs.map((address, k) => ({ id: `search-${k}`, kind: 'search' as const, address, message: `search: ${query}` }))),
      () => live && setSearchHits([]),
    );
    return () => {
      live = false;
    };
  }, [id, query, eventCount]);
  const hl = useMemo(() => (trace ? new HighlightIndex(resolveHighlights(trace, highlightInputs(anns, searchHits, hash))) : new HighlightIndex([])), [trace, anns, searchHits, hash]);
  const steps = useMemo(() => hl.all.filter((h) => h.kind !== 'target'), [hl]);
  return { hl, steps };
}
