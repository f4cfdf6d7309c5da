import { useEffect, useState } from 'preact/hooks';

/** useMedia tells whether a CSS media query matches, following changes
 * (a window made narrower). False where there is no window. */
export function useMedia(query: string): boolean {
  const get = () => typeof matchMedia !== 'undefined' && matchMedia(query).matches;
  const [on, setOn] = useState(get);
  useEffect(() => {
    if (typeof matchMedia === 'undefined') return;
    const mq = matchMedia(query);
    const f = () => setOn(mq.matches);
    mq.addEventListener('change', f);
    f();
    return () => mq.removeEventListener('change', f);
  }, [query]);
  return on;
}
