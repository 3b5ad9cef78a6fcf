/**
 * Writes of the HTTP / JSON API connector against loopback APIs: per-record requests and their
 * record errors (status, the API's message, nativeCode), batch requests with and without results
 * per record, the bodies sent (exact numbers, nested paths, read-only and json fields), Upsert,
 * Update/Insert, and what a write cannot do.
 */
import type http from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import type { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection } from '../../src/connectors/connection.js';
import type { WriteResult } from '../../src/connectors/sdk.js';
import { json, openHttp, serve, type SeenRequest, type Served } from './http-api.js';

const FIELDS = [
  { name: 'id', type: 'integer' },
  { name: 'name', type: 'string', path: 'profile.name' },
  { name: 'amount', type: 'decimal' },
  { name: 'big', type: 'integer' },
  { name: 'code', type: 'integer', asString: true },
  { name: 'meta', type: 'json' },
  { name: 'created', type: 'datetime', readOnly: true },
];

let cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups) await c();
  cleanups = [];
});

async function setup(
  handler: (req: SeenRequest, res: http.ServerResponse) => void,
  entity: Record<string, unknown>,
): Promise<{ served: Served; conn: HostConnection; host: ConnectorHost }> {
  const served = await serve(handler);
  const definition = JSON.stringify({ entities: [{ name: 'items', fields: FIELDS, key: 'id', ...entity }] });
  const { host, conn } = await openHttp({ baseUrl: served.url, definition, retryDelayMs: '1' });
  cleanups.push(async () => {
    await host.close();
    await served.close();
  });
  return { served, conn, host };
}

const outcome = (rs: WriteResult[]): string[] => rs.map((r) => (r.ok ? `ok${r.affected}` : r.error.code));

describe('http connector writes', () => {
  it('one request per record; each refusal fails its record alone with the status and the API message', async () => {
    const { served, conn } = await setup(
      (req, res) => {
        const body = JSON.parse(req.body) as { id: number };
        if (body.id === 2) return json(res, 422, { errors: [{ message: 'name is too long' }] });
        if (body.id === 3) return json(res, 409, { error: { message: 'id 3 exists' } });
        if (body.id === 4) {
          res.writeHead(400, { 'content-type': 'text/plain' });
          res.end('plain text refusal');
          return;
        }
        if (body.id === 5) return json(res, 418, { title: "I'm a teapot" });
        json(res, 201, { id: body.id, created: '2024-01-01T00:00:00Z' });
      },
      { create: { method: 'POST', path: '/items' } },
    );
    const res = await conn.write(
      'Create',
      'items',
      [1, 2, 3, 4, 5, 6].map((id) => ({ id, name: `n${id}` })),
    );
    expect(outcome(res)).toEqual(['ok1', 'InvalidValue', 'DuplicateKey', 'InvalidValue', 'DatastoreError', 'ok1']);
    expect(res[1]).toEqual({
      ok: false,
      error: {
        code: 'InvalidValue',
        message: 'POST /items: the API answered HTTP 422 (name is too long).',
        nativeCode: '422',
      },
    });
    expect(res[2]?.ok === false && res[2].error.message).toContain('HTTP 409 (id 3 exists)');
    expect(res[3]?.ok === false && res[3].error.message).toContain('HTTP 400 (plain text refusal)');
    expect(res[4]?.ok === false && res[4].error.nativeCode).toBe('418');
    // The key the API answered comes back with the result.
    expect(res[0]).toEqual({ ok: true, affected: 1, key: { id: 1 } });
    expect(served.requests).toHaveLength(6);
  });

  it('sends up to `concurrency` per-record requests at once (4 by default), one key never twice at once, in order', async () => {
    let inFlight = 0;
    let most = 0;
    const seenByKey = new Map<string, number[]>();
    const slow = async (req: SeenRequest, res: http.ServerResponse): Promise<void> => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 15));
      inFlight--;
      const body = JSON.parse(req.body) as { amount?: number };
      seenByKey.set(req.path, [...(seenByKey.get(req.path) ?? []), Number(body.amount)]);
      json(res, 200, {});
    };
    const { conn } = await setup((req, res) => void slow(req, res), {
      create: { path: '/items' },
      update: { path: '/items/{id}' },
    });
    const created = await conn.write(
      'Create',
      'items',
      Array.from({ length: 20 }, (_, i) => ({ id: i + 1, amount: i })),
    );
    expect(created.every((r) => r.ok)).toBe(true);
    expect(most).toBe(4);
    most = 0;
    // Six keys, each updated four times in one batch: per key, the updates arrive in input order.
    const updates = Array.from({ length: 24 }, (_, i) => ({ id: (i % 6) + 1, amount: i }));
    const updated = await conn.write('Update', 'items', updates);
    expect(updated.every((r) => r.ok)).toBe(true);
    expect(most).toBeGreaterThan(1);
    expect(most).toBeLessThanOrEqual(4);
    for (let id = 1; id <= 6; id++)
      expect(seenByKey.get(`/items/${id}`)).toEqual(updates.filter((u) => u.id === id).map((u) => u.amount));
  });

  it('concurrency 1 sends one request after the other', async () => {
    let inFlight = 0;
    let most = 0;
    const served = await serve(async (_req, res) => {
      most = Math.max(most, ++inFlight);
      await new Promise((resolve) => setTimeout(resolve, 5));
      inFlight--;
      json(res, 201, {});
    });
    const definition = JSON.stringify({
      entities: [{ name: 'items', fields: FIELDS, key: 'id', create: { path: '/items' } }],
    });
    const { host, conn } = await openHttp({ baseUrl: served.url, definition, concurrency: '1' });
    cleanups.push(async () => {
      await host.close();
      await served.close();
    });
    const res = await conn.write(
      'Create',
      'items',
      Array.from({ length: 10 }, (_, i) => ({ id: i + 1 })),
    );
    expect(res.every((r) => r.ok)).toBe(true);
    expect(most).toBe(1);
    expect(served.requests.map((r) => (JSON.parse(r.body) as { id: number }).id)).toEqual([
      1, 2, 3, 4, 5, 6, 7, 8, 9, 10,
    ]);
  });

  it('checks records before sending: unknown fields, values that do not fit, missing keys', async () => {
    const { served, conn } = await setup((_req, res) => json(res, 200, {}), {
      create: { path: '/items' },
      update: { path: '/items/{id}' },
    });
    const res = await conn.write('Update', 'items', [
      { id: 1, nope: 1 },
      { id: 2, amount: 'abc' },
      { name: 'no key' },
      { id: 4, name: 'ok' },
    ]);
    expect(outcome(res)).toEqual(['UnknownField', 'InvalidValue', 'MissingKey', 'ok1']);
    expect(res[1]?.ok === false && res[1].error.field).toBe('amount');
    expect(served.requests.map((r) => `${r.method} ${r.path}`)).toEqual(['PATCH /items/4']);
  });

  it('sends exact numbers, nested paths and json; leaves read-only fields out', async () => {
    const { served, conn } = await setup((_req, res) => json(res, 201, {}), { create: { path: '/items' } });
    await conn.write('Create', 'items', [
      {
        id: 1,
        name: 'Ann',
        amount: '12.50',
        big: '9007199254740993',
        code: 7,
        meta: '{"tags":["a"]}',
        created: '2024-01-01T00:00:00Z',
      },
    ]);
    expect(served.requests[0]?.body).toBe(
      '{"id":1,"profile":{"name":"Ann"},"amount":12.50,"big":9007199254740993,"code":"7","meta":{"tags":["a"]}}',
    );
    expect(served.requests[0]?.headers['content-type']).toBe('application/json');
  });

  it('update, upsert and delete by the key in the path; 404 is NotFound', async () => {
    const held = new Set(['1', '2']);
    const { served, conn } = await setup(
      (req, res) => {
        const id = decodeURIComponent(req.path.split('/').pop() ?? '');
        if (req.method === 'PUT') {
          const existed = held.has(id);
          held.add(id);
          return json(res, existed ? 200 : 201, {});
        }
        if (!held.has(id)) return json(res, 404, { message: `no item ${id}` });
        if (req.method === 'DELETE') {
          held.delete(id);
          res.writeHead(204).end();
          return;
        }
        json(res, 200, {});
      },
      {
        create: { path: '/items' },
        update: { method: 'PUT', path: '/items/{id}' },
        upsert: { method: 'PUT', path: '/items/{id}' },
        delete: { path: '/items/{id}' },
      },
    );
    expect(outcome(await conn.write('Update', 'items', [{ id: 1, name: 'x' }, { id: 9 }]))).toEqual(['ok1', 'ok1']);
    held.delete('9');
    const upd = await conn.write('Delete', 'items', [{ id: 1 }, { id: 1 }, { id: null }]);
    expect(outcome(upd)).toEqual(['ok1', 'NotFound', 'MissingKey']);
    expect(upd[1]?.ok === false && upd[1].error.message).toBe(
      'DELETE /items/1: the API answered HTTP 404 (no item 1).',
    );
    expect(outcome(await conn.write('Upsert', 'items', [{ id: 5 }, { id: 5, name: 'again' }]))).toEqual(['ok1', 'ok1']);
    const deletes = served.requests.filter((r) => r.method === 'DELETE');
    expect(deletes.map((r) => r.body)).toEqual(['', '']);
  });

  it('update/insert: updates by key, creates what the API does not hold', async () => {
    const held = new Set(['1']);
    const { served, conn } = await setup(
      (req, res) => {
        if (req.method === 'POST') return json(res, 201, {});
        json(res, held.has(req.path.split('/').pop() ?? '') ? 200 : 404, {});
      },
      { create: { path: '/items' }, update: { path: '/items/{id}' } },
    );
    expect(outcome(await conn.write('UpdateInsert', 'items', [{ id: 1 }, { id: 2 }]))).toEqual(['ok1', 'ok1']);
    // Records of different keys go in parallel lanes; a record's create follows its own update.
    const sent = served.requests.map((r) => `${r.method} ${r.path}`);
    expect([...sent].sort()).toEqual(['PATCH /items/1', 'PATCH /items/2', 'POST /items']);
    expect(sent.indexOf('POST /items')).toBeGreaterThan(sent.indexOf('PATCH /items/2'));
  });

  it('batch: one request per maxSize records, results per record from the answer', async () => {
    const { served, conn } = await setup(
      (req, res) => {
        const { data } = JSON.parse(req.body) as { data: Array<{ id: number }> };
        json(res, 207, {
          outcome: data.map((r) =>
            r.id % 3 === 0 ? { code: 409, message: `duplicate ${r.id}` } : { code: 201, id: r.id },
          ),
        });
      },
      {
        create: {
          path: '/items/bulk',
          wrap: 'data',
          batch: { maxSize: 4, resultsPath: 'outcome', statusPath: 'code' },
        },
      },
    );
    const records = Array.from({ length: 10 }, (_, i) => ({ id: i + 1 }));
    records.splice(4, 0, { id: 'bad' } as unknown as { id: number });
    const res = await conn.write('Create', 'items', records);
    expect(outcome(res)).toEqual([
      'ok1',
      'ok1',
      'DuplicateKey',
      'ok1',
      'InvalidValue',
      'ok1',
      'DuplicateKey',
      'ok1',
      'ok1',
      'DuplicateKey',
      'ok1',
    ]);
    expect(res[2]?.ok === false && res[2].error).toMatchObject({
      message: expect.stringContaining('POST /items/bulk: the API answered HTTP 409 (duplicate 3)') as string,
      nativeCode: '409',
    });
    expect(served.requests.map((r) => (JSON.parse(r.body) as { data: unknown[] }).data.length)).toEqual([4, 4, 2]);
  });

  it('batch without results per record: the request outcome stands for all its records', async () => {
    let n = 0;
    const { conn } = await setup(
      (_req, res) => (++n === 2 ? json(res, 400, { message: 'batch refused' }) : json(res, 200, { ok: true })),
      { create: { path: '/items', batch: { maxSize: 2 } } },
    );
    const res = await conn.write('Create', 'items', [{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }, { id: 5 }]);
    expect(outcome(res)).toEqual(['ok1', 'ok1', 'InvalidValue', 'InvalidValue', 'ok1']);
    expect(res[2]?.ok === false && res[2].error.message).toContain('HTTP 400 (batch refused)');
  });

  it('batch delete sends the keys; a batch answered 401 fails the call, not its records', async () => {
    const { served, conn } = await setup(
      (req, res) => (req.method === 'POST' ? json(res, 401, { message: 'expired' }) : json(res, 200, {})),
      {
        create: { path: '/items', batch: {} },
        delete: { method: 'POST', path: '/items/delete', batch: {} },
      },
    );
    await expect(conn.write('Create', 'items', [{ id: 1 }])).rejects.toMatchObject({ code: 'CON_AUTH_FAILED' });
    served.requests.length = 0;
    await expect(conn.write('Delete', 'items', [{ id: 1, name: 'n' }])).rejects.toMatchObject({
      code: 'CON_AUTH_FAILED',
    });
    expect(served.requests[0]?.body).toBe('[{"id":1}]');
  });

  it('refuses what the definition does not declare, other lookup fields, and checkpoints', async () => {
    const { conn } = await setup((_req, res) => json(res, 200, {}), {
      path: '/items',
      update: { path: '/items/{id}' },
    });
    await expect(conn.write('Create', 'items', [{ id: 1 }])).rejects.toMatchObject({ code: 'CON_UNSUPPORTED' });
    await expect(conn.write('Update', 'items', [{ id: 1 }], { keyFields: ['code'] })).rejects.toMatchObject({
      code: 'CON_UNSUPPORTED',
      message: expect.stringContaining('by id only') as string,
    });
    await expect(conn.write('Update', 'items', [{ id: 1 }], { keyFields: ['nope'] })).rejects.toMatchObject({
      code: 'CON_FIELD_NOT_FOUND',
    });
    const md = await conn.metadata();
    expect(md.entities[0]?.actions.map((a) => a.action)).toEqual(['Query', 'Update']);
  });
});
