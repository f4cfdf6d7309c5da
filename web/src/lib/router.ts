// A tiny history router: the path picks the page, the hash is an address.
import { useEffect, useState } from 'preact/hooks';

export type Route =
  | { page: 'home' }
  | { page: 'dataset'; owner: string; name: string }
  | { page: 'trace'; id: string }
  | { page: 'session'; owner: string; name: string; session: string }
  | { page: 'dashboard'; owner: string; name: string }
  | { page: 'notfound'; path: string };

export function parseRoute(path: string): Route {
  let m: RegExpMatchArray | null;
  if (path === '/' || path === '') return { page: 'home' };
  if ((m = path.match(/^\/datasets\/([^/]+)\/([^/]+)\/?$/))) return { page: 'dataset', owner: decodeURIComponent(m[1]), name: decodeURIComponent(m[2]) };
  if ((m = path.match(/^\/datasets\/([^/]+)\/([^/]+)\/sessions\/([^/]+)\/?$/)))
    return { page: 'session', owner: decodeURIComponent(m[1]), name: decodeURIComponent(m[2]), session: decodeURIComponent(m[3]) };
  if ((m = path.match(/^\/datasets\/([^/]+)\/([^/]+)\/dashboard\/?$/))) return { page: 'dashboard', owner: decodeURIComponent(m[1]), name: decodeURIComponent(m[2]) };
  if ((m = path.match(/^\/traces\/([^/]+)\/?$/))) return { page: 'trace', id: decodeURIComponent(m[1]) };
  return { page: 'notfound', path };
}

const listeners = new Set<() => void>();

export function navigate(to: string, replace = false) {
  if (replace) history.replaceState(null, '', to);
  else history.pushState(null, '', to);
  listeners.forEach((f) => f());
}

export function useLocation(): { path: string; search: string; hash: string } {
  const get = () => ({ path: location.pathname, search: location.search, hash: decodeURIComponent(location.hash.slice(1)) });
  const [loc, setLoc] = useState(get);
  useEffect(() => {
    const f = () => setLoc(get());
    listeners.add(f);
    addEventListener('popstate', f);
    addEventListener('hashchange', f);
    return () => {
      listeners.delete(f);
      removeEventListener('popstate', f);
      removeEventListener('hashchange', f);
    };
  }, []);
  return loc;
}

/** onLinkClick makes plain left clicks on same-origin links client-side. */
export function onLinkClick(e: MouseEvent) {
  if (e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const a = (e.target as Element).closest?.('a');
  if (!a || a.target === '_blank' || a.hasAttribute('download')) return;
  const url = new URL(a.href, location.href);
  if (url.origin !== location.origin || url.pathname.startsWith('/api/')) return;
  e.preventDefault();
  if (url.pathname === location.pathname && url.search === location.search && url.hash) {
    location.hash = url.hash; // fires hashchange
    return;
  }
  navigate(url.pathname + url.search + url.hash);
}

export function datasetPath(owner: string, name: string): string {
  return `/datasets/${encodeURIComponent(owner)}/${encodeURIComponent(name)}`;
}
