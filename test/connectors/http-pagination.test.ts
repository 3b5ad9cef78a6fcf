/**
 * Reading through the HTTP / JSON API connector: each pagination kind against a loopback server,
 * the stop rules, records paths and field paths, type conversion, limits, filter push-down and net
 * change.
 */
import type http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection } from '../../src/connectors/connection.js';
import { collect } from './conformance.js';
import { json, openHttp, serve, type SeenRequest, type Served } from './http-api.js';

const ITEMS = Array.from({ length: 23 }, (_, i) => ({ id: i + 1, name: `item ${i + 1}` }));
const FIELDS = [
  { name: 'id', type: 'integer' },
  { name: 'name', type: 'string' },
];

let open: { served: Served; host: ConnectorHost; conn: HostConnection }[] = [];
afterEach(async () => {
  for (const o of open) {
    await o.host.close();
    await o.served.close();
  }
  open = [];
});

/** A server answering `handler` and a Connection whose definition has `entity` (fields default id, name). */
async function setup(
  handler: (req: SeenRequest, res: http.ServerResponse) => void,
  entity: Record<string, unknown>,
  props: Record<string, string> = {},
): Promise<{ served: Served; conn: HostConnection }> {
  const served = await serve(handler);
  const definition = JSON.stringify({ entities: [{ name: 'items', path: '/items', fields: FIELDS, ...entity }] });
  const { host, conn } = await openHttp({ baseUrl: served.url, definition, retryDelayMs: '1', ...props });
  open.push({ served, host, conn });
  return { served, conn };
}

const ids = (rs: Record<string, unknown>[]): number[] => rs.map((r) => Number(r['id']));
const all = ITEMS.map((i) => i.id);

describe('http connector pagination', () => {
  it('page: page number and size, ends at a short page', async () => {
    const { served, conn } = await setup(
      (req, res) => {
        const page = Number(req.query.get('p'));
        const size = Number(req.query.get('size'));
        json(res, 200, { data: ITEMS.slice((page - 1) * size, page * size) });
      },
      { recordsPath: 'data', pagination: { type: 'page', pageParam: 'p', sizeParam: 'size', pageSize: 5 } },
    );
    const { records, batches } = await collect(conn.query('items', undefined, { batchSize: 4 }));
    expect(ids(records)).toEqual(all);
    expect(Math.max(...batches)).toBeLessThanOrEqual(4);
    expect(served.requests.map((r) => r.query.get('p'))).toEqual(['1', '2', '3', '4', '5']);
    expect(served.requests.every((r) => r.query.get('size') === '5')).toBe(true);
  });

  it('page without a size: ends at an empty page; firstPage 0', async () => {
    const { served, conn } = await setup(
      (req, res) => {
        const page = Number(req.query.get('page'));
        json(res, 200, ITEMS.slice(page * 10, page * 10 + 10));
      },
      { recordsPath: '$', pagination: { type: 'page', firstPage: 0 } },
    );
    expect(ids((await collect(conn.query('items'))).records)).toEqual(all);
    expect(served.requests.map((r) => r.query.get('page'))).toEqual(['0', '1', '2', '3']);
  });

  it('offset: advanced by the records received, ends at a short page', async () => {
    const { served, conn } = await setup(
      (req, res) => {
        const offset = Number(req.query.get('offset'));
        json(res, 200, { items: ITEMS.slice(offset, offset + Number(req.query.get('limit'))) });
      },
      { recordsPath: 'items', pagination: { type: 'offset', pageSize: 6 } },
    );
    expect(ids((await collect(conn.query('items'))).records)).toEqual(all);
    expect(served.requests.map((r) => r.query.get('offset'))).toEqual(['0', '6', '12', '18']);
  });

  it('cursor: the cursor of each page into the next request, until there is none', async () => {
    const { served, conn } = await setup(
      (req, res) => {
        // The cursor is "c" and the offset of the next page.
        const from = Number((req.query.get('after') ?? 'c0').slice(1));
        const page = ITEMS.slice(from, from + 10);
        json(res, 200, { items: page, meta: { next: from + 10 < ITEMS.length ? `c${from + 10}` : null } });
      },
      {
        recordsPath: 'items',
        params: { status: 'all' },
        pagination: { type: 'cursor', cursorPath: 'meta.next', cursorParam: 'after', sizeParam: 'n', pageSize: 10 },
      },
      {},
    );
    expect(ids((await collect(conn.query('items'))).records)).toEqual(all);
    expect(served.requests.map((r) => r.query.get('after'))).toEqual([null, 'c10', 'c20']);
    expect(served.requests.every((r) => r.query.get('status') === 'all' && r.query.get('n') === '10')).toBe(true);
  });

  it('cursor: a full next URL from the page (relative or absolute)', async () => {
    let base = '';
    const { served, conn } = await setup(
      (req, res) => {
        const from = Number(req.query.get('from') ?? 0);
        const next =
          from + 10 >= ITEMS.length ? null : from === 0 ? `/items?from=10` : `${base}/items?from=${from + 10}`;
        json(res, 200, { results: ITEMS.slice(from, from + 10), links: { next } });
      },
      { recordsPath: 'results', pagination: { type: 'cursor', nextUrlPath: 'links.next' } },
    );
    base = served.url;
    expect(ids((await collect(conn.query('items'))).records)).toEqual(all);
    expect(served.requests.map((r) => r.query.get('from'))).toEqual([null, '10', '20']);
  });

  it('link: follows the Link header rel="next" until there is none', async () => {
    const { served, conn } = await setup(
      (req, res) => {
        const page = Number(req.query.get('page') ?? 1);
        const links = [`<${'/items?page=1'}>; rel="first"`];
        if (page * 8 < ITEMS.length) links.push(`</items?page=${page + 1}&per=8>; rel="next"`);
        json(res, 200, ITEMS.slice((page - 1) * 8, page * 8), { link: links.join(', ') });
      },
      { pagination: { type: 'link' } },
    );
    expect(ids((await collect(conn.query('items'))).records)).toEqual(all);
    expect(served.requests.map((r) => r.query.get('page'))).toEqual([null, '2', '3']);
  });

  it('none: one request; a top-level object is one record', async () => {
    const { served, conn } = await setup((_req, res) => json(res, 200, { id: 7, name: 'me' }), {});
    expect((await collect(conn.query('items'))).records).toEqual([{ id: 7, name: 'me' }]);
    expect(served.requests).toHaveLength(1);
  });

  it('refuses a next link to another origin, and a cursor that repeats', async () => {
    const other = await setup(
      (_req, res) => json(res, 200, ITEMS.slice(0, 2), { link: '<http://169.254.1.1/items?page=2>; rel="next"' }),
      { pagination: { type: 'link' } },
    );
    await expect(collect(other.conn.query('items'))).rejects.toMatchObject({
      code: 'CON_DATASTORE_ERROR',
      message: expect.stringContaining('another origin') as string,
    });
    const loop = await setup((_req, res) => json(res, 200, { items: ITEMS.slice(0, 2), next: 'same' }), {
      recordsPath: 'items',
      pagination: { type: 'cursor', cursorPath: 'next', cursorParam: 'c' },
    });
    await expect(collect(loop.conn.query('items'))).rejects.toMatchObject({
      message: expect.stringContaining('page 2 of items (GET /items?c=same) gives itself as the next page') as string,
    });
  });

  it('a limit stops the requests; stopping early sends no more', async () => {
    const { served, conn } = await setup(
      (req, res) => {
        const page = Number(req.query.get('page'));
        json(res, 200, ITEMS.slice((page - 1) * 5, page * 5));
      },
      { pagination: { type: 'page', sizeParam: 'size', pageSize: 5 } },
    );
    expect(ids((await collect(conn.query('items', undefined, { limit: 7 }))).records)).toEqual([1, 2, 3, 4, 5, 6, 7]);
    // Page 3 may have been asked ahead while page 2 was read; never page 4.
    expect(served.requests.length).toBeLessThanOrEqual(3);
    // The page asked ahead may reach the server after the query ended: let it arrive first.
    await new Promise((r) => setTimeout(r, 50));
    served.requests.length = 0;
    for await (const b of conn.query('items', undefined, { batchSize: 5 })) {
      expect(b).toHaveLength(5);
      break;
    }
    await new Promise((r) => setTimeout(r, 50));
    expect(served.requests.length).toBeLessThanOrEqual(2);
  });

  it('reads nested records and field paths, converting values to the declared types', async () => {
    const { conn } = await setup(
      (_req, res) =>
        json(res, 200, {
          response: {
            data: [
              {
                id: '12',
                attributes: { name: 'Ann', amount: 12.5, active: 'yes', at: '2024-05-01T12:00:00+02:00' },
                tags: ['a', 'b'],
              },
              { id: 13, attributes: { name: 'Bob', amount: '0.10', active: false, at: null } },
            ],
          },
        }),
      {
        recordsPath: 'response.data',
        fields: [
          { name: 'id', type: 'integer' },
          { name: 'name', path: 'attributes.name' },
          { name: 'amount', type: 'decimal', path: 'attributes.amount' },
          { name: 'active', type: 'boolean', path: 'attributes.active' },
          { name: 'at', type: 'datetime', path: 'attributes.at' },
          { name: 'tags', type: 'json' },
        ],
      },
    );
    expect((await collect(conn.query('items'))).records).toEqual([
      { id: 12, name: 'Ann', amount: '12.5', active: true, at: '2024-05-01T10:00:00.000Z', tags: '["a","b"]' },
      { id: 13, name: 'Bob', amount: '0.10', active: false, at: null, tags: null },
    ]);
  });

  it('pushes down the mapped conditions, and still applies the whole filter', async () => {
    // This API ignores `name` (it matches case-insensitively): the connector's own filter decides.
    const { served, conn } = await setup(
      (req, res) => {
        const want = req.query.get('q')?.toLowerCase();
        json(
          res,
          200,
          [...ITEMS, { id: 99, name: 'ITEM 3' }].filter((i) => !want || i.name.toLowerCase() === want),
        );
      },
      { filters: [{ field: 'name', param: 'q' }] },
    );
    const { records } = await collect(
      conn.query('items', {
        op: 'and',
        args: [
          { op: '=', field: 'name', value: 'item 3' },
          { op: '>', field: 'id', value: 0 },
        ],
      }),
    );
    expect(ids(records)).toEqual([3]);
    expect(served.requests[0]?.query.get('q')).toBe('item 3');
    // A condition under OR is not pushed down.
    served.requests.length = 0;
    await collect(
      conn.query('items', {
        op: 'or',
        args: [
          { op: '=', field: 'name', value: 'item 3' },
          { op: '=', field: 'id', value: 5 },
        ],
      }),
    );
    expect(served.requests[0]?.query.has('q')).toBe(false);
  });

  it('net change: sends since in the declared format, keeps records at or after it, ascending', async () => {
    const rows = [
      { id: 1, updated: '2024-03-01T00:00:00Z' },
      { id: 2, updated: '2024-01-01T00:00:00Z' },
      { id: 3, updated: '2024-02-01T00:00:00Z' },
      { id: 4, updated: null },
      { id: 5, updated: '2024-02-01T00:00:00Z' },
    ];
    const fields = [
      { name: 'id', type: 'integer' },
      { name: 'updated', type: 'datetime' },
    ];
    const { served, conn } = await setup((_req, res) => json(res, 200, rows), {
      fields,
      netChange: { field: 'updated', param: 'since', format: 'unix' },
    });
    const since = { field: 'updated', since: '2024-02-01T00:00:00Z' };
    expect(ids((await collect(conn.query('items', undefined, { netChange: since }))).records)).toEqual([3, 5, 1]);
    expect(served.requests[0]?.query.get('since')).toBe(String(Date.parse(since.since) / 1000));
    // Declared ordered: the API's order is kept (this one is not ordered, which shows it).
    const ordered = await setup((_req, res) => json(res, 200, rows), {
      fields,
      netChange: { field: 'updated', ordered: true },
    });
    expect(ids((await collect(ordered.conn.query('items', undefined, { netChange: since }))).records)).toEqual([
      1, 3, 5,
    ]);
  });
});
