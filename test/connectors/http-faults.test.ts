/**
 * Failures of an API under the HTTP / JSON API connector, each from a loopback server: slow pages
 * (time-out, then retry), 429 with Retry-After, 500 then success, retries exhausted, a broken page
 * in the middle of a read, an API that cannot be reached, and what is (not) sent again for a POST.
 */
import type http from 'node:http';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import type { HostConnection } from '../../src/connectors/connection.js';
import type { ConnectorRecord } from '../../src/connectors/sdk.js';
import { collect } from './conformance.js';
import { json, openHttp, serve, type SeenRequest, type Served } from './http-api.js';

const ITEMS = Array.from({ length: 25 }, (_, i) => ({ id: i + 1, name: `item ${i + 1}` }));

const ENTITY = {
  name: 'items',
  path: '/items',
  recordsPath: 'items',
  fields: [
    { name: 'id', type: 'integer' },
    { name: 'name', type: 'string' },
  ],
  key: 'id',
  pagination: { type: 'page', sizeParam: 'size', pageSize: 10 },
  create: { method: 'POST', path: '/items' },
  update: { method: 'PUT', path: '/items/{id}' },
};

let cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups) await c();
  cleanups = [];
});

/** Pages of ITEMS (10 each); `fault` may answer a request itself (its n-th, 1-based) and return true. */
async function setup(
  fault: (req: SeenRequest, res: http.ServerResponse, n: number) => boolean | Promise<boolean>,
  props: Record<string, string> = {},
): Promise<{ served: Served; conn: HostConnection; logs: string[] }> {
  let n = 0;
  const served = await serve(async (req, res) => {
    if (await fault(req, res, ++n)) return;
    if (req.method === 'POST' || req.method === 'PUT') return json(res, 201, {});
    const page = Number(req.query.get('page'));
    json(res, 200, { items: ITEMS.slice((page - 1) * 10, page * 10) });
  });
  const logs: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _enc, cb) {
      logs.push(chunk.toString());
      cb();
    },
  });
  const { host, conn } = await openHttp(
    { baseUrl: served.url, definition: JSON.stringify({ entities: [ENTITY] }), retryDelayMs: '20', ...props },
    pino({ level: 'debug' }, sink),
  );
  cleanups.push(async () => {
    await host.close();
    await served.close();
  });
  return { served, conn, logs };
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));
const pageRequests = (s: Served): string[] =>
  s.requests.filter((r) => r.method === 'GET').map((r) => r.query.get('page') ?? '');

function expectAllOnce(records: ConnectorRecord[]): void {
  expect(records.map((r) => r['id'])).toEqual(ITEMS.map((i) => i.id));
}

describe('http connector faults', () => {
  it('a slow page times out and is asked again; every record once', async () => {
    const { served, conn, logs } = await setup(
      async (req, _res, n) => {
        if (req.query.get('page') === '2' && n === 2) await sleep(600);
        return false;
      },
      { timeoutSeconds: '0.2' },
    );
    expectAllOnce((await collect(conn.query('items'))).records);
    expect(pageRequests(served)).toEqual(['1', '2', '2', '3']);
    expect(logs.join('')).toContain('request retried');
  });

  it('429 with Retry-After: waits as told, then reads on; every record once', async () => {
    const { served, conn } = await setup((req, res, n) => {
      if (req.query.get('page') === '2' && n === 2) {
        json(res, 429, { message: 'slow down' }, { 'retry-after': '1' });
        return true;
      }
      return false;
    });
    expectAllOnce((await collect(conn.query('items'))).records);
    const twos = served.requests.filter((r) => r.query.get('page') === '2');
    expect(twos).toHaveLength(2);
    expect((twos[1] as SeenRequest).at - (twos[0] as SeenRequest).at).toBeGreaterThanOrEqual(950);
  });

  it('Retry-After as an HTTP date, capped by maxWaitSeconds', async () => {
    const { served, conn } = await setup(
      (req, res, n) => {
        if (n === 1) {
          json(res, 503, {}, { 'retry-after': new Date(Date.now() + 3_600_000).toUTCString() });
          return true;
        }
        return false;
      },
      { maxWaitSeconds: '0.3' },
    );
    const t0 = Date.now();
    expectAllOnce((await collect(conn.query('items'))).records);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(Date.now() - t0).toBeLessThan(3000);
    expect(pageRequests(served)).toEqual(['1', '1', '2', '3']);
  });

  it('500 then success: the page is asked again with back-off', async () => {
    const { served, conn } = await setup((req, res, n) => {
      if (req.query.get('page') === '3' && n < 6) {
        json(res, 500, { error: 'database hiccup' });
        return true;
      }
      return false;
    });
    expectAllOnce((await collect(conn.query('items'))).records);
    expect(pageRequests(served)).toEqual(['1', '2', '3', '3', '3', '3']);
  });

  it('retries exhausted: the read fails as a whole with the status and the API message', async () => {
    const { served, conn } = await setup(
      (req, res) => {
        if (req.query.get('page') === '2') {
          json(res, 502, { detail: 'upstream down' });
          return true;
        }
        return false;
      },
      { maxRetries: '2' },
    );
    const got: ConnectorRecord[] = [];
    const err = await (async () => {
      try {
        for await (const b of conn.query('items')) got.push(...b);
      } catch (e) {
        return e as { code: string; message: string };
      }
      throw new Error('expected a failure');
    })();
    expect(err.code).toBe('CON_DATASTORE_ERROR');
    expect(err.message).toContain('HTTP 502 (upstream down)');
    expect(err.message).toContain('after 3 tries');
    expect(got.map((r) => r['id'])).toEqual(ITEMS.slice(0, 10).map((i) => i.id));
    expect(pageRequests(served)).toEqual(['1', '2', '2', '2']);
  });

  it('a broken page in the middle fails the read naming the page; nothing of it is passed on', async () => {
    const { conn } = await setup((req, res) => {
      if (req.query.get('page') !== '2') return false;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end('{"items": [{"id": 11, "name": "item 11"}, {"id": 12, "na');
      return true;
    });
    const got: ConnectorRecord[] = [];
    let err: { code?: string; message?: string } | undefined;
    try {
      for await (const b of conn.query('items', undefined, { batchSize: 4 })) got.push(...b);
    } catch (e) {
      err = e as typeof err;
    }
    expect(err?.code).toBe('CON_DATASTORE_ERROR');
    expect(err?.message).toMatch(/page 2 of items \(GET \/items\?page=2&size=10\) is not valid JSON/);
    expect(got.map((r) => r['id'])).toEqual(ITEMS.slice(0, 10).map((i) => i.id));
  });

  it('a page without the records path fails the read naming the page and the path', async () => {
    const { conn } = await setup((_req, res) => {
      json(res, 200, { data: [] });
      return true;
    });
    await expect(collect(conn.query('items'))).rejects.toMatchObject({
      code: 'CON_DATASTORE_ERROR',
      message: expect.stringContaining('page 1 of items (GET /items?page=1&size=10) has no records at items') as string,
    });
  });

  it('404 on the read path is CON_ENTITY_NOT_FOUND; 400 is CON_QUERY_INVALID', async () => {
    const { conn } = await setup((req, res) => {
      json(res, req.query.get('page') === '1' ? 404 : 400, { message: 'no such collection' });
      return true;
    });
    await expect(collect(conn.query('items'))).rejects.toMatchObject({
      code: 'CON_ENTITY_NOT_FOUND',
      message: expect.stringContaining('HTTP 404 (no such collection)') as string,
    });
  });

  it('a POST answered 500 is not sent again and fails the call, never as record errors', async () => {
    const { served, conn } = await setup((req, res) => {
      if (req.method !== 'POST') return false;
      json(res, 500, { message: 'internal error' });
      return true;
    });
    await expect(conn.write('Create', 'items', [{ id: 1, name: 'a' }])).rejects.toMatchObject({
      code: 'CON_DATASTORE_ERROR',
      message: expect.stringContaining('POST /items: the API answered HTTP 500 (internal error)') as string,
    });
    expect(served.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('a PUT answered 500 is sent again (idempotent); a POST answered 503 too', async () => {
    let puts = 0;
    let posts = 0;
    const { served, conn } = await setup((req, res) => {
      if (req.method === 'PUT' && ++puts === 1) {
        json(res, 500, {});
        return true;
      }
      if (req.method === 'POST' && ++posts === 1) {
        json(res, 503, {}, { 'retry-after': '0' });
        return true;
      }
      return false;
    });
    expect((await conn.write('Update', 'items', [{ id: 1, name: 'a' }])).map((r) => r.ok)).toEqual([true]);
    expect((await conn.write('Create', 'items', [{ id: 2, name: 'b' }])).map((r) => r.ok)).toEqual([true]);
    expect(served.requests.map((r) => r.method)).toEqual(['PUT', 'PUT', 'POST', 'POST']);
  });

  it('a POST whose connection drops is not sent again: the call fails as CON_UNREACHABLE', async () => {
    const { served, conn } = await setup((req, res) => {
      if (req.method !== 'POST') return false;
      res.socket?.destroy();
      return true;
    });
    await expect(conn.write('Create', 'items', [{ id: 1, name: 'a' }])).rejects.toMatchObject({
      code: 'CON_UNREACHABLE',
    });
    expect(served.requests.filter((r) => r.method === 'POST')).toHaveLength(1);
  });

  it('an API that cannot be reached fails reads and writes as CON_UNREACHABLE after its retries', async () => {
    const { served } = await setup(() => false);
    const url = served.url;
    await served.close();
    const { host, conn } = await openHttp({
      baseUrl: url,
      definition: JSON.stringify({ entities: [ENTITY] }),
      maxRetries: '2',
      retryDelayMs: '10',
    });
    cleanups.push(() => host.close());
    await expect(collect(conn.query('items'))).rejects.toMatchObject({
      code: 'CON_UNREACHABLE',
      message: expect.stringMatching(
        /GET \/items\?page=1&size=10: the API cannot be reached \(ECONNREFUSED\) after 3 tries/,
      ) as string,
    });
    await expect(conn.write('Create', 'items', [{ id: 1 }])).rejects.toMatchObject({ code: 'CON_UNREACHABLE' });
    await expect(conn.test()).rejects.toMatchObject({ code: 'CON_UNREACHABLE' });
  });

  it('an abort during a Retry-After wait stops the read at once', async () => {
    const { conn } = await setup((_req, res) => {
      json(res, 429, {}, { 'retry-after': '30' });
      return true;
    });
    const ac = new AbortController();
    setTimeout(() => ac.abort(), 100);
    const t0 = Date.now();
    await expect(collect(conn.query('items', undefined, { signal: ac.signal }))).rejects.toMatchObject({
      code: 'CON_ABORTED',
    });
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  it('requestsPerSecond spaces the requests', async () => {
    const { served, conn } = await setup(() => false, { requestsPerSecond: '10' });
    expectAllOnce((await collect(conn.query('items'))).records);
    // Three pages at most ten a second: 100 ms between two.
    const at = served.requests.map((r) => r.at);
    expect(at).toHaveLength(3);
    expect((at[2] as number) - (at[0] as number)).toBeGreaterThanOrEqual(190);
  });
});
