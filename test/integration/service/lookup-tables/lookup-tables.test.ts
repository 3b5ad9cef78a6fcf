import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Value {
  id: string;
  value1: string;
  value2: string;
  creationDate: string;
  lastModificationDate: string;
}
interface Table {
  id: string;
  name: string;
  description: string | null;
  creationDate: string;
  lastModificationDate: string;
  modificationBy: string | null;
  lookupTableValues?: Value[];
}
interface Problem {
  status: number;
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe.each(STORE_TARGETS)('Lookup Tables on $name', (target) => {
  let svc: TestService;
  let L: string;
  beforeAll(async () => {
    svc = await startService(target);
    L = `/v1/orgs/${svc.orgId}/lookuptables`;
  });
  afterAll(async () => svc?.close());

  let counter = 0;
  const create = async (
    values: Array<{ value1: string; value2?: string | null }> = [],
    extra: Record<string, unknown> = {},
  ) => {
    counter += 1;
    const res = await svc.request<Table>('POST', L, {
      body: { name: `Table ${counter}`, lookupTableValues: values, ...extra },
    });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };

  it('creates a table with its values: 201, Location, and the fields the Service sets', async () => {
    const res = await svc.request<Table>('POST', L, {
      body: {
        name: '  Countries  ',
        description: 'ISO codes',
        lookupTableValues: [
          { value1: 'NO', value2: 'Norway' },
          { value1: 'SE', value2: '' },
          { value1: 'DK', value2: null },
        ],
      },
    });
    expect(res.status).toBe(201);
    expect(res.headers['content-type']).toMatch(/application\/json/);
    expect(res.body.id).toMatch(GUID);
    expect(res.headers['location']).toBe(`${L}/${res.body.id}`);
    expect(res.body).toMatchObject({ name: 'Countries', description: 'ISO codes', modificationBy: svc.admin.email });
    expect(Date.parse(res.body.creationDate)).not.toBeNaN();
    expect(res.body.lastModificationDate).toBe(res.body.creationDate);
    expect(res.body.lookupTableValues?.map((v) => [v.value1, v.value2])).toEqual([
      ['NO', 'Norway'],
      ['SE', ''],
      ['DK', ''],
    ]);
    for (const v of res.body.lookupTableValues ?? []) {
      expect(v.id).toMatch(GUID);
      expect(v.creationDate).toBe(res.body.creationDate);
    }
    const got = await svc.request<Table>('GET', `${L}/${res.body.id}`);
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
  });

  it('ignores the fields the Service owns and matches keys case-insensitively', async () => {
    const res = await svc.request<Table>('POST', L, {
      body: {
        Id: '11111111-1111-4111-8111-111111111111',
        Name: 'Pascal',
        ModificationBy: 'Cloud',
        CreationDate: '2000-01-01T00:00:00Z',
        LookupTableValues: [{ Value1: 'a', Value2: 'b', Id: 'x' }],
      },
    });
    expect(res.status).toBe(201);
    expect(res.body.id).not.toBe('11111111-1111-4111-8111-111111111111');
    expect(res.body.modificationBy).toBe(svc.admin.email);
    expect(res.body.creationDate).not.toBe('2000-01-01T00:00:00Z');
    expect(res.body.lookupTableValues?.[0]).toMatchObject({ value1: 'a', value2: 'b' });
  });

  it('refuses a duplicate name in the Organization, ignoring case, with 409', async () => {
    await create([], { name: 'Unique name' });
    const dup = await svc.request<Problem>('POST', L, { body: { name: 'UNIQUE NAME ' } });
    expect(dup.status).toBe(409);
    expect(dup.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(dup.body.code).toBe('API_DUPLICATE_NAME');
    const child = await svc.request<{ id: number }>('POST', '/v1/orgs', {
      body: {
        name: 'Lookup child',
        parentId: svc.orgId,
        securityRules: [
          {
            name: 'lo',
            allowedIpRangeStartAddress: '127.0.0.1',
            allowedIpRangeEndAddress: '127.0.0.1',
            apiAccessEnabled: true,
          },
        ],
      },
    });
    const other = await svc.request('POST', `/v1/orgs/${child.body.id}/lookuptables`, {
      body: { name: 'Unique name' },
    });
    expect(other.status).toBe(201);
    const concurrent = await Promise.all([1, 2, 3].map(() => svc.request('POST', L, { body: { name: 'Raced name' } })));
    expect(concurrent.map((r) => r.status).sort()).toEqual([201, 409, 409]);
  });

  it('lists tables by name with Total-Count, limit and offset, and values only on request', async () => {
    const list = await svc.request<Table[]>('GET', `${L}?limit=2&offset=1`);
    expect(list.status).toBe(200);
    const total = Number(list.headers['total-count']);
    expect(total).toBeGreaterThanOrEqual(4);
    expect(list.body).toHaveLength(2);
    expect(list.body[0]).not.toHaveProperty('lookupTableValues');
    const all = await svc.request<Table[]>('GET', `${L}?limit=1000`);
    expect(all.body).toHaveLength(total);
    const names = all.body.map((t) => t.name.toLowerCase());
    expect(names).toEqual([...names].sort());
    const withValues = await svc.request<Table[]>('GET', `${L}?includeLookupTableValues=true&limit=1000`);
    expect(withValues.headers['total-count']).toBe(String(total));
    const countries = withValues.body.find((t) => t.name === 'Countries');
    expect(countries?.lookupTableValues?.map((v) => v.value1)).toEqual(['NO', 'SE', 'DK']);
    expect(withValues.body.every((t) => Array.isArray(t.lookupTableValues))).toBe(true);
    const empty = await svc.request<Table[]>('GET', `${L}?offset=100000`);
    expect(empty.body).toEqual([]);
    expect(empty.headers['total-count']).toBe(String(total));
  });

  it('modifies: PUT replaces every value, or keeps them when lookupTableValues is absent', async () => {
    const table = await create([
      { value1: 'a', value2: '1' },
      { value1: 'b', value2: '2' },
    ]);
    const user = await addUser(svc, svc.orgId, 'User');
    const put = await svc.request<Table>('PUT', `${L}/${table.id}`, {
      auth: user,
      body: { name: 'Renamed', description: 'd', lookupTableValues: [{ value1: 'c', value2: '3' }] },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      id: table.id,
      name: 'Renamed',
      description: 'd',
      modificationBy: user.email,
      creationDate: table.creationDate,
    });
    expect(put.body.lastModificationDate >= table.lastModificationDate).toBe(true);
    expect(put.body.lookupTableValues?.map((v) => [v.value1, v.value2])).toEqual([['c', '3']]);
    const keep = await svc.request<Table>('PUT', `${L}/${table.id}`, { body: { name: 'Renamed again' } });
    expect(keep.body.lookupTableValues?.map((v) => v.value1)).toEqual(['c']);
    expect(keep.body.description).toBeNull();
    const clear = await svc.request<Table>('PUT', `${L}/${table.id}`, {
      body: { name: 'Renamed again', lookupTableValues: [] },
    });
    expect(clear.body.lookupTableValues).toEqual([]);
  });

  it('accepts a model read with GET back on PUT unchanged', async () => {
    const table = await create([
      { value1: 'x', value2: 'y' },
      { value1: 'z', value2: '' },
    ]);
    const got = await svc.request<Table>('GET', `${L}/${table.id}`);
    const put = await svc.request<Table>('PUT', `${L}/${table.id}`, { body: got.body });
    expect(put.status).toBe(200);
    expect(put.body.lookupTableValues?.map((v) => [v.value1, v.value2])).toEqual([
      ['x', 'y'],
      ['z', ''],
    ]);
  });

  it('refuses a rename onto another table, an ID that differs from the path, and unknown tables', async () => {
    const a = await create([], { name: 'Rename A' });
    await create([], { name: 'Rename B' });
    const clash = await svc.request<Problem>('PUT', `${L}/${a.id}`, { body: { name: 'rename b' } });
    expect(clash.status).toBe(409);
    expect(clash.body.code).toBe('API_DUPLICATE_NAME');
    const sameNameOtherCase = await svc.request<Table>('PUT', `${L}/${a.id}`, { body: { name: 'RENAME A' } });
    expect(sameNameOtherCase.status).toBe(200);
    const wrongId = await svc.request<Problem>('PUT', `${L}/${a.id}`, {
      body: { id: '11111111-1111-4111-8111-111111111111', name: 'x' },
    });
    expect(wrongId.status).toBe(400);
    expect(wrongId.body.errors?.[0]?.path).toBe('body.id');
    const missing = '11111111-1111-4111-8111-111111111111';
    expect((await svc.request('PUT', `${L}/${missing}`, { body: { name: 'x' } })).status).toBe(404);
    expect((await svc.request('GET', `${L}/${missing}`)).status).toBe(404);
    expect((await svc.request('DELETE', `${L}/${missing}`)).status).toBe(404);
    expect((await svc.request<Problem>('GET', `${L}/not-a-guid`)).status).toBe(400);
  });

  it('deletes a table with its values', async () => {
    const table = await create([{ value1: 'a', value2: 'b' }]);
    const del = await svc.request('DELETE', `${L}/${table.id}`);
    expect(del.status).toBe(204);
    expect(del.text).toBe('');
    expect((await svc.request('GET', `${L}/${table.id}`)).status).toBe(404);
    expect((await svc.request('GET', `${L}/${table.id}/values`)).status).toBe(404);
    const { db } = svc.service.store;
    const left = await db.selectFrom('lookupTableValues').select('id').where('tableId', '=', table.id).execute();
    expect(left).toEqual([]);
  });

  it('stores 25,000 values from one request, in several INSERT statements, in order', async () => {
    const values = Array.from({ length: 25_000 }, (_, i) => ({ value1: `k${i}`, value2: `v${i % 7}` }));
    const res = await svc.request<Table>('POST', L, { body: { name: 'Big', lookupTableValues: values } });
    expect(res.status).toBe(201);
    expect(res.body.lookupTableValues).toHaveLength(25_000);
    expect(res.body.lookupTableValues?.[24_999]).toMatchObject({ value1: 'k24999', value2: 'v2' });
    const page = await svc.request<Value[]>('GET', `${L}/${res.body.id}/values?limit=3&offset=24998`);
    expect(page.headers['total-count']).toBe('25000');
    expect(page.body.map((v) => v.value1)).toEqual(['k24998', 'k24999']);
    const ids = new Set(res.body.lookupTableValues?.map((v) => v.id));
    expect(ids.size).toBe(25_000);
  });

  it('answers bad input with 400 problems naming the field, never 500', async () => {
    const cases: Array<[unknown, string]> = [
      [{}, 'body.name'],
      [{ name: '   ' }, 'body.name'],
      [{ name: 'x'.repeat(256) }, 'body.name'],
      [{ name: 'ok', description: 'x'.repeat(4001) }, 'body.description'],
      [{ name: 'ok', lookupTableValues: 'x' }, 'body.lookupTableValues'],
      [{ name: 'ok', lookupTableValues: [{ value2: 'no value1' }] }, 'body.lookupTableValues.0.value1'],
      [{ name: 'ok', lookupTableValues: [{ value1: '', value2: 'x' }] }, 'body.lookupTableValues.0.value1'],
      [
        {
          name: 'ok',
          lookupTableValues: [
            { value1: 'a', value2: 'b' },
            { value1: 'x'.repeat(401), value2: 'b' },
          ],
        },
        'body.lookupTableValues.1.value1',
      ],
      [
        { name: 'ok', lookupTableValues: [{ value1: 'a', value2: 'é'.repeat(401) }] },
        'body.lookupTableValues.0.value2',
      ],
      [{ name: 'ok', lookupTableValues: [{ value1: 1, value2: 'b' }] }, 'body.lookupTableValues.0.value1'],
      [{ name: 'ok', lookupTableValues: [{ value1: 'a', value2: 'b', extra: 1 }] }, 'body.lookupTableValues.0.extra'],
      [{ name: 'ok', nmae: 'typo' }, 'body.nmae'],
    ];
    for (const [body, path] of cases) {
      const res = await svc.request<Problem>('POST', L, { body });
      expect(res.status, JSON.stringify(body).slice(0, 80)).toBe(400);
      expect(
        res.body.errors?.map((e) => e.path),
        JSON.stringify(body).slice(0, 80),
      ).toContain(path);
    }
    const list = await svc.request<Table[]>('GET', `${L}?limit=1000`);
    expect(list.body.some((t) => t.name === 'ok')).toBe(false);
    expect((await svc.request('GET', `${L}?limit=1001`)).status).toBe(400);
    expect((await svc.request('GET', `${L}?includeLookupTableValues=maybe`)).status).toBe(400);
    expect((await svc.request('POST', L, { body: '{"name":' })).status).toBe(400);
  });

  it('keeps values of 400 characters, multi-byte ones included', async () => {
    const long = ['x'.repeat(400), '中'.repeat(400), '😀'.repeat(200)];
    const table = await create(long.map((v) => ({ value1: v, value2: v })));
    expect(table.lookupTableValues?.map((v) => v.value1)).toEqual(long);
  });

  it('lets Read-only users read but not change, and Users change', async () => {
    const table = await create([{ value1: 'a', value2: 'b' }]);
    const reader = await addUser(svc, svc.orgId, 'ReadOnly');
    const user = await addUser(svc, svc.orgId, 'User');
    expect((await svc.request('GET', L, { auth: reader })).status).toBe(200);
    expect((await svc.request('GET', `${L}/${table.id}`, { auth: reader })).status).toBe(200);
    for (const [method, path, body] of [
      ['POST', L, { name: 'by reader' }],
      ['PUT', `${L}/${table.id}`, { name: 'by reader' }],
      ['DELETE', `${L}/${table.id}`, undefined],
    ] as const) {
      const res = await svc.request<Problem>(method, path, { auth: reader, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.code).toBe('API_FORBIDDEN_ROLE');
    }
    const made = await svc.request<Table>('POST', L, { auth: user, body: { name: 'by user' } });
    expect(made.status).toBe(201);
    expect(made.body.modificationBy).toBe(user.email);
    expect((await svc.request('DELETE', `${L}/${made.body.id}`, { auth: user })).status).toBe(204);
    const outsider = await addUser(svc, undefined, 'User');
    expect((await svc.request('GET', L, { auth: outsider })).status).toBe(404);
    expect((await svc.request('GET', L, { auth: null })).status).toBe(401);
  });

  it('refuses calls from an address no Security Rule opens', async () => {
    const table = await create();
    for (const [method, path] of [
      ['GET', L],
      ['GET', `${L}/${table.id}`],
      ['POST', L],
      ['DELETE', `${L}/${table.id}`],
    ] as const) {
      const res = await svc.request<Problem>(method, path, {
        from: '127.0.0.2',
        body: method === 'POST' ? { name: 'from afar' } : undefined,
      });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.code).toBe('API_FORBIDDEN_IP');
    }
    expect((await svc.request('GET', `${L}/${table.id}`)).status).toBe(200);
  });

  it('compares values by code point on the store: binary on SQLite, COLLATE "C" on PostgreSQL', async () => {
    const db = svc.service.store.db.withoutPlugins();
    if (target.name === 'postgres') {
      const cols = await sql<{ column_name: string; collation_name: string | null }>`
        SELECT column_name, collation_name FROM information_schema.columns
        WHERE table_name = 'lookup_table_values' AND column_name IN ('value1', 'value2') ORDER BY column_name`.execute(
        db,
      );
      expect(cols.rows).toEqual([
        { column_name: 'value1', collation_name: 'C' },
        { column_name: 'value2', collation_name: 'C' },
      ]);
    } else {
      const order = await sql<{
        v: string;
      }>`SELECT v FROM (SELECT 'b' AS v UNION ALL SELECT 'B' UNION ALL SELECT 'é' UNION ALL SELECT 'a') ORDER BY v`.execute(
        db,
      );
      expect(order.rows.map((r) => r.v)).toEqual(['B', 'a', 'b', 'é']);
    }
  });
});
