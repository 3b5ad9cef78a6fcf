import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Org {
  id: number;
  name: string;
  parentId: number;
  apiToken: string | null;
  dataCenterId: number;
  securityRules: Array<{ id: string; name: string; apiAccessEnabled: boolean }>;
  captureOnFailedRecordsForReprocessing: boolean;
  captureDuringCloudAppRuns: boolean;
  captureDuringLocalAgentAppRuns: boolean;
  isSourceDataLocal: boolean;
  status?: string;
  administrators: Array<{ email: string }>;
  city?: string | null;
}

const loopbackRule = {
  name: 'loopback',
  allowedIpRangeStartAddress: '127.0.0.1',
  allowedIpRangeEndAddress: '127.0.0.1',
  apiAccessEnabled: true,
};

describe.each(STORE_TARGETS)('Organizations on $name', (target) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(target);
  });
  afterAll(async () => svc?.close());

  const createChild = async (name: string, extra: Record<string, unknown> = {}) =>
    svc.request<Org>('POST', '/v1/orgs', {
      body: { name, parentId: svc.orgId, securityRules: [loopbackRule], ...extra },
    });

  it('lists the bootstrap Organization with its total', async () => {
    const res = await svc.request<Org[]>('GET', '/v1/orgs');
    expect(res.status).toBe(200);
    expect(res.headers['total-count']).toBe('1');
    expect(res.body).toHaveLength(1);
    expect(res.body[0]).toMatchObject({
      id: svc.orgId,
      parentId: 0,
      dataCenterId: 1,
      administrators: [{ email: svc.admin.email }],
    });
    expect(res.body[0]?.securityRules.map((r) => r.apiAccessEnabled)).toEqual([true, true]);
  });

  it('creates a child from a PascalCase model, with 201 and Location', async () => {
    const res = await svc.request<Org>('POST', '/v1/orgs', {
      body: {
        Name: 'Pascal Child',
        ParentId: svc.orgId,
        City: 'Oslo',
        SecurityRules: [
          {
            Name: 'lo',
            AllowedIpRangeStartAddress: '127.0.0.1',
            AllowedIpRangeEndAddress: '127.0.0.1',
            ApiAccessEnabled: true,
          },
        ],
      },
    });
    expect(res.status).toBe(201);
    expect(res.headers['location']).toBe(`/v1/orgs/${res.body.id}`);
    expect(res.body).toMatchObject({
      name: 'Pascal Child',
      parentId: svc.orgId,
      securityRules: [{ name: 'lo', apiAccessEnabled: true }],
    });
    const got = await svc.request<Org>('GET', `/v1/orgs/${res.body.id}`);
    expect(got.body).toMatchObject({ name: 'Pascal Child', city: 'Oslo' });
  });

  it('refuses a child without securityRules, and data centers 12-14 for classic Organizations', async () => {
    const noRules = await svc.request('POST', '/v1/orgs', { body: { name: 'x', parentId: svc.orgId } });
    expect(noRules.status).toBe(400);
    expect(noRules.headers['content-type']).toMatch(/application\/problem\+json/);
    const dc = await createChild('dc', { dataCenterId: 13 });
    expect(dc.status).toBe(400);
    const ok = await createChild('dc2', { dataCenterId: 2 });
    expect(ok.status).toBe(201);
    expect(ok.body.dataCenterId).toBe(2);
  });

  it('filters by name, nameContains and parentId and refuses name with nameContains', async () => {
    await createChild('Filter Alpha');
    await createChild('Filter Beta');
    const exact = await svc.request<Org[]>('GET', '/v1/orgs?name=filter%20alpha');
    expect(exact.body.map((o) => o.name)).toEqual(['Filter Alpha']);
    const partial = await svc.request<Org[]>('GET', '/v1/orgs?nameContains=FILTER');
    expect(partial.body.map((o) => o.name)).toEqual(['Filter Alpha', 'Filter Beta']);
    const both = await svc.request('GET', '/v1/orgs?name=a&nameContains=b');
    expect(both.status).toBe(400);
    const children = await svc.request<Org[]>('GET', `/v1/orgs?parentId=${svc.orgId}&limit=2&offset=1`);
    expect(children.body).toHaveLength(2);
    expect(Number(children.headers['total-count'])).toBeGreaterThanOrEqual(4);
    const all = await svc.request<Org[]>('GET', '/v1/orgs?noPagination=true&limit=1');
    expect(all.body.length).toBe(Number(all.headers['total-count']));
    const roots = await svc.request<Org[]>('GET', '/v1/orgs?parentId=0');
    expect(roots.body.map((o) => o.id)).toEqual([svc.orgId]);
  });

  it('expands the status and filters by it', async () => {
    const res = await svc.request<Org[]>('GET', '/v1/orgs?expandStatus=true&limit=1');
    expect(res.body[0]?.status).toBe('Ok');
    const none = await svc.request<Org[]>('GET', '/v1/orgs?status=System%20Failure');
    expect(none.body).toEqual([]);
    const plain = await svc.request<Org[]>('GET', '/v1/orgs?limit=1');
    expect(plain.body[0]).not.toHaveProperty('status');
  });

  it('filterbyAPIAccess keeps only Organizations whose rules admit the caller', async () => {
    const closed = await createChild('Closed', {
      securityRules: [
        { ...loopbackRule, allowedIpRangeStartAddress: '10.0.0.1', allowedIpRangeEndAddress: '10.0.0.1' },
      ],
    });
    expect(closed.status).toBe(201);
    const filtered = await svc.request<Org[]>('GET', '/v1/orgs?filterbyAPIAccess=true&noPagination=true');
    expect(filtered.body.map((o) => o.id)).not.toContain(closed.body.id);
    const unfiltered = await svc.request<Org[]>('GET', '/v1/orgs?noPagination=true');
    expect(unfiltered.body.map((o) => o.id)).toContain(closed.body.id);
    const direct = await svc.request('GET', `/v1/orgs/${closed.body.id}`);
    expect(direct.status).toBe(403);
  });

  it('modifies with the capture rules and keeps dataCenterId fixed', async () => {
    const child = (await createChild('Modify me')).body;
    const partial = await svc.request('PUT', `/v1/orgs/${child.id}`, { body: { captureDuringCloudAppRuns: false } });
    expect(partial.status).toBe(400);
    const all = await svc.request<Org>('PUT', `/v1/orgs/${child.id}`, {
      body: {
        name: 'Modified',
        captureOnFailedRecordsForReprocessing: true,
        captureDuringCloudAppRuns: false,
        captureDuringLocalAgentAppRuns: true,
        isSourceDataLocal: false,
      },
    });
    expect(all.status).toBe(200);
    expect(all.body).toMatchObject({ name: 'Modified', captureDuringCloudAppRuns: false, isSourceDataLocal: false });
    const dc = await svc.request('PUT', `/v1/orgs/${child.id}`, { body: { dataCenterId: 2 } });
    expect(dc.status).toBe(400);
    const same = await svc.request('PUT', `/v1/orgs/${child.id}`, { body: { dataCenterId: 1 } });
    expect(same.status).toBe(200);
  });

  it('accepts a model read with GET back unchanged, and rejects unknown fields', async () => {
    const child = (await createChild('Round trip')).body;
    const put = await svc.request<Org>('PUT', `/v1/orgs/${child.id}`, { body: child });
    expect(put.status).toBe(200);
    expect(put.body.securityRules.map((r) => r.id)).toEqual(child.securityRules.map((r) => r.id));
    const unknown = await svc.request<{ errors: Array<{ path: string }> }>('PUT', `/v1/orgs/${child.id}`, {
      body: { nmae: 'typo' },
    });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors[0]?.path).toBe('body.nmae');
  });

  it('refuses duplicate rule IDs and invalid ranges with 400, changing nothing', async () => {
    const child = (await createChild('Rules')).body;
    const id = '7d7b1f6a-8a53-4c39-9a0e-2f2f5d6b1e11';
    const dup = await svc.request('PUT', `/v1/orgs/${child.id}`, {
      body: {
        securityRules: [
          { ...loopbackRule, id },
          { ...loopbackRule, id },
        ],
      },
    });
    expect(dup.status).toBe(400);
    for (const [start, end] of [
      ['127.0.0.9', '127.0.0.1'],
      ['333.0.0.0', '333.0.0.1'],
      ['127.0.0.1', '::1'],
    ]) {
      const bad = await svc.request('PUT', `/v1/orgs/${child.id}`, {
        body: {
          securityRules: [{ ...loopbackRule, allowedIpRangeStartAddress: start, allowedIpRangeEndAddress: end }],
        },
      });
      expect(bad.status).toBe(400);
    }
    const after = await svc.request<Org>('GET', `/v1/orgs/${child.id}`);
    expect(after.body.securityRules).toEqual(child.securityRules);
  });

  it('refuses a rule ID that another Organization uses with 409, not a 500', async () => {
    const a = (await createChild('Rule owner')).body;
    const b = (await createChild('Rule borrower')).body;
    const foreign = a.securityRules[0]?.id;
    const res = await svc.request<{ code: string }>('PUT', `/v1/orgs/${b.id}`, {
      body: { securityRules: [{ ...loopbackRule, id: foreign }] },
    });
    expect(res.status).toBe(409);
    const post = await svc.request('POST', '/v1/orgs', {
      body: { name: 'Borrower 2', parentId: svc.orgId, securityRules: [{ ...loopbackRule, id: foreign }] },
    });
    expect(post.status).toBe(409);
    expect((await svc.request<Org>('GET', `/v1/orgs/${b.id}`)).body.securityRules).toEqual(b.securityRules);
  });

  it("hides the crypto token in the list from addresses the Organization's rules refuse", async () => {
    const open = await svc.request<Org[]>('GET', `/v1/orgs?name=${encodeURIComponent('Ferry')}`);
    expect(open.body[0]?.apiToken).toMatch(/^[0-9a-f-]{36}$/);
    const closed = await svc.request<Org[]>('GET', `/v1/orgs?name=${encodeURIComponent('Ferry')}`, {
      from: '127.0.0.2',
    });
    expect(closed.status).toBe(200);
    expect(closed.body[0]?.apiToken).toBeNull();
  });

  it('refuses rules that would shut the caller out', async () => {
    const child = (await createChild('Lockout')).body;
    const res = await svc.request('PUT', `/v1/orgs/${child.id}`, {
      body: { securityRules: [{ ...loopbackRule, apiAccessEnabled: false }] },
    });
    expect(res.status).toBe(409);
  });

  it('deletes children only, and not while they have children', async () => {
    const parent = (await createChild('Parent')).body;
    const grandchild = await svc.request<Org>('POST', '/v1/orgs', {
      body: { name: 'Grandchild', parentId: parent.id, securityRules: [loopbackRule] },
    });
    expect(grandchild.status).toBe(201);
    expect((await svc.request('DELETE', `/v1/orgs/${parent.id}`)).status).toBe(409);
    expect((await svc.request('DELETE', `/v1/orgs/${grandchild.body.id}`)).status).toBe(204);
    expect((await svc.request('DELETE', `/v1/orgs/${parent.id}`)).status).toBe(204);
    expect((await svc.request('GET', `/v1/orgs/${parent.id}`)).status).toBe(404);
    const root = await svc.request('DELETE', `/v1/orgs/${svc.orgId}`);
    expect(root.status).toBe(400);
  });

  it('enforces roles: Users and Read-only users read but do not change the Organization', async () => {
    const user = await addUser(svc, svc.orgId, 'User');
    const reader = await addUser(svc, svc.orgId, 'ReadOnly');
    const asUser = await svc.request<Org>('GET', `/v1/orgs/${svc.orgId}`, { auth: user });
    expect(asUser.status).toBe(200);
    expect(asUser.body.apiToken).toBeNull();
    expect((await svc.request('PUT', `/v1/orgs/${svc.orgId}`, { auth: user, body: { name: 'nope' } })).status).toBe(
      403,
    );
    expect((await svc.request('PUT', `/v1/orgs/${svc.orgId}`, { auth: reader, body: { name: 'nope' } })).status).toBe(
      403,
    );
    expect(
      (
        await svc.request('POST', '/v1/orgs', {
          auth: user,
          body: { name: 'x', parentId: svc.orgId, securityRules: [loopbackRule] },
        })
      ).status,
    ).toBe(403);
    const outsider = await addUser(svc, undefined, 'User');
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}`, { auth: outsider })).status).toBe(404);
    expect((await svc.request<Org[]>('GET', '/v1/orgs', { auth: outsider })).body).toEqual([]);
  });

  it('lets an administrator of a parent manage its children', async () => {
    const child = (await createChild('Inherited')).body;
    const other = await addUser(svc, svc.orgId, 'Administrator');
    const res = await svc.request<Org>('PUT', `/v1/orgs/${child.id}`, { auth: other, body: { city: 'Bergen' } });
    expect(res.status).toBe(200);
    expect(res.body.city).toBe('Bergen');
  });

  it('refuses create, modify and delete for platform-hosted Organizations', async () => {
    const child = (await createChild('Hosted')).body;
    const grandchild = (
      await svc.request<Org>('POST', '/v1/orgs', {
        body: { name: 'Hosted child', parentId: child.id, securityRules: [loopbackRule] },
      })
    ).body;
    await svc.service.store.db
      .updateTable('orgs')
      .set({ isSvcOrg: 1 })
      .where('id', 'in', [child.id, grandchild.id])
      .execute();
    const got = await svc.request<Org & { isSvcOrg: boolean }>('GET', `/v1/orgs/${child.id}`);
    expect(got.body.isSvcOrg).toBe(true);
    for (const res of [
      await svc.request('PUT', `/v1/orgs/${child.id}`, { body: { name: 'x' } }),
      await svc.request('DELETE', `/v1/orgs/${grandchild.id}`),
      await svc.request('POST', '/v1/orgs', { body: { name: 'y', parentId: child.id, securityRules: [loopbackRule] } }),
    ]) {
      expect(res.status).toBe(403);
      expect((res.body as { code: string }).code).toBe('API_PLATFORM_HOSTED');
    }
    expect((await svc.request<Org>('GET', `/v1/orgs/${child.id}`)).body.name).toBe('Hosted');
  });

  it('answers 401 without or with wrong credentials', async () => {
    expect((await svc.request('GET', '/v1/orgs', { auth: null })).status).toBe(401);
    const wrong = await svc.request('GET', '/v1/orgs', { auth: { email: svc.admin.email, password: 'wrong' } });
    expect(wrong.status).toBe(401);
    expect(wrong.headers['www-authenticate']).toMatch(/^Basic/);
  });
});
