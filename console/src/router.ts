import { useEffect, useState } from 'preact/hooks';

/**
 * The console's routes live in the URL's fragment (`#/o/1/solutions/…`): every page has an
 * address to bookmark or share, and the Service serves one index.html for all of them.
 */
export interface Route {
  orgId: number | undefined;
  /** The path after the Organization: `['solutions', '<id>', 'maps', '3']`. */
  parts: string[];
  /** The fragment's query (`?result=FatalError`). */
  query: URLSearchParams;
}

export function parseRoute(hash: string): Route {
  const [path = '', qs = ''] = hash.replace(/^#\/?/, '').split('?');
  const segs = path.split('/').filter(Boolean).map(decodeURIComponent);
  if (segs[0] === 'o' && segs[1] && /^\d+$/.test(segs[1])) {
    return { orgId: Number(segs[1]), parts: segs.slice(2), query: new URLSearchParams(qs) };
  }
  return { orgId: undefined, parts: segs, query: new URLSearchParams(qs) };
}

export function useRoute(): Route {
  const [hash, setHash] = useState(location.hash);
  useEffect(() => {
    const on = (): void => setHash(location.hash);
    window.addEventListener('hashchange', on);
    return () => window.removeEventListener('hashchange', on);
  }, []);
  return parseRoute(hash);
}

/** The fragment of a page of Organization `orgId`. */
export function href(orgId: number, ...parts: Array<string | number>): string {
  return `#/o/${orgId}${parts.length ? '/' : ''}${parts.map((p) => encodeURIComponent(String(p))).join('/')}`;
}

/** Goes to `to` (a fragment from {@link href}), with `query` when given. */
export function go(to: string, query?: Record<string, string | undefined>): void {
  const q = new URLSearchParams();
  for (const [k, v] of Object.entries(query ?? {})) if (v) q.set(k, v);
  const qs = q.toString();
  location.hash = qs ? `${to}?${qs}` : to;
}
