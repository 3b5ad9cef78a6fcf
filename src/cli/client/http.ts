/**
 * The API client's one way to the Service: fetch with HTTP Basic authentication, problem+json
 * errors turned into {@link ApiError}, answers validated with zod, and the waiting of POLL
 * resources (404 or an unfinished status until ready, paced by `Retry-After`).
 */
import type { z } from 'zod';
import type { Credentials } from './config.js';
import { ApiError } from './errors.js';

/** A raw answer: status, headers and the parsed body (JSON when the Service says so, else text). */
export interface ApiAnswer {
  status: number;
  headers: Headers;
  body: unknown;
}

export interface RequestOptions {
  query?: Record<string, string | number | boolean | undefined> | Array<[string, string]>;
  /** A JSON value; a string is sent as is (already JSON). */
  body?: unknown;
  /** Sends `body` (text or bytes) as is with this Content-Type instead of as JSON. */
  contentType?: string;
}

export interface PollOptions {
  timeoutMs: number;
  /** Pause when the answer carries no Retry-After. */
  defaultDelayMs?: number;
}

const USER_AGENT = 'ferry-cli';
const MIN_DELAY_MS = 100;
const MAX_DELAY_MS = 10_000;

export class ApiClient {
  readonly #authorization: string;

  constructor(readonly credentials: Credentials) {
    this.#authorization = `Basic ${Buffer.from(`${credentials.user}:${credentials.password}`, 'utf8').toString('base64')}`;
  }

  /** The URL of a path: `/v1/…` as given, anything else below `/v1/`. */
  url(pathOrRel: string, query?: RequestOptions['query']): URL {
    const rel = pathOrRel.startsWith('/') ? pathOrRel : `/v1/${pathOrRel}`;
    const url = new URL(this.credentials.url + rel);
    const pairs = Array.isArray(query)
      ? query
      : Object.entries(query ?? {}).flatMap(([k, v]) => (v === undefined ? [] : [[k, String(v)] as [string, string]]));
    for (const [k, v] of pairs) url.searchParams.append(k, v);
    return url;
  }

  /** One call; any status is returned. Network failures name the Service, never the credentials. */
  async request(method: string, path: string, opts: RequestOptions = {}): Promise<ApiAnswer> {
    const headers: Record<string, string> = {
      authorization: this.#authorization,
      accept: 'application/json',
      'user-agent': USER_AGENT,
    };
    let body: string | Uint8Array | undefined;
    if (opts.body !== undefined && opts.contentType !== undefined) {
      if (typeof opts.body !== 'string' && !(opts.body instanceof Uint8Array))
        throw new TypeError(`a ${opts.contentType} body is text or bytes`);
      body = opts.body;
      headers['content-type'] = opts.contentType;
    } else if (opts.body !== undefined) {
      body = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
      headers['content-type'] = 'application/json';
    }
    const url = this.url(path, opts.query);
    let res: Response;
    try {
      res = await fetch(url, { method: method.toUpperCase(), headers, ...(body !== undefined ? { body } : {}) });
    } catch (err) {
      const cause =
        err instanceof Error && err.cause instanceof Error
          ? err.cause.message
          : err instanceof Error
            ? err.message
            : String(err);
      throw new ApiError(0, `Cannot reach the Service at ${this.credentials.url}`, cause, undefined);
    }
    const text = await res.text();
    let parsed: unknown = text;
    if (/json/i.test(res.headers.get('content-type') ?? '') && text) {
      try {
        parsed = JSON.parse(text);
      } catch {
        parsed = text;
      }
    }
    return { status: res.status, headers: res.headers, body: parsed };
  }

  /** A call that must succeed: 4xx/5xx become an {@link ApiError}; the body is checked with `schema`. */
  async call<S extends z.ZodType>(
    method: string,
    path: string,
    schema: S,
    opts: RequestOptions = {},
  ): Promise<z.infer<S>> {
    const answer = await this.request(method, path, opts);
    if (answer.status >= 400) throw apiErrorOf(answer);
    return parseAnswer(schema, answer.body, `${method.toUpperCase()} ${path}`);
  }

  /**
   * Repeats a GET until `ready` accepts its answer: a 404 carrying `Retry-After` (the Service's POLL
   * answer while an Agent works) and an answer `ready` refuses are waited out, other errors thrown.
   */
  async poll<S extends z.ZodType>(
    path: string,
    schema: S,
    ready: (value: z.infer<S>) => boolean,
    opts: PollOptions,
  ): Promise<z.infer<S>> {
    const deadline = Date.now() + opts.timeoutMs;
    for (;;) {
      const answer = await this.request('GET', path);
      const pending = answer.status === 404 && answer.headers.has('retry-after');
      if (answer.status >= 400 && !pending) throw apiErrorOf(answer);
      if (!pending) {
        const value = parseAnswer(schema, answer.body, `GET ${path}`);
        if (ready(value)) return value;
      }
      const wait = retryAfterMs(answer.headers.get('retry-after'), opts.defaultDelayMs ?? 500);
      if (Date.now() + wait > deadline) {
        throw new ApiError(
          0,
          'No answer in time',
          `${path} was still not ready after ${Math.round(opts.timeoutMs / 1000)} s`,
          undefined,
        );
      }
      await new Promise((resolve) => setTimeout(resolve, wait));
    }
  }
}

/** The pause a `Retry-After` header asks for (seconds or an HTTP date), within sane bounds. */
export function retryAfterMs(header: string | null, fallbackMs: number): number {
  let ms = fallbackMs;
  if (header && /^\d+(\.\d+)?$/.test(header.trim())) ms = Number(header) * 1000;
  else if (header && !Number.isNaN(Date.parse(header))) ms = Date.parse(header) - Date.now();
  return Math.min(MAX_DELAY_MS, Math.max(MIN_DELAY_MS, ms));
}

/** The {@link ApiError} of an error answer: the problem document's title, detail and code when it has them. */
export function apiErrorOf(answer: ApiAnswer): ApiError {
  const b = answer.body;
  const field = (k: string): string | undefined =>
    b && typeof b === 'object' && typeof (b as Record<string, unknown>)[k] === 'string'
      ? ((b as Record<string, unknown>)[k] as string)
      : undefined;
  const text = typeof b === 'string' ? b.trim().slice(0, 500) : '';
  return new ApiError(answer.status, field('title') ?? `HTTP ${answer.status}`, field('detail') ?? text, field('code'));
}

function parseAnswer<S extends z.ZodType>(schema: S, body: unknown, what: string): z.infer<S> {
  const result = schema.safeParse(body);
  if (!result.success) {
    throw new ApiError(
      0,
      'Unexpected answer from the Service',
      `${what} answered a body this client does not understand: ${result.error.issues[0]?.message ?? 'invalid'} at ${result.error.issues[0]?.path.join('.') ?? ''}`,
      undefined,
    );
  }
  return result.data;
}
