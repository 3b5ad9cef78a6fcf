import { ConnectorError, type CallContext } from '../../src/connectors/sdk.js';
import type { EntityDef, Pagination } from './definition.js';
import type { HttpClient, HttpResponse } from './client.js';
import { getPath, parsePath, pathText } from './json-path.js';
import { shorten, statusText } from './errors.js';

/**
 * The pages of an entity's read, one at a time, the next one requested while the caller works on
 * the current one (memory: two pages). How the next page is found and when the read ends:
 *
 *   none     one request
 *   page     page number (`pageParam`, from `firstPage`) and size (`sizeParam` = pageSize)
 *   offset   offset (`offsetParam`, advanced by the records received) and `limitParam` = pageSize
 *   cursor   the value at `cursorPath` of a page sent as `cursorParam`, or the URL at `nextUrlPath`
 *   link     the `Link` header's rel="next" (RFC 8288)
 *
 *   page, offset   end at an empty page, or a short one (fewer records than the page size asked)
 *   cursor, link   end when a page has no next cursor / URL / link (an empty page with one goes on);
 *                  the same cursor or URL twice in a row is an error, not an endless loop
 *
 * A next URL or link to another origin than the base URL's is refused: the credentials of every
 * request would follow it. A page that is not JSON, or has no records at the records path, fails
 * the read naming the page (records already read stand; nothing of the bad page is passed on).
 */

export interface Page {
  /** 1-based, for messages. */
  number: number;
  records: readonly unknown[];
  what: string;
}

interface Fetched extends Page {
  next: URL | undefined;
}

/** The URL of the first page, with the entity's parameters and `extra` (filter and net-change parameters). */
function firstUrl(client: HttpClient, entity: EntityDef, extra: ReadonlyArray<[string, string]>): URL {
  const url = client.resolve(entity.readPath ?? '');
  for (const [k, v] of Object.entries(entity.params)) url.searchParams.set(k, v);
  for (const [k, v] of extra) url.searchParams.set(k, v);
  const p = entity.pagination;
  const size = pageSize(p);
  switch (p.type) {
    case 'page':
      url.searchParams.set(p.pageParam, String(p.firstPage));
      if (p.sizeParam && size) url.searchParams.set(p.sizeParam, String(size));
      break;
    case 'offset':
      url.searchParams.set(p.offsetParam, '0');
      url.searchParams.set(p.limitParam, String(p.pageSize));
      break;
    case 'cursor':
    case 'link':
      if (p.sizeParam && size) url.searchParams.set(p.sizeParam, String(size));
      break;
    case 'none':
      break;
  }
  return url;
}

/** The page size asked for, when known: a short page ends the read. */
function pageSize(p: Pagination): number | undefined {
  if (p.type === 'none') return undefined;
  if (p.type === 'offset') return p.pageSize;
  return p.pageSize ?? (p.sizeParam ? 100 : undefined);
}

export async function* readPages(
  client: HttpClient,
  entity: EntityDef,
  extra: ReadonlyArray<[string, string]>,
  ctx: CallContext,
): AsyncGenerator<Page, void, undefined> {
  // Aborts the page fetched ahead when the reader stops early.
  const ahead = new AbortController();
  const signal = AbortSignal.any([ctx.signal, ahead.signal]);
  const first = firstUrl(client, entity, extra);
  const origin = first.origin;
  const fetchPage = (url: URL, number: number, offset: number): Promise<Fetched> => {
    const p = fetchOne(client, entity, url, number, offset, origin, ctx, signal);
    // Handled here so that a failure while the reader works on the page before is not unhandled;
    // it is thrown when the page is awaited.
    p.catch(() => undefined);
    return p;
  };
  let pending: Promise<Fetched> | undefined = fetchPage(first, 1, 0);
  let offset = 0;
  try {
    while (pending) {
      const page: Fetched = await pending;
      offset += page.records.length;
      pending = page.next ? fetchPage(page.next, page.number + 1, offset) : undefined;
      ctx.log.debug({ entity: entity.fullName, page: page.number, records: page.records.length }, 'page read');
      yield page;
    }
  } finally {
    ahead.abort();
  }
}

async function fetchOne(
  client: HttpClient,
  entity: EntityDef,
  url: URL,
  number: number,
  offset: number,
  origin: string,
  ctx: CallContext,
  signal: AbortSignal,
): Promise<Fetched> {
  const what = `page ${number} of ${entity.name} (${client.describe('GET', url)})`;
  const res = await client.send({ method: 'GET', url }, ctx, signal);
  if (res.status < 200 || res.status >= 300) throw readError(res, what);
  let doc: unknown;
  try {
    doc = res.text.trim() === '' ? null : JSON.parse(res.text);
  } catch (err) {
    throw new ConnectorError('Datastore', `The ${what} is not valid JSON: ${shorten((err as Error).message)}.`);
  }
  const found = getPath(doc, entity.recordsPath);
  if (found === undefined)
    throw new ConnectorError(
      'Datastore',
      `The ${what} has no records at ${pathText(entity.recordsPath)}: check the entity's recordsPath.`,
    );
  const records: readonly unknown[] = Array.isArray(found) ? found : found === null ? [] : [found];
  const next = nextUrl(entity.pagination, url, res, doc, records.length, offset + records.length, what);
  if (next && next.origin !== origin)
    throw new ConnectorError(
      'Datastore',
      `The ${what} links its next page to another origin (${next.origin}); it is not followed.`,
    );
  if (next && next.href === url.href)
    throw new ConnectorError('Datastore', `The ${what} gives itself as the next page: the read would not end.`);
  return { number, records, what, next };
}

/** A read answered with a status that is no page. */
function readError(res: HttpResponse, what: string): ConnectorError {
  const text = `The ${what} failed: the API answered ${statusText(res.status, res.text)}.`;
  const opts = { nativeCode: String(res.status) };
  if (res.status === 404)
    return new ConnectorError('EntityNotFound', `${text} Check the base URL and the entity's path.`, opts);
  if (res.status === 400 || res.status === 422) return new ConnectorError('InvalidQuery', text, opts);
  return new ConnectorError('Datastore', text, opts);
}

function nextUrl(
  p: Pagination,
  url: URL,
  res: HttpResponse,
  doc: unknown,
  count: number,
  offset: number,
  what: string,
): URL | undefined {
  const size = pageSize(p);
  switch (p.type) {
    case 'none':
      return undefined;
    case 'page': {
      if (count === 0 || (size !== undefined && count < size)) return undefined;
      const next = new URL(url);
      next.searchParams.set(p.pageParam, String(Number(url.searchParams.get(p.pageParam)) + 1));
      return next;
    }
    case 'offset': {
      if (count === 0 || count < p.pageSize) return undefined;
      const next = new URL(url);
      next.searchParams.set(p.offsetParam, String(offset));
      return next;
    }
    case 'cursor': {
      if (p.nextUrlPath) {
        const v = getPath(doc, parsePath(p.nextUrlPath));
        if (v === undefined || v === null || v === '') return undefined;
        if (typeof v !== 'string')
          throw new ConnectorError('Datastore', `The ${what} has no URL at ${p.nextUrlPath} (a ${typeof v}).`);
        return new URL(v, res.url);
      }
      const v = getPath(doc, parsePath(p.cursorPath ?? ''));
      if (v === undefined || v === null || v === '' || v === false) return undefined;
      if (typeof v !== 'string' && typeof v !== 'number')
        throw new ConnectorError('Datastore', `The ${what} has no cursor at ${p.cursorPath ?? ''} (a ${typeof v}).`);
      const next = new URL(url);
      next.searchParams.set(p.cursorParam ?? 'cursor', String(v));
      return next;
    }
    case 'link': {
      const link = nextLink(res.headers.get('link'));
      return link === undefined ? undefined : new URL(link, res.url);
    }
  }
}

/** The target of the `rel="next"` link of a Link header (RFC 8288), if any. */
export function nextLink(header: string | null): string | undefined {
  if (!header) return undefined;
  for (const m of header.matchAll(/<([^>]*)>((?:\s*;\s*[^;,]+)*)/g)) {
    for (const param of (m[2] ?? '').split(';')) {
      const kv = /^\s*rel\s*=\s*"?([^"]*)"?\s*$/i.exec(param);
      if (kv && (kv[1] ?? '').toLowerCase().split(/\s+/).includes('next')) return m[1];
    }
  }
  return undefined;
}
