import { useEffect, useLayoutEffect, useState } from 'preact/hooks';
import type { Trace } from '../../lib/types';

// Paint marks for the benchmark (web/bench/paint.mjs), with the Performance
// API, and what waits for the first paint.

/** useTracePaintMarks sets the benchmark's marks (web/bench): the first
 * event on screen, then everything loaded and idle (which also sets
 * data-ready on the document, for the end-to-end tests and the bench). */
export function useTracePaintMarks(trace: Trace | null, partial: boolean) {
  useLayoutEffect(() => {
    if (!trace) return;
    requestAnimationFrame(() => {
      if (!performance.getEntriesByName('lookout:first-event').length && document.querySelector('.card')) performance.mark('lookout:first-event');
      if (partial) return;
      setTimeout(() => {
        if (!performance.getEntriesByName('lookout:interactive').length) {
          performance.mark('lookout:interactive');
          document.documentElement.dataset.ready = '1';
        }
      }, 0);
    });
  }, [trace, partial]);
}

/** useListPaintMark marks the first rows of a dataset's list on screen. */
export function useListPaintMark() {
  useLayoutEffect(() => {
    if (performance.getEntriesByName('lookout:list-painted').length || !document.querySelector('.trow[data-trace]')) return;
    requestAnimationFrame(() => performance.mark('lookout:list-painted'));
  });
}

/** useAfterPaint turns true just after the frame in which ready is first
 * truthy is painted: for what may wait until the page's main content is
 * shown. */
export function useAfterPaint(ready: unknown): boolean {
  const [after, setAfter] = useState(false);
  useEffect(() => {
    if (!ready || after) return;
    // A timeout queued in the frame's animation callback runs after that
    // frame is painted.
    let timer = 0;
    const raf = requestAnimationFrame(() => (timer = window.setTimeout(() => setAfter(true))));
    return () => (cancelAnimationFrame(raf), clearTimeout(timer));
  }, [ready, after]);
  return after;
}
