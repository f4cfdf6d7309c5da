import { useEffect, useMemo, useState } from 'preact/hooks';
import { tryParseAddress } from '../../lib/address';
import { api } from '../../lib/api';
import type { Annotation } from '../../lib/types';
import { useLatest } from './useLatest';

/** ratingOf is an annotation's thumbs up (1) or down (-1), if it is one. */
export function ratingOf(a: Annotation): 1 | -1 | undefined {
  const r = (a.extra as any)?.rating;
  return r === 1 || r === -1 ? r : undefined;
}

/** notesByEvent groups the annotations on events by event index; those on
 * spans, or with addresses that do not parse, are left out. */
export function notesByEvent(anns: readonly Annotation[]): Map<number, Annotation[]> {
  const by = new Map<number, Annotation[]>();
  for (const a of anns) {
    const ad = tryParseAddress(a.address);
    if (!ad || ad.root !== 'messages') continue;
    let l = by.get(ad.event);
    if (!l) by.set(ad.event, (l = []));
    l.push(a);
  }
  return by;
}

/** sortAnnotations orders annotations by event (those on spans first,
 * those with addresses that do not parse last), then by creation time. */
export function sortAnnotations(anns: readonly Annotation[]): Annotation[] {
  return anns
    .map((a) => ({ a, ad: tryParseAddress(a.address) }))
    .sort((x, y) => (x.ad?.event ?? 1e9) - (y.ad?.event ?? 1e9) || x.a.created_at.localeCompare(y.a.created_at))
    .map(({ a }) => a);
}

export type RateAction = { op: 'create' } | { op: 'update'; id: string } | { op: 'delete'; id: string };

/** rateAction is what a click on thumbs up or down of event i does: the
 * reader's own rating of that event is taken back when it is the same,
 * changed when it is not, and made when there is none. */
export function rateAction(anns: readonly Annotation[], i: number, r: 1 | -1, me: string | null): RateAction {
  const mine = anns.find((a) => a.address === `messages.${i}` && ratingOf(a) !== undefined && a.author === me);
  if (mine && ratingOf(mine) === r) return { op: 'delete', id: mine.id };
  if (mine) return { op: 'update', id: mine.id };
  return { op: 'create' };
}

export interface Annotations {
  anns: Annotation[];
  /** By event index (notesByEvent). */
  byEvent: Map<number, Annotation[]>;
  /** In reading order (sortAnnotations). */
  sorted: Annotation[];
  /** reload fetches them again; failures go to onError (it never rejects). */
  reload: () => Promise<void>;
  // The changes resolve to whether they were made; they reload on success
  // and report failures to onError.
  create: (address: string, content: string) => Promise<boolean>;
  edit: (annId: string, content: string) => Promise<boolean>;
  remove: (annId: string) => Promise<boolean>;
  rate: (event: number, r: 1 | -1) => Promise<boolean>;
}

/** useAnnotations loads a trace's annotations and changes them as the
 * reader me (whose own ratings a rating replaces). */
export function useAnnotations(id: string, me: string | null, onError: (msg: string) => void): Annotations {
  const [anns, setAnns] = useState<Annotation[]>([]);
  // The latest list, for ratings clicked faster than the page re-renders.
  const latest = useLatest(anns);
  const reload = () => api.annotations(id).then(setAnns, (e) => onError(e.message));
  useEffect(() => {
    reload();
  }, [id]);
  const change = async (f: () => Promise<unknown>) => {
    try {
      await f();
    } catch (e) {
      onError((e as Error).message);
      return false;
    }
    reload();
    return true;
  };
  const byEvent = useMemo(() => notesByEvent(anns), [anns]);
  const sorted = useMemo(() => sortAnnotations(anns), [anns]);
  return {
    anns,
    byEvent,
    sorted,
    reload,
    create: (address, content) => change(() => api.createAnnotation(id, { address, content })),
    edit: (annId, content) => change(() => api.updateAnnotation(id, annId, { content })),
    remove: (annId) => change(() => api.deleteAnnotation(id, annId)),
    rate: (i, r) =>
      change(() => {
        const act = rateAction(latest.current, i, r, me);
        if (act.op === 'delete') return api.deleteAnnotation(id, act.id);
        if (act.op === 'update') return api.updateAnnotation(id, act.id, { extra: { rating: r } });
        return api.createAnnotation(id, { address: `messages.${i}`, content: '', extra: { rating: r } });
      }),
  };
}
