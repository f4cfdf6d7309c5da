// A virtual list of rows of varying height: only the rows in view (plus a
// margin) are in the DOM; heights are measured as rows render and
// estimated before. scrollTo(i) brings row i to the top.
import type { ComponentChildren } from 'preact';
import { useEffect, useLayoutEffect, useMemo, useRef, useState } from 'preact/hooks';

export interface VirtualHandle {
  scrollTo(i: number, align?: Align): void;
  first(): number; // the first row in view
}

/** Where scrollTo puts the row: at the top, in the middle, or scrolled
 * only as far as needed to bring it into view (keyboard moves). */
export type Align = 'start' | 'center' | 'nearest';

export interface VirtualListProps {
  count: number;
  estimate: number; // estimated row height in px
  render: (i: number) => ComponentChildren;
  fixed?: boolean; // every row is exactly `estimate` high
  overscan?: number; // px above and below the view
  class?: string;
  handle?: (h: VirtualHandle) => void;
  onRange?: (first: number, last: number) => void;
}

export function VirtualList(props: VirtualListProps) {
  const { count, estimate, fixed } = props;
  const overscan = props.overscan ?? 800;
  const box = useRef<HTMLDivElement>(null);
  const heights = useRef<Float64Array>(new Float64Array(0));
  const [version, setVersion] = useState(0);
  const [view, setView] = useState({ top: 0, height: 800 });
  const pending = useRef<{ i: number; align: Align; tries: number } | null>(null);

  // known[i] is 1 once row i has been measured.
  const known = useRef<Uint8Array>(new Uint8Array(0));
  if (heights.current.length !== count) {
    const h = new Float64Array(count);
    h.fill(estimate);
    h.set(heights.current.subarray(0, Math.min(count, heights.current.length)));
    heights.current = h;
    const k = new Uint8Array(count);
    k.set(known.current.subarray(0, Math.min(count, known.current.length)));
    known.current = k;
  }
  // Prefix sums of heights: offsets[i] is the top of row i.
  const offsets = useMemo(() => {
    const o = new Float64Array(count + 1);
    const h = heights.current;
    for (let i = 0; i < count; i++) o[i + 1] = o[i] + h[i];
    return o;
  }, [count, version]);

  const find = (y: number) => {
    if (fixed) return Math.max(0, Math.min(count - 1, Math.floor(y / estimate)));
    let lo = 0;
    let hi = count - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (offsets[mid] <= y) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  };
  const first = count ? find(Math.max(0, view.top - overscan)) : 0;
  const last = count ? find(view.top + view.height + overscan) : -1;

  useEffect(() => {
    const el = box.current!;
    let raf = 0;
    const onScroll = () => {
      if (raf) return;
      raf = requestAnimationFrame(() => {
        raf = 0;
        setView({ top: el.scrollTop, height: el.clientHeight });
      });
    };
    onScroll();
    el.addEventListener('scroll', onScroll, { passive: true });
    const ro = new ResizeObserver(onScroll);
    ro.observe(el);
    return () => {
      el.removeEventListener('scroll', onScroll);
      ro.disconnect();
      cancelAnimationFrame(raf);
    };
  }, []);

  // A ResizeObserver reports each row's height once the browser has laid
  // it out (no forced layout); a changed height moves the bookkeeping
  // (offsets, the list's total height, the rows below) and keeps the first
  // visible row where it was on screen.
  const offsetsRef = useRef(offsets);
  offsetsRef.current = offsets;
  const ro = useRef<ResizeObserver | null>(null);
  const observed = useRef(new Set<HTMLElement>());
  useLayoutEffect(() => {
    if (fixed) return;
    const el = box.current!;
    if (!ro.current)
      ro.current = new ResizeObserver((entries) => {
        let changed = false;
        let learned = false;
        let shift = 0;
        const top = el.scrollTop;
        const o = offsetsRef.current;
        for (const en of entries) {
          const t = en.target as HTMLElement;
          if (!t.isConnected) continue;
          const i = Number(t.dataset.i);
          const h = en.borderBoxSize?.[0]?.blockSize ?? t.offsetHeight;
          if (!(i < heights.current.length) || !(h > 0)) continue;
          if (!known.current[i]) {
            known.current[i] = 1;
            learned = true;
          }
          if (Math.abs(heights.current[i] - h) <= 0.5) continue;
          if (o[i] + heights.current[i] <= top) shift += h - heights.current[i];
          heights.current[i] = h;
          changed = true;
        }
        if (changed) {
          if (shift && !pending.current) el.scrollTop = top + shift;
          setVersion((v) => v + 1);
        } else if (learned && pending.current) setVersion((v) => v + 1);
      });
    const obs = ro.current;
    const seen = observed.current;
    for (const n of Array.from(seen)) {
      if (!n.isConnected) {
        obs.unobserve(n);
        seen.delete(n);
      }
    }
    for (const c of Array.from(el.querySelectorAll<HTMLElement>(':scope > .vl-inner > .vl-row'))) {
      if (!seen.has(c)) {
        obs.observe(c);
        seen.add(c);
      }
    }
  });
  useEffect(() => () => ro.current?.disconnect(), []);

  // A pending scrollTo is repeated until the row's measured place is
  // stable: the list is at the row's offset and every row on screen has
  // been measured (rows are measured after layout, so a scroll to an
  // estimated offset is followed by another once the rows there report).
  useLayoutEffect(() => {
    const p = pending.current;
    const el = box.current;
    if (!p || !el) return;
    const top = offsets[p.i];
    const bottom = top + heights.current[p.i];
    const target =
      p.align === 'center'
        ? top - el.clientHeight / 2 + heights.current[p.i] / 2
        : p.align === 'nearest'
          ? top < el.scrollTop
            ? top
            : bottom > el.scrollTop + el.clientHeight
              ? bottom - el.clientHeight
              : el.scrollTop
          : top;
    const y = Math.max(0, Math.round(target));
    if (Math.abs(el.scrollTop - y) > 1 && p.tries < 20) {
      el.scrollTop = y;
      p.tries++;
      setView({ top: el.scrollTop, height: el.clientHeight });
      return;
    }
    let settled = !!fixed || p.tries >= 20;
    if (!settled) {
      settled = true;
      for (let i = first; i <= last; i++) if (!known.current[i]) settled = false;
    }
    if (settled) pending.current = null;
  });

  useEffect(() => {
    props.handle?.({
      scrollTo(i, align = 'start') {
        if (i < 0 || i >= count) return;
        pending.current = { i, align, tries: 0 };
        setVersion((v) => v + 1);
      },
      first() {
        const el = box.current;
        return el ? find(el.scrollTop + 1) : 0;
      },
    });
  });

  useEffect(() => {
    if (count) props.onRange?.(first, last);
  }, [first, last, count]);

  // Each row is placed by its own transform: a row that moves (rows above
  // it measured, or the window scrolled on) only changes its transform, so
  // the browser repaints nothing in it; only new rows are laid out and
  // painted.
  const rows: ComponentChildren[] = [];
  for (let i = first; i <= last; i++) {
    rows.push(
      <div class="vl-row" data-i={i} key={i} style={fixed ? { height: `${estimate}px`, transform: `translateY(${offsets[i]}px)` } : { transform: `translateY(${offsets[i]}px)` }}>
        {props.render(i)}
      </div>,
    );
  }
  return (
    <div class={`vl ${props.class ?? ''}`} ref={box} tabIndex={-1}>
      <div class="vl-inner" style={{ height: `${offsets[count]}px` }}>
        {rows}
      </div>
    </div>
  );
}
