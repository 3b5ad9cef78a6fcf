import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFerryError } from '../../../../src/errors/ferry-error.js';
import {
  getSubscription,
  insertSubscription,
  listSubscriptions,
  monthKey,
  recordUsage,
  type ServiceType,
} from '../../../../service/store/repos/subscriptions.repo.js';
import { newId } from '../../../../service/util/values.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

const loopbackRule = {
  name: 'loopback',
  allowedIpRangeStartAddress: '127.0.0.1',
  allowedIpRangeEndAddress: '127.0.0.1',
  apiAccessEnabled: true,
};
const NAME: Record<ServiceType, string> = {
  IS: 'Integration Services (IS)',
  RS: 'Replication Services (RS)',
  MS: 'Migration Services (MS)',
};
const month = (now: Date, back: number, day = 15): Date =>
  new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, day, 12));

/** The error a promise rejects with, as plain data. */
async function rejection(p: Promise<unknown>): Promise<{ code: string; kind: string; message: string }> {
  try {
    await p;
  } catch (err) {
    if (isFerryError(err)) return { code: err.code, kind: err.kind, message: err.message };
    throw err;
  }
  throw new Error('expected a rejection');
}

describe.each(STORE_TARGETS)('recordUsage on $name', (target) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(target);
  });
  afterAll(async () => svc?.close());

  const db = () => svc.service.store.db;
  const createOrg = async (name: string): Promise<number> => {
    const res = await svc.request<{ id: number }>('POST', '/v1/orgs', {
      body: { name, parentId: svc.orgId, securityRules: [loopbackRule] },
    });
    expect(res.status).toBe(201);
    return res.body.id;
  };
  const subscriptionOf = async (orgId: number, type: ServiceType) => {
    const found = (await listSubscriptions(db(), [orgId], { currentAt: new Date() })).find(
      (s) => s.name === NAME[type],
    );
    if (!found) throw new Error(`no ${type} subscription`);
    return found;
  };
  const usageRows = (subscriptionId: string) =>
    db()
      .selectFrom('subscriptionUsage')
      .select(['month', 'recordsProcessed'])
      .where('subscriptionId', '=', subscriptionId)
      .orderBy('month')
      .execute();
  const addSubscription = async (
    orgId: number,
    type: ServiceType,
    start: Date,
    expiration: Date,
    recordsAllowed = '1000',
  ) =>
    (
      await insertSubscription(db(), {
        id: newId(),
        orgId,
        name: NAME[type],
        description: null,
        startDate: start.toISOString(),
        expirationDate: expiration.toISOString(),
        isTrial: 0,
        recordsAllowed,
        recordsProcessed: 0,
        sku: null,
        tscAccountId: null,
        tscRegion: null,
        tscSubscriptionId: null,
      })
    ).id;

  it('adds records to the current Subscription of the type and to its month', async () => {
    const orgId = await createOrg('Counting');
    const is = await subscriptionOf(orgId, 'IS');
    const now = new Date();
    expect(await recordUsage(db(), { orgId, serviceType: 'IS', records: 10, at: now })).toEqual({
      subscriptionId: is.id,
      recordsProcessed: 10,
      recordsAllowed: '1000000',
      overAllowance: false,
    });
    expect((await recordUsage(db(), { orgId, serviceType: 'IS', records: 5, at: now })).recordsProcessed).toBe(15);
    expect((await recordUsage(db(), { orgId, serviceType: 'IS', records: 0, at: now })).recordsProcessed).toBe(15);
    expect((await getSubscription(db(), is.id))?.recordsProcessed).toBe(15);
    expect(await usageRows(is.id)).toEqual([{ month: monthKey(now), recordsProcessed: 15 }]);
    expect((await subscriptionOf(orgId, 'RS')).recordsProcessed).toBe(0);
  });

  it('adds up 50 concurrent calls exactly, across new and existing month rows', async () => {
    const orgId = await createOrg('Concurrent');
    const now = new Date();
    const ms = await addSubscription(orgId, 'MS', month(now, 6, 1), month(now, -6, 1), '5000');
    await recordUsage(db(), { orgId, serviceType: 'MS', records: 1, at: month(now, 2) });
    const calls = Array.from({ length: 50 }, (_, i) => ({ records: i + 1, at: month(now, i % 3) }));
    const results = await Promise.all(calls.map((c) => recordUsage(db(), { orgId, serviceType: 'MS', ...c })));
    const total = 1 + calls.reduce((sum, c) => sum + c.records, 0);
    expect(results.every((r) => r.subscriptionId === ms)).toBe(true);
    // Each call saw its own atomic increment: the totals it reported are all different, the last is the sum.
    expect(new Set(results.map((r) => r.recordsProcessed)).size).toBe(50);
    expect(Math.max(...results.map((r) => r.recordsProcessed))).toBe(total);
    expect((await getSubscription(db(), ms))?.recordsProcessed).toBe(total);
    const perMonth = (back: number) => calls.filter((_, i) => i % 3 === back).reduce((sum, c) => sum + c.records, 0);
    expect(await usageRows(ms)).toEqual([
      { month: monthKey(month(now, 2)), recordsProcessed: perMonth(2) + 1 },
      { month: monthKey(month(now, 1)), recordsProcessed: perMonth(1) },
      { month: monthKey(now), recordsProcessed: perMonth(0) },
    ]);
  });

  it('reports going over a numeric allowance, never over Unlimited', async () => {
    const orgId = await createOrg('Allowance');
    const rs = await subscriptionOf(orgId, 'RS');
    await db().updateTable('subscriptions').set({ recordsAllowed: '100' }).where('id', '=', rs.id).execute();
    const at = new Date();
    expect(await recordUsage(db(), { orgId, serviceType: 'RS', records: 100, at })).toMatchObject({
      recordsProcessed: 100,
      recordsAllowed: '100',
      overAllowance: false,
    });
    expect(await recordUsage(db(), { orgId, serviceType: 'RS', records: 1, at })).toMatchObject({
      recordsProcessed: 101,
      overAllowance: true,
    });
    await db().updateTable('subscriptions').set({ recordsAllowed: 'Unlimited' }).where('id', '=', rs.id).execute();
    expect(await recordUsage(db(), { orgId, serviceType: 'RS', records: 1_000_000_000, at })).toMatchObject({
      recordsAllowed: 'Unlimited',
      overAllowance: false,
    });
  });

  it('counts against the Subscription whose period holds the time, the latest-starting one when they overlap', async () => {
    const orgId = await createOrg('Periods');
    const now = new Date();
    const old = await addSubscription(orgId, 'IS', month(now, 20, 1), month(now, 8, 1));
    const renewal = await addSubscription(orgId, 'IS', month(now, 9, 1), month(now, -3, 1));
    expect((await recordUsage(db(), { orgId, serviceType: 'IS', records: 2, at: month(now, 12) })).subscriptionId).toBe(
      old,
    );
    // Month 8.5 ago lies in both: the renewal, which started later, counts it.
    expect((await recordUsage(db(), { orgId, serviceType: 'IS', records: 3, at: month(now, 9) })).subscriptionId).toBe(
      renewal,
    );
    expect((await recordUsage(db(), { orgId, serviceType: 'IS', records: 4, at: month(now, 5) })).subscriptionId).toBe(
      renewal,
    );
    // Now, the trial created with the Organization started last.
    const trial = (await listSubscriptions(db(), [orgId])).find((s) => s.name === NAME.IS && s.isTrial === 1);
    expect((await recordUsage(db(), { orgId, serviceType: 'IS', records: 1, at: now })).subscriptionId).toBe(trial?.id);
  });

  it("runs inside the caller's transaction, and rolls back with it", async () => {
    const orgId = await createOrg('Transactional');
    const is = await subscriptionOf(orgId, 'IS');
    await db()
      .transaction()
      .execute(async (tx) => {
        await recordUsage(tx, { orgId, serviceType: 'IS', records: 4, at: new Date() });
      });
    await expect(
      db()
        .transaction()
        .execute(async (tx) => {
          await recordUsage(tx, { orgId, serviceType: 'IS', records: 100, at: new Date() });
          throw new Error('the run failed');
        }),
    ).rejects.toThrow('the run failed');
    expect((await getSubscription(db(), is.id))?.recordsProcessed).toBe(4);
  });

  it('throws SVC_NO_SUBSCRIPTION when no Subscription of the type is current, changing nothing', async () => {
    const orgId = await createOrg('Unsubscribed');
    const past = await rejection(
      recordUsage(db(), { orgId, serviceType: 'MS', records: 1, at: new Date('2001-01-01T00:00:00Z') }),
    );
    expect(past).toMatchObject({ code: 'SVC_NO_SUBSCRIPTION', kind: 'config' });
    expect(past.message).toContain(`Organization ${orgId}`);
    await db().deleteFrom('subscriptions').where('orgId', '=', orgId).where('name', '=', NAME.RS).execute();
    expect((await rejection(recordUsage(db(), { orgId, serviceType: 'RS', records: 1, at: new Date() }))).code).toBe(
      'SVC_NO_SUBSCRIPTION',
    );
    expect(
      (await rejection(recordUsage(db(), { orgId: 999_999, serviceType: 'IS', records: 1, at: new Date() }))).code,
    ).toBe('SVC_NO_SUBSCRIPTION');
    expect((await subscriptionOf(orgId, 'MS')).recordsProcessed).toBe(0);
  });

  it('refuses counts that are not non-negative integers', async () => {
    const orgId = await createOrg('Bad counts');
    for (const records of [-1, 1.5, Number.NaN]) {
      expect((await rejection(recordUsage(db(), { orgId, serviceType: 'IS', records, at: new Date() }))).code).toBe(
        'SVC_INTERNAL',
      );
    }
    expect(
      (await rejection(recordUsage(db(), { orgId, serviceType: 'IS', records: 1, at: new Date('nope') }))).code,
    ).toBe('SVC_INTERNAL');
  });
});
