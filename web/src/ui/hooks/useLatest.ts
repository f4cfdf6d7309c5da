import { useRef } from 'preact/hooks';

/** useLatest keeps the latest value in a ref, for effects that subscribe
 * once but must call the page's current callbacks. */
export function useLatest<T>(v: T) {
  const r = useRef(v);
  r.current = v;
  return r;
}
