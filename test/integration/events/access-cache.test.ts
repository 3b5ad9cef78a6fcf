import pino from 'pino';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AccessCache } from '../../../service/events/access-cache.js';
import { acceptMessages } from '../../../service/store/repos/event-messages.repo.js';
import { EVENT_ACCESS_CHANNEL } from '../../../service/store/migrations/037-event-access-notify.js';
import { StoreChanges } from '../../../service/store/store-changes.js';
import { registerTestAgent } from '../../helpers/agent-client.js';
import { startService, type TestService } from '../../helpers/service.js';
import { serviceReplicas, type ServiceReplicas } from '../../helpers/service-on-dir.js';
import { STORE_TARGETS } from '../../helpers/stores.js';
import { eventEndpoint, type TestEndpoint } from './endpoint-rows.js';

const PG_URL = process.env['FERRY_TEST_DATABASE_URL'];

/** Polls `check` until it holds or `ms` pass; the last answer. */
async function within(ms: number, check: () => Promise<boolean>): Promise<boolean> {
  const until = Date.now() + ms;
  for (;;) {
    if (await check()) return true;
    if (Date.now() > until) return false;
    await new Promise((r) => setTimeout(r, 20));
  }
}

/** A cache entry whose reads are counted: `reads()` after a `get` tells whether it came from the store. */
function counted(cache: AccessCache) {
  let loads = 0;
  return {
    get: () =>
      cache.get('probe', () => {
        loads += 1;
        return Promise.resolve(loads);
      }),
    reads: () => loads,
  };
}

/**
 * The admission cache of message POSTs (service/events/access-cache.ts): kept while messages flow,
 * dropped by every write to what it holds, on this process (the store's WriteWatch) and, on
 * PostgreSQL, on every replica (migration 037's NOTIFY, heard by StoreChanges).
 */
describe.each(STORE_TARGETS)('the admission cache of message POSTs on $name', (target) => {
  let svc: TestService;
  let agentId: string;
  let ep: TestEndpoint;
  // Long-lived entries: what drops them here is a write, never their age.
  const cache = new AccessCache({ ttlMs: 60_000 });
  let unfollow: () => void;

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    agentId = (await registerTestAgent(svc, { name: 'Cache agent' })).agentId;
    ep = await eventEndpoint(svc, agentId, 'Cached', 700_001);
    unfollow = cache.follow(svc.service.store.writes);
  }, 60_000);
  afterAll(async () => {
    unfollow?.();
    await svc?.close();
  });

  it('keeps its entries while messages are stored and runs report, and drops them on each change of access', async () => {
    const db = svc.service.store.db;
    const probe = counted(cache);
    cache.clear();
    await probe.get();
    await probe.get();
    expect(probe.reads()).toBe(1);

    // A flush (its UPDATE of the endpoint's counters, its INSERT of messages) and a run's report change no access.
    const [stored] = await acceptMessages(db, [{ endpointId: ep.id, bodies: ['{"n":1}'] }], 1000, Date.now());
    expect(stored?.status).toBe('stored');
    await db
      .updateTable('solutions')
      .set({ lastRunTime: new Date().toISOString() })
      .where('id', '=', ep.solutionId)
      .execute();
    await probe.get();
    expect(probe.reads()).toBe(1);

    const changes: [string, () => Promise<unknown>][] = [
      ['the token reset', () => svc.request('PUT', `/v1/orgs/${svc.orgId}/SecuritySettings/resetaccesstoken`)],
      [
        'a Security Rule added',
        () =>
          svc.request('POST', `/v1/orgs/${svc.orgId}/securityrules`, {
            body: {
              name: 'Cache rule',
              allowedIpRangeStartAddress: '10.0.0.1',
              allowedIpRangeEndAddress: '10.0.0.2',
              apiAccessEnabled: false,
              eventSolutionAccessEnabled: true,
            },
          }),
      ],
      [
        'the Solution disabled',
        () => db.updateTable('solutions').set({ isDisabled: 1 }).where('id', '=', ep.solutionId).execute(),
      ],
      [
        "the endpoint's Map changed",
        () => db.updateTable('messageEndpoints').set({ mapId: 424_242 }).where('id', '=', ep.id).execute(),
      ],
    ];
    for (const [what, change] of changes) {
      const before = probe.reads();
      const res = await change();
      if (typeof res === 'object' && res !== null && 'status' in res)
        expect([200, 201, 204], what).toContain(res.status);
      await probe.get();
      expect(probe.reads(), what).toBe(before + 1);
    }
  });
});

describe.skipIf(!PG_URL)('the admission caches of PostgreSQL replicas', () => {
  let replicas: ServiceReplicas;
  let a: TestService;
  let b: TestService;
  let ep: TestEndpoint;
  const tokenOf = async (svc: TestService) =>
    (await svc.request<{ eventSolutionAccessToken: string }>('GET', `/v1/orgs/${svc.orgId}/SecuritySettings`)).body
      .eventSolutionAccessToken;
  const post = (svc: TestService, token: string, n: number) =>
    svc.request('POST', `/v1/orgs/${svc.orgId}/messages/${ep.mapId}?accesstoken=${token}`, { auth: null, body: { n } });

  beforeAll(async () => {
    replicas = await serviceReplicas({ cloudAgents: 'off' });
    a = await replicas.start();
    b = await replicas.start();
    const agentId = (await registerTestAgent(a, { name: 'Replicas cache agent' })).agentId;
    ep = await eventEndpoint(a, agentId, 'Replicated', 700_002);
  }, 60_000);
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await replicas?.dispose();
  });

  it('a token reset on one replica ends the old token on the other, whose admission had it cached', async () => {
    const old = await tokenOf(a);
    for (let n = 1; n <= 3; n += 1) expect((await post(b, old, n)).status).toBe(200);
    const reset = await a.request<{ eventSolutionAccessToken: string }>(
      'PUT',
      `/v1/orgs/${a.orgId}/SecuritySettings/resetaccesstoken`,
    );
    expect(reset.status).toBe(200);
    const started = Date.now();
    expect(await within(2000, async () => (await post(b, old, 99)).status === 401)).toBe(true);
    expect(Date.now() - started).toBeLessThan(2000);
    expect((await post(b, reset.body.eventSolutionAccessToken, 4)).status).toBe(200);
    const ns = await a.service.store.db
      .selectFrom('eventMessages')
      .select('body')
      .where('endpointId', '=', ep.id)
      .orderBy('id')
      .execute();
    // While the reset's notification travelled, B may still have taken the old token (each such
    // POST is stored, as its 200 said); after it, never. Its window was under the 2 s above.
    const stored = ns.map((r) => (JSON.parse(r.body) as { n: number }).n);
    expect(stored.filter((n) => n !== 99)).toEqual([1, 2, 3, 4]);
    expect(stored.slice(0, 3)).toEqual([1, 2, 3]);
    expect(stored.at(-1)).toBe(4);
  });

  it('hear a change another connection commits at its commit, and start over after their listener was lost', async () => {
    // A replica's cache as B holds it, with entries that never age: only announced commits drop them.
    const cache = new AccessCache({ ttlMs: 60_000 });
    const url = replicas.databaseUrl;
    const changes = new StoreChanges({
      databaseUrl: url,
      channel: EVENT_ACCESS_CHANNEL,
      onChange: () => cache.clear(),
      log: pino({ level: 'silent' }),
      retryMs: 50,
    });
    const db = a.service.store.db;
    try {
      changes.start();
      await changes.listening();
      const probe = counted(cache);
      await probe.get();
      const reads = probe.reads();
      await db.transaction().execute(async (tx) => {
        await tx.updateTable('solutions').set({ isDisabled: 1 }).where('id', '=', ep.solutionId).execute();
        await new Promise((r) => setTimeout(r, 300));
        // Not committed yet: nothing was announced, the entry stays.
        await probe.get();
        expect(probe.reads()).toBe(reads);
      });
      expect(await within(5000, async () => (await probe.get(), probe.reads() > reads))).toBe(true);
      await db.updateTable('solutions').set({ isDisabled: 0 }).where('id', '=', ep.solutionId).execute();

      // Its listening connection killed (the replicas' too): the cache starts over, and hears again.
      await probe.get();
      const before = probe.reads();
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      await admin.query('SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1', [
        `ferry ${EVENT_ACCESS_CHANNEL}`,
      ]);
      await admin.end();
      expect(await within(5000, async () => (await probe.get(), probe.reads() > before))).toBe(true);
      const heard = await within(5000, async () => {
        await probe.get();
        const was = probe.reads();
        await db.updateTable('messageEndpoints').set({ mapId: was }).where('id', '=', ep.id).execute();
        await new Promise((r) => setTimeout(r, 100));
        await probe.get();
        return probe.reads() > was;
      });
      expect(heard).toBe(true);
    } finally {
      await changes.stop();
    }
  });
});
