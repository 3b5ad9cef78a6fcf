import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadLookupTables } from '../../../../service/store/repos/lookup-tables.repo.js';
import { lookupTableValue2, lookupTableValue2Default } from '../../../../src/maps/lookup/lookup-set.js';
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
  lastModificationDate: string;
  modificationBy: string;
  lookupTableValues: Value[];
}
interface Problem {
  status: number;
  code: string;
  detail: string;
  errors?: Array<{ path: string }>;
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;
const MISSING = '11111111-1111-4111-8111-111111111111';

/** Duplicates whose first value in code-point order differs from locale order and from UTF-16 order. */
const TRICKY = ['b', 'B', 'a', 'é', 'e', '😀', '\uff21', 'Z', '10', '9'];

describe.each(STORE_TARGETS)('Lookup Table values and lookups on $name', (target) => {
  let svc: TestService;
  let L: string;
  let table: Table;
  beforeAll(async () => {
    svc = await startService(target);
    L = `/v1/orgs/${svc.orgId}/lookuptables`;
    const values = [
      { value1: 'NO', value2: 'Norway' },
      { value1: 'NO', value2: 'Noreg' },
      { value1: 'SE', value2: 'Sweden' },
      { value1: 'SV', value2: 'Sweden' },
      { value1: 'no', value2: 'lower case' },
      { value1: 'a/b c', value2: 'slash & space' },
      { value1: 'x/', value2: 'trailing slash' },
      { value1: 'Zürich 中文 😀', value2: 'unicode' },
      { value1: 'q?#%+', value2: 'reserved' },
      { value1: 'empty', value2: '' },
      ...TRICKY.map((v) => ({ value1: 'dup', value2: v })),
      ...TRICKY.map((v) => ({ value1: v, value2: 'dup' })),
    ];
    const res = await svc.request<Table>('POST', L, { body: { name: 'Countries', lookupTableValues: values } });
    expect(res.status).toBe(201);
    table = res.body;
  });
  afterAll(async () => svc?.close());

  const value2For = (ref: string, value1: string) =>
    svc.request<Value & Problem>('GET', `${L}/${encodeURIComponent(ref)}/values/value2/${encodeURIComponent(value1)}`);
  const value1For = (ref: string, value2: string) =>
    svc.request<Value & Problem>('GET', `${L}/${encodeURIComponent(ref)}/values/value1/${encodeURIComponent(value2)}`);

  describe('lookups', () => {
    it('return the matching Lookup Table Value: value2 for a value1 and value1 for a value2', async () => {
      const v2 = await value2For(table.id, 'SE');
      expect(v2.status).toBe(200);
      expect(v2.body).toMatchObject({ value1: 'SE', value2: 'Sweden' });
      expect(v2.body.id).toMatch(GUID);
      const v1 = await value1For(table.id, 'Norway');
      expect(v1.body).toMatchObject({ value1: 'NO', value2: 'Norway' });
    });

    it('return the first alphabetically (by code point) among duplicates, in both directions', async () => {
      expect((await value2For(table.id, 'NO')).body.value2).toBe('Noreg');
      expect((await value1For(table.id, 'Sweden')).body.value1).toBe('SE');
      const first = [...TRICKY].sort((a, b) => Buffer.compare(Buffer.from(a), Buffer.from(b)))[0];
      expect(first).toBe('10');
      expect((await value2For(table.id, 'dup')).body.value2).toBe('10');
      expect((await value1For(table.id, 'dup')).body.value1).toBe('10');
    });

    it('find the table by ID, or by name ignoring case', async () => {
      expect((await value2For('countries', 'SE')).body.value2).toBe('Sweden');
      expect((await value2For('COUNTRIES', 'SE')).status).toBe(200);
      expect((await value2For(table.id.toUpperCase(), 'SE')).status).toBe(200);
    });

    it('try a GUID as an ID first, then as a name', async () => {
      const other = await svc.request<Table>('POST', L, {
        body: { name: 'Other', lookupTableValues: [{ value1: 'k', value2: 'from Other' }] },
      });
      const guidNamed = await svc.request<Table>('POST', L, {
        body: { name: other.body.id, lookupTableValues: [{ value1: 'k', value2: 'from the GUID-named table' }] },
      });
      expect(guidNamed.status).toBe(201);
      expect((await value2For(other.body.id, 'k')).body.value2).toBe('from Other');
      const unusedGuid = '22222222-2222-4222-8222-222222222222';
      await svc.request('POST', L, {
        body: { name: unusedGuid, lookupTableValues: [{ value1: 'k', value2: 'by name' }] },
      });
      expect((await value2For(unusedGuid, 'k')).body.value2).toBe('by name');
    });

    it('match values exactly, URL-decoded: case, spaces, slashes, reserved characters and unicode', async () => {
      expect((await value2For(table.id, 'no')).body.value2).toBe('lower case');
      expect((await value2For(table.id, 'a/b c')).body.value2).toBe('slash & space');
      expect((await value2For(table.id, 'x/')).body.value2).toBe('trailing slash');
      expect((await value2For(table.id, 'Zürich 中文 😀')).body.value2).toBe('unicode');
      expect((await value2For(table.id, 'q?#%+')).body.value2).toBe('reserved');
      expect((await value2For(table.id, 'empty')).body.value2).toBe('');
      expect((await value1For(table.id, 'slash & space')).body.value1).toBe('a/b c');
      const plus = await svc.request<Value>('GET', `${L}/Countries/values/value2/a%2Fb+c`);
      expect(plus.status).toBe(404);
    });

    it('answer a 404 problem naming the table and the value when nothing matches', async () => {
      const none = await value2For('Countries', 'XX');
      expect(none.status).toBe(404);
      expect(none.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(none.body.code).toBe('API_NOT_FOUND');
      expect(none.body.detail).toContain('"Countries"');
      expect(none.body.detail).toContain('"XX"');
      const reverse = await value1For('Countries', 'Atlantis');
      expect(reverse.status).toBe(404);
      expect(reverse.body.detail).toContain('"Atlantis"');
      const noTable = await value2For('Cities', 'NO');
      expect(noTable.status).toBe(404);
      expect(noTable.body.detail).toContain('"Cities"');
      expect((await value2For(MISSING, 'NO')).status).toBe(404);
      expect((await value2For(table.id, 'x'.repeat(450))).status).toBe(404);
    });

    it('do not see the tables of another Organization', async () => {
      const child = await svc.request<{ id: number }>('POST', '/v1/orgs', {
        body: {
          name: 'Other org',
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
      const res = await svc.request('GET', `/v1/orgs/${child.body.id}/lookuptables/${table.id}/values/value2/SE`);
      expect(res.status).toBe(404);
      expect((await svc.request('GET', `/v1/orgs/${child.body.id}/lookuptables/${table.id}/values`)).status).toBe(404);
    });
  });

  describe('loadLookupTables (the Map engine reads tables once per run)', () => {
    it('loads tables by name or ID and answers exactly as the REST lookups do', async () => {
      const set = await loadLookupTables(svc.service.store.db, svc.orgId, ['countries', table.id, 'Missing table']);
      expect(set.tables()).toHaveLength(1);
      const rest = await svc.request<Value[]>('GET', `${L}/${table.id}/values?limit=1000`);
      for (const v of rest.body) {
        const byValue1 = await value2For(table.id, v.value1);
        expect(set.value2('Countries', v.value1), v.value1).toBe(byValue1.body.value2);
        // An empty value2 cannot be written as a path segment: the REST lookup cannot ask for it.
        if (v.value2 === '') continue;
        const byValue2 = await value1For(table.id, v.value2);
        expect(set.value1(table.id, v.value2), v.value2).toBe(byValue2.body.value1);
      }
      expect(set.value1('Countries', '')).toBe('empty');
      expect(lookupTableValue2(set, 'Countries', 'NO')).toBe('Noreg');
      expect(lookupTableValue2Default(set, 'Countries', 'XX', 'default')).toBe('default');
      expect(() => lookupTableValue2(set, 'Missing table', 'NO')).toThrow(
        expect.objectContaining({ code: 'MAP_LOOKUP_TABLE_NOT_FOUND' }),
      );
      expect(() => lookupTableValue2(set, 'Countries', 'XX')).toThrow(
        expect.objectContaining({ code: 'MAP_LOOKUP_NO_MATCH' }),
      );
    });

    it("reads large tables in pages and only the Organization's own", async () => {
      const values = Array.from({ length: 23_456 }, (_, i) => ({ value1: `k${i % 20_000}`, value2: `v${i}` }));
      const big = await svc.request<Table>('POST', L, { body: { name: 'Load big', lookupTableValues: values } });
      expect(big.status).toBe(201);
      const set = await loadLookupTables(svc.service.store.db, svc.orgId, ['Load big']);
      expect(set.table('Load big')?.size).toBe(23_456);
      expect(set.value2('Load big', 'k5')).toBe('v20005');
      expect(set.value2('Load big', 'k19999')).toBe('v19999');
      const elsewhere = await loadLookupTables(svc.service.store.db, svc.orgId + 1000, ['Load big', 'Countries']);
      expect(elsewhere.tables()).toEqual([]);
    });
  });

  describe('values one at a time', () => {
    it('lists values in insertion order with Total-Count, limit and offset', async () => {
      const page = await svc.request<Value[]>('GET', `${L}/${table.id}/values?limit=3&offset=1`);
      expect(page.status).toBe(200);
      expect(page.headers['total-count']).toBe(String(table.lookupTableValues.length));
      expect(page.body.map((v) => v.value2)).toEqual(['Noreg', 'Sweden', 'Sweden']);
      const all = await svc.request<Value[]>('GET', `${L}/${table.id}/values`);
      expect(all.body).toHaveLength(table.lookupTableValues.length);
      expect((await svc.request('GET', `${L}/${table.id}/values?limit=-1`)).status).toBe(400);
      expect((await svc.request('GET', `${L}/${MISSING}/values`)).status).toBe(404);
    });

    it('creates, reads, modifies and deletes a value, stamping the table', async () => {
      const t = (
        await svc.request<Table>('POST', L, {
          body: { name: 'One by one', lookupTableValues: [{ value1: 'first', value2: '1' }] },
        })
      ).body;
      const user = await addUser(svc, svc.orgId, 'User');
      const created = await svc.request<Value>('POST', `${L}/${t.id}/values`, {
        auth: user,
        body: { Value1: 'second', Value2: '2' },
      });
      expect(created.status).toBe(201);
      expect(created.body.id).toMatch(GUID);
      expect(created.headers['location']).toBe(`${L}/${t.id}/values/${created.body.id}`);
      expect(created.body).toMatchObject({ value1: 'second', value2: '2' });
      const stamped = await svc.request<Table>('GET', `${L}/${t.id}`);
      expect(stamped.body.modificationBy).toBe(user.email);
      expect(stamped.body.lookupTableValues.map((v) => v.value1)).toEqual(['first', 'second']);

      const got = await svc.request<Value>('GET', `${L}/${t.id}/values/${created.body.id}`);
      expect(got.body).toEqual(created.body);
      const put = await svc.request<Value>('PUT', `${L}/${t.id}/values/${created.body.id}`, {
        body: { ...got.body, value2: '' },
      });
      expect(put.status).toBe(200);
      expect(put.body).toMatchObject({
        id: created.body.id,
        value1: 'second',
        value2: '',
        creationDate: created.body.creationDate,
      });
      expect(put.body.lastModificationDate >= created.body.lastModificationDate).toBe(true);
      expect((await value2For(t.id, 'second')).body.value2).toBe('');
      expect((await svc.request<Table>('GET', `${L}/${t.id}`)).body.modificationBy).toBe(svc.admin.email);

      const wrongId = await svc.request<Problem>('PUT', `${L}/${t.id}/values/${created.body.id}`, {
        body: { id: MISSING, value1: 'x', value2: 'y' },
      });
      expect(wrongId.status).toBe(400);
      const del = await svc.request('DELETE', `${L}/${t.id}/values/${created.body.id}`);
      expect(del.status).toBe(204);
      expect((await svc.request('GET', `${L}/${t.id}/values/${created.body.id}`)).status).toBe(404);
      expect((await svc.request('DELETE', `${L}/${t.id}/values/${created.body.id}`)).status).toBe(404);
      const appended = await svc.request<Value>('POST', `${L}/${t.id}/values`, {
        body: { value1: 'third', value2: '3' },
      });
      const after = await svc.request<Value[]>('GET', `${L}/${t.id}/values`);
      expect(after.body.map((v) => v.value1)).toEqual(['first', 'third']);
      expect(after.body[1]?.id).toBe(appended.body.id);
    });

    it('keeps values to their own table', async () => {
      const other = (await svc.request<Table>('POST', L, { body: { name: 'Separate' } })).body;
      const valueId = table.lookupTableValues[0]?.id ?? '';
      expect((await svc.request('GET', `${L}/${other.id}/values/${valueId}`)).status).toBe(404);
      expect(
        (await svc.request('PUT', `${L}/${other.id}/values/${valueId}`, { body: { value1: 'x', value2: 'y' } })).status,
      ).toBe(404);
      expect((await svc.request('DELETE', `${L}/${other.id}/values/${valueId}`)).status).toBe(404);
      expect((await svc.request('POST', `${L}/${MISSING}/values`, { body: { value1: 'x', value2: 'y' } })).status).toBe(
        404,
      );
      expect((await svc.request('GET', `${L}/${table.id}/values/${valueId}`)).status).toBe(200);
    });

    it('answers bad input with 400, never 500', async () => {
      const url = `${L}/${table.id}/values`;
      for (const body of [
        {},
        { value1: '' },
        { value1: 'x'.repeat(401), value2: '' },
        { value1: 'a', value2: 'x'.repeat(401) },
        { value1: 'a', value2: 3 },
        { value1: 'a', other: 1 },
        [],
        'text',
      ]) {
        const res = await svc.request<Problem>('POST', url, { body });
        expect(res.status, JSON.stringify(body).slice(0, 60)).toBe(400);
      }
      expect((await svc.request('GET', `${L}/${table.id}/values/not-a-guid`)).status).toBe(400);
      expect((await svc.request('GET', `${L}/not-a-guid/values`)).status).toBe(400);
      expect((await svc.request('GET', `${L}/${'x'.repeat(300)}/values/value2/a`)).status).toBe(400);
    });
  });

  describe('access', () => {
    it('lets Read-only users look up and read values but not change them', async () => {
      const reader = await addUser(svc, svc.orgId, 'ReadOnly');
      expect((await svc.request('GET', `${L}/Countries/values/value2/SE`, { auth: reader })).status).toBe(200);
      expect((await svc.request('GET', `${L}/${table.id}/values`, { auth: reader })).status).toBe(200);
      const valueId = table.lookupTableValues[0]?.id ?? '';
      for (const [method, path] of [
        ['POST', `${L}/${table.id}/values`],
        ['PUT', `${L}/${table.id}/values/${valueId}`],
        ['DELETE', `${L}/${table.id}/values/${valueId}`],
      ] as const) {
        const res = await svc.request<Problem>(method, path, {
          auth: reader,
          body: method === 'DELETE' ? undefined : { value1: 'x', value2: 'y' },
        });
        expect(res.status, `${method} ${path}`).toBe(403);
        expect(res.body.code).toBe('API_FORBIDDEN_ROLE');
      }
    });

    it('refuses lookups and value calls from an address no Security Rule opens', async () => {
      for (const path of [
        `${L}/Countries/values/value2/SE`,
        `${L}/Countries/values/value1/Sweden`,
        `${L}/${table.id}/values`,
      ]) {
        const res = await svc.request<Problem>('GET', path, { from: '127.0.0.2' });
        expect(res.status, path).toBe(403);
        expect(res.body.code).toBe('API_FORBIDDEN_IP');
      }
      const post = await svc.request<Problem>('POST', `${L}/${table.id}/values`, {
        from: '127.0.0.2',
        body: { value1: 'x', value2: 'y' },
      });
      expect(post.status).toBe(403);
    });
  });
});
