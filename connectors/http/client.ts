import { ConnectorError, throwIfAborted, type CallContext } from '../../src/connectors/sdk.js';
import type { Auth } from './auth.js';
import type { HttpProps } from './properties.js';
import { networkCode, networkRetry, statusText } from './errors.js';

/**
 * Sends one request and answers it, or throws the connection's failure as a ConnectorError.
 *
 *   send ──▶ rate limit ──▶ credentials ──▶ fetch (time-out covers the body) ──▶ status
 *     ▲                                                                           │
 *     └── wait: Retry-After (429, 503) or back-off with jitter (5xx, 408, network) ┘
 *
 * - 429 and 503 are retried for every method, after Retry-After (seconds or an HTTP date; capped
 *   at maxWaitSeconds) or the back-off: the API refused the request before doing anything.
 * - Other 5xx, 408, time-outs and network failures after the request may have left are retried
 *   only for idempotent methods (GET, HEAD, PUT, DELETE): a POST or PATCH the API may have applied
 *   is never sent twice. A connection that was refused or a name that did not answer is retried
 *   for every method (nothing was sent).
 * - 401/403: with OAuth the token is fetched again once and the request sent again; otherwise,
 *   or again, AuthFailed.
 * - Every other status (2xx, 3xx that fetch did not follow, 4xx) is answered to the caller, who
 *   decides: a record's error for a write, an error of the call for a read.
 *
 * Retries exhausted: 429/503/5xx → Datastore, time-out and network → Unreachable; each message
 * names the request (method and path, the secret query parameter left out), the HTTP status and
 * the API's own message.
 */

export interface HttpRequest {
  method: string;
  url: URL;
  body?: string;
}

export interface HttpResponse {
  status: number;
  headers: Headers;
  text: string;
  /** The final URL (after redirects): relative links resolve against it. */
  url: string;
}

const IDEMPOTENT = new Set(['GET', 'HEAD', 'PUT', 'DELETE', 'OPTIONS']);
/** The longest back-off between two tries. */
const MAX_BACKOFF_MS = 30_000;

export class HttpClient {
  private nextSlot = 0;

  constructor(
    private readonly props: HttpProps,
    private readonly auth: Auth,
  ) {}

  /** Most per-record write requests of one call in flight at once (the property concurrency). */
  get concurrency(): number {
    return this.props.concurrency;
  }

  /** `GET /v2/people?page=3`: how messages and log lines name a request (no origin, no secret parameter). */
  describe(method: string, url: URL | string): string {
    const u = new URL(url);
    const secret = this.auth.secretParam;
    if (secret) u.searchParams.delete(secret);
    return `${method} ${u.pathname}${u.search}`;
  }

  /** `text` without the connection's secrets. */
  scrub(text: string): string {
    let out = text;
    for (const s of this.auth.secrets()) if (out.includes(s)) out = out.split(s).join('[redacted]');
    return out;
  }

  /** A URL below the base URL: `path` may be absolute (`/people`) or relative; an absolute URL stays. */
  resolve(path: string): URL {
    if (/^https?:\/\//i.test(path)) return new URL(path);
    return new URL(path.replace(/^\/+/, ''), this.props.baseUrl);
  }

  async send(req: HttpRequest, ctx: CallContext, signal: AbortSignal = ctx.signal): Promise<HttpResponse> {
    const what = this.describe(req.method, req.url);
    const idempotent = IDEMPOTENT.has(req.method);
    let refreshed = false;
    for (let attempt = 0; ; attempt++) {
      throwIfAborted(signal);
      await this.throttle(signal);
      const outcome = await this.once(req, ctx, signal);
      const retriesLeft = attempt < this.props.maxRetries;
      if ('failure' in outcome) {
        const { code, timedOut } = outcome.failure;
        const may = timedOut ? (idempotent ? 'any' : 'never') : networkRetry(code);
        const reason = timedOut
          ? `no answer within ${this.props.timeoutMs / 1000} s`
          : `the API cannot be reached${code ? ` (${code})` : ''}`;
        if (retriesLeft && (may === 'any' || (may === 'idempotent' && idempotent))) {
          await this.wait(this.backoff(attempt), { what, attempt, reason }, ctx, signal);
          continue;
        }
        throw new ConnectorError(
          'Unreachable',
          `${what}: ${reason}${attempt > 0 ? ` after ${attempt + 1} tries` : ''}.`,
          {
            ...(code ? { nativeCode: code } : {}),
          },
        );
      }
      const res = outcome.response;
      const { status } = res;
      if (status === 401 || status === 403) {
        if (!refreshed && this.auth.refresh()) {
          refreshed = true;
          attempt--;
          continue;
        }
        throw new ConnectorError(
          'AuthFailed',
          `${what}: the API refused the credentials or the permission: ${statusText(status, res.text)}.`,
          { nativeCode: String(status) },
        );
      }
      const limited = status === 429 || status === 503;
      const failedServer = status >= 500 || status === 408;
      if (!limited && !failedServer) return res;
      if (retriesLeft && (limited || idempotent)) {
        const after = limited ? retryAfterMs(res.headers.get('retry-after')) : undefined;
        const ms = after === undefined ? this.backoff(attempt) : Math.min(after, this.props.maxWaitMs);
        await this.wait(ms, { what, attempt, status, reason: statusText(status, res.text) }, ctx, signal);
        continue;
      }
      throw new ConnectorError(
        status === 408 ? 'Unreachable' : 'Datastore',
        `${what}: the API answered ${statusText(status, res.text)}${attempt > 0 ? ` after ${attempt + 1} tries` : ''}.`,
        { nativeCode: String(status) },
      );
    }
  }

  /** One try: the answer with its whole body, or why there is none. */
  private async once(
    req: HttpRequest,
    ctx: CallContext,
    signal: AbortSignal,
  ): Promise<{ response: HttpResponse } | { failure: { code: string | undefined; timedOut: boolean } }> {
    const url = new URL(req.url);
    const headers: Record<string, string> = { accept: 'application/json', ...this.props.headers };
    if (req.body !== undefined) headers['content-type'] = 'application/json';
    await this.auth.apply(headers, url, ctx);
    const timer = new AbortController();
    const timeout = setTimeout(() => timer.abort(), this.props.timeoutMs);
    const both = AbortSignal.any([signal, timer.signal]);
    try {
      const res = await fetch(url, {
        method: req.method,
        headers,
        ...(req.body !== undefined ? { body: req.body } : {}),
        signal: both,
      });
      // The time-out runs until the whole body is read: a page that stalls half-way fails too.
      let text = await res.text();
      // An error answer may echo what it was sent (a header, the query): its text reaches messages.
      if (res.status >= 300) text = this.scrub(text);
      return { response: { status: res.status, headers: res.headers, text, url: res.url || url.href } };
    } catch (err) {
      if (signal.aborted) throw new ConnectorError('Aborted', 'The call was cancelled.');
      return { failure: { code: timer.signal.aborted ? undefined : networkCode(err), timedOut: timer.signal.aborted } };
    } finally {
      clearTimeout(timeout);
    }
  }

  /** Exponential back-off with full jitter over its upper half: first retryDelayMs, doubling, at most 30 s. */
  private backoff(attempt: number): number {
    const ceiling = Math.min(MAX_BACKOFF_MS, this.props.retryDelayMs * 2 ** attempt);
    return Math.round(ceiling / 2 + Math.random() * (ceiling / 2));
  }

  private async wait(
    ms: number,
    fields: { what: string; attempt: number; status?: number; reason: string },
    ctx: CallContext,
    signal: AbortSignal,
  ): Promise<void> {
    ctx.log.warn(
      { request: fields.what, status: fields.status, attempt: fields.attempt + 1, waitMs: ms, reason: fields.reason },
      'request retried',
    );
    await sleep(ms, signal);
  }

  /** Spaces requests at 1/requestsPerSecond: each takes the next free slot. */
  private async throttle(signal: AbortSignal): Promise<void> {
    const rps = this.props.requestsPerSecond;
    if (rps <= 0) return;
    const now = Date.now();
    const slot = Math.max(now, this.nextSlot);
    this.nextSlot = slot + 1000 / rps;
    if (slot > now) await sleep(slot - now, signal);
  }
}

/** Retry-After as milliseconds: delay-seconds or an HTTP date (RFC 9110 §10.2.3); undefined if absent or unreadable. */
export function retryAfterMs(value: string | null): number | undefined {
  if (value === null) return undefined;
  const v = value.trim();
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  return Number.isNaN(at) ? undefined : Math.max(0, at - Date.now());
}

/** Waits `ms`, or throws Aborted as soon as the signal fires. */
export function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new ConnectorError('Aborted', 'The call was cancelled.'));
    const done = (): void => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    };
    const onAbort = (): void => {
      clearTimeout(timer);
      reject(new ConnectorError('Aborted', 'The call was cancelled.'));
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
