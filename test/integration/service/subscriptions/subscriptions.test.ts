import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { insertSubscription, recordUsage } from '../../../../service/store/repos/subscriptions.repo.js';
import { newId } from '../../../../service/util/values.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Subscription {
  id: string;
  name: string;
  description: string | null;
  orgId: number;
  startDate: string;
  expirationDate: string;
  isTrial: boolean;
  recordsAllowed: string;
  recordsProcessed: number;
  monthlyUsage?: Array<{ date: string; recordsProcessed: number }>;
  sku: string | null;
}

const loopbackRule = {
  name: 'loopback',
  allowedIpRangeStartAddress: '127.0.0.1',
  allowedIpRangeEndAddress: '127.0.0.1',
  apiAccessEnabled: true,
};
const NAMES = ['Integration Services (IS)', 'Migration Services (MS)', 'Replication Services (RS)'];

/** The first instant of the month `back` months before the current one, in UTC. */
const monthStart = (now: Date, back: number): Date =>
  new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 1));
/** Noon on the 15th of the month `back` months ago: safely inside that month. */
const midMonth = (now: Date, back: number): Date =>
  new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 15, 12));

describe.each(STORE_TARGETS)('Subscriptions on $name', (target) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(target);
  });
  afterAll(async () => svc?.close());

  const createOrg = async (name: string, parentId = svc.orgId): Promise<number> => {
    const res = await svc.request<{ id: number }>('POST', '/v1/orgs', {
      body: { name, parentId, securityRules: [loopbackRule] },
    });
    expect(res.status).toBe(201);
    return res.body.id;
  };
  const list = (orgId: number, query = '') =>
    svc.request<Subscription[]>('GET', `/v1/orgs/${orgId}/subscriptions${query}`);
  const addSubscription = async (
    orgId: number,
    name: string,
    start: Date,
    expiration: Date,
    recordsAllowed = '500',
  ) => {
    const row = await insertSubscription(svc.service.store.db, {
      id: newId(),
      orgId,
      name,
      description: 'contract',
      startDate: start.toISOString(),
      expirationDate: expiration.toISOString(),
      isTrial: 0,
      recordsAllowed,
      recordsProcessed: 0,
      sku: 'FERRY-CONTRACT',
      tscAccountId: 'acct-1',
      tscRegion: 'eu',
      tscSubscriptionId: 'tsc-1',
    });
    return row.id;
  };

  it('lists the three current trial Subscriptions of a new Organization, with Total-Count', async () => {
    const orgId = await createOrg('Subscribed');
    const res = await list(orgId);
    expect(res.status).toBe(200);
    expect(res.headers['total-count']).toBe('3');
    expect(res.body.map((s) => s.name).sort()).toEqual(NAMES);
    const now = Date.now();
    for (const s of res.body) {
      expect(s).toMatchObject({ orgId, isTrial: true, recordsAllowed: '1000000', recordsProcessed: 0 });
      expect(s.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(Date.parse(s.startDate)).toBeLessThanOrEqual(now);
      expect(Date.parse(s.expirationDate)).toBeGreaterThan(now);
      expect(s).not.toHaveProperty('monthlyUsage');
    }
  });

  it("gives a parent its children's and grandchildren's Subscriptions, and a child not its parent's", async () => {
    const parent = await createOrg('Sub parent');
    const child = await createOrg('Sub child', parent);
    const grandchild = await createOrg('Sub grandchild', child);
    const ofParent = await list(parent);
    expect(ofParent.body).toHaveLength(9);
    expect(ofParent.headers['total-count']).toBe('9');
    expect([...new Set(ofParent.body.map((s) => s.orgId))].sort()).toEqual([parent, child, grandchild].sort());
    const ofGrandchild = await list(grandchild);
    expect(ofGrandchild.body.map((s) => s.orgId)).toEqual([grandchild, grandchild, grandchild]);
    const ofRoot = await list(svc.orgId);
    expect(ofRoot.body.map((s) => s.orgId)).toEqual(expect.arrayContaining([svc.orgId, parent, child, grandchild]));
  });

  it('returns only current Subscriptions unless showAll is true', async () => {
    const orgId = await createOrg('History');
    const now = new Date();
    const expired = await addSubscription(orgId, NAMES[0] as string, monthStart(now, 24), monthStart(now, 12));
    const future = await addSubscription(orgId, NAMES[0] as string, monthStart(now, -1), monthStart(now, -13));
    const current = await list(orgId, '?showAll=false');
    expect(current.body.map((s) => s.id)).not.toContain(expired);
    expect(current.body.map((s) => s.id)).not.toContain(future);
    expect(current.body).toHaveLength(3);
    const all = await list(orgId, '?ShowAll=TRUE');
    expect(all.status).toBe(200);
    expect(all.headers['total-count']).toBe('5');
    expect(all.body.map((s) => s.id)).toEqual(expect.arrayContaining([expired, future]));
    const contract = all.body.find((s) => s.id === expired);
    expect(contract).toMatchObject({
      isTrial: false,
      recordsAllowed: '500',
      sku: 'FERRY-CONTRACT',
      description: 'contract',
    });
    expect((await list(orgId, '?showAll=perhaps')).status).toBe(400);
  });

  it('shows the usage of each of the last 12 months, oldest first, counting recorded records', async () => {
    const orgId = await createOrg('Usage');
    const now = new Date();
    const { db } = svc.service.store;
    const contract = await addSubscription(orgId, NAMES[0] as string, monthStart(now, 14), monthStart(now, -1));
    await recordUsage(db, { orgId, serviceType: 'IS', records: 40, at: midMonth(now, 3) });
    await recordUsage(db, { orgId, serviceType: 'IS', records: 7, at: midMonth(now, 13) });
    const trial = await recordUsage(db, { orgId, serviceType: 'IS', records: 5, at: now });
    expect(trial.subscriptionId).not.toBe(contract);

    const res = await list(orgId, '?showMonthlyUsage=true');
    expect(res.status).toBe(200);
    const months = Array.from({ length: 12 }, (_, i) => monthStart(now, 11 - i).toISOString());
    for (const s of res.body) expect(s.monthlyUsage?.map((m) => m.date)).toEqual(months);
    const ofContract = res.body.find((s) => s.id === contract);
    expect(ofContract?.recordsProcessed).toBe(47);
    expect(ofContract?.monthlyUsage?.map((m) => m.recordsProcessed)).toEqual([0, 0, 0, 0, 0, 0, 0, 0, 40, 0, 0, 0]);
    const ofTrial = res.body.find((s) => s.id === trial.subscriptionId);
    expect(ofTrial?.recordsProcessed).toBe(5);
    expect(ofTrial?.monthlyUsage?.at(-1)).toEqual({ date: months[11], recordsProcessed: 5 });
    const untouched = res.body.find((s) => s.name === NAMES[1]);
    expect(untouched?.monthlyUsage?.every((m) => m.recordsProcessed === 0)).toBe(true);
  });

  it('gets one Subscription, with and without the slash before its ID', async () => {
    const orgId = await createOrg('One');
    const [first] = (await list(orgId)).body;
    if (!first) throw new Error('no subscription');
    await recordUsage(svc.service.store.db, { orgId, serviceType: 'RS', records: 3, at: new Date() });
    const slash = await svc.request<Subscription>('GET', `/v1/orgs/${orgId}/subscriptions/${first.id}`);
    expect(slash.status).toBe(200);
    expect(slash.body).toEqual(first.name === NAMES[2] ? { ...first, recordsProcessed: 3 } : first);
    const noSlash = await svc.request<Subscription>('GET', `/v1/orgs/${orgId}/subscriptions${first.id}`);
    expect(noSlash.status).toBe(200);
    expect(noSlash.body).toEqual(slash.body);
    const withUsage = await svc.request<Subscription>(
      'GET',
      `/v1/orgs/${orgId}/subscriptions${first.id}?showMonthlyUsage=true`,
    );
    expect(withUsage.body.monthlyUsage).toHaveLength(12);
    const upper = await svc.request<Subscription>('GET', `/v1/orgs/${orgId}/subscriptions/${first.id.toUpperCase()}`);
    expect(upper.body.id).toBe(first.id);
    // A parent reads its child's Subscription; a sibling does not.
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/subscriptions/${first.id}`)).status).toBe(200);
    const sibling = await createOrg('Sibling');
    const hidden = await svc.request<{ code: string; detail: string }>(
      'GET',
      `/v1/orgs/${sibling}/subscriptions/${first.id}`,
    );
    expect(hidden.status).toBe(404);
    expect(hidden.body.detail).toBe(`Subscription ${first.id} was not found.`);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/subscriptions/${newId()}`)).status).toBe(404);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/subscriptions/not-a-guid`)).status).toBe(400);
  });

  it('lets Read-only users read Subscriptions and hides them from outsiders', async () => {
    const orgId = await createOrg('Readable');
    const reader = await addUser(svc, orgId, 'ReadOnly');
    const res = await svc.request<Subscription[]>('GET', `/v1/orgs/${orgId}/subscriptions`, { auth: reader });
    expect(res.status).toBe(200);
    expect(res.body).toHaveLength(3);
    const outsider = await addUser(svc, undefined, 'User');
    expect((await svc.request('GET', `/v1/orgs/${orgId}/subscriptions`, { auth: outsider })).status).toBe(404);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/subscriptions`, { auth: null })).status).toBe(401);
  });
});
