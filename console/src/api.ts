/**
 * Calls to the Service's /v1 API with the session cookie. Every call carries `X-Ferry-Console: 1`:
 * without it the Service does not accept the cookie (so a page of another site, which cannot add
 * the header, cannot use it). Nothing is kept in localStorage: the session is the HttpOnly cookie.
 */

/** An answer of the API that is not 2xx, read from its problem+json document. */
export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly title: string,
    detail: string,
    readonly retryAfter: number | undefined,
  ) {
    super(detail || title || `HTTP ${status}`);
  }
}

/** A list page and the total the API counted (its Total-Count header). */
export interface Page<T> {
  items: T[];
  total: number;
}

/** The page size of every list: the API's default, never "everything". */
export const PAGE_SIZE = 100;

/** Called when the session has ended (a 401): the console shows the sign-in again. */
let onSignedOut: () => void = () => undefined;
export function whenSignedOut(handler: () => void): void {
  onSignedOut = handler;
}

export interface CallOptions {
  body?: unknown;
  query?: Record<string, string | number | boolean | undefined>;
  /** What the answer is read as; json unless told. */
  as?: 'json' | 'text' | 'blob';
}

export function url(path: string, query: CallOptions['query'] = {}): string {
  const params = new URLSearchParams();
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v));
  const qs = params.toString();
  return qs ? `${path}?${qs}` : path;
}

async function send(method: string, path: string, opts: CallOptions): Promise<Response> {
  const headers: Record<string, string> = { 'X-Ferry-Console': '1', Accept: 'application/json, */*' };
  let body: string | undefined;
  if (opts.body !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(opts.body);
  }
  const res = await fetch(url(path, opts.query), { method, headers, body, credentials: 'same-origin' });
  if (res.ok) return res;
  let problem: { code?: string; title?: string; detail?: string } = {};
  try {
    problem = (await res.json()) as typeof problem;
  } catch {
    // Not a problem document: the status says enough.
  }
  const retry = Number(res.headers.get('Retry-After'));
  const err = new ApiError(
    res.status,
    problem.code ?? '',
    problem.title ?? res.statusText,
    problem.detail ?? '',
    Number.isFinite(retry) && retry > 0 ? retry : undefined,
  );
  if (res.status === 401 && !path.startsWith('/console/')) onSignedOut();
  throw err;
}

/** One call; the answer as JSON (or text, or a Blob). */
export async function api<T>(method: string, path: string, opts: CallOptions = {}): Promise<T> {
  const res = await send(method, path, opts);
  if (opts.as === 'text') return (await res.text()) as T;
  if (opts.as === 'blob') return (await res.blob()) as T;
  if (res.status === 204) return undefined as T;
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

/** One page of a list: `offset` from 0, {@link PAGE_SIZE} items. */
export async function page<T>(path: string, offset = 0, query: CallOptions['query'] = {}): Promise<Page<T>> {
  const res = await send('GET', path, { query: { ...query, limit: PAGE_SIZE, offset } });
  const items = (await res.json()) as T[];
  const total = Number(res.headers.get('Total-Count') ?? items.length);
  return { items, total };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/**
 * A POLL operation (or another answer that is "not ready yet": 404 with Retry-After), repeated
 * until it answers or `ms` have passed.
 */
export async function poll<T>(call: () => Promise<T>, ms = 120_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    try {
      return await call();
    } catch (err) {
      const notReady = err instanceof ApiError && err.status === 404 && err.retryAfter !== undefined;
      if (!notReady || Date.now() > deadline) throw err;
      await sleep(Math.min(err.retryAfter ?? 2, 2) * 1000);
    }
  }
}

/** Offers `blob` to the user as a file named `name`. */
export function download(blob: Blob, name: string): void {
  const href = URL.createObjectURL(blob);
  const a = document.createElement('a');
  a.href = href;
  a.download = name;
  document.body.append(a);
  a.click();
  a.remove();
  setTimeout(() => URL.revokeObjectURL(href), 10_000);
}

/** The signed-in user, as GET /v1/users answers. */
export interface Me {
  email: string;
  firstName: string | null;
  lastName: string | null;
}

export const signIn = (email: string, password: string): Promise<Me> =>
  api<Me>('POST', '/console/session', { body: { email, password } });
export const signOut = (): Promise<void> => api<void>('DELETE', '/console/session');
