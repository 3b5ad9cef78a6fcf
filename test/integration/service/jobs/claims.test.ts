/**
 * Work that runs once across Service replicas on one PostgreSQL (service/jobs/claims.ts): a job's
 * claim is held by one replica, renewed while it lives, passed on when it stops or its lease runs
 * out; a claimed periodic job ticks on one replica only; and only the prepares of a replica that is
 * gone end as abandoned. Real Services and a real PostgreSQL database.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ReplicaClaims, SOLE_PROCESS } from '../../../../service/jobs/claims.js';
import { PeriodicJob } from '../../../../service/jobs/periodic-job.js';
import { failAbandonedPrepareJobs } from '../../../../service/store/repos/prepare.repo.js';
import { newId, nowIso } from '../../../../service/util/values.js';
import { registerTestAgent } from '../../../helpers/agent-client.js';
import type { TestService } from '../../../helpers/service.js';
import { serviceReplicas, type ServiceReplicas } from '../../../helpers/service-on-dir.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

const silent = pino({ level: 'silent' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe('a single process (SQLite)', () => {
  it('holds every claim', async () => {
    expect(await SOLE_PROCESS.claim('anything', 1)).toBe(true);
  });
});

describe.skipIf(!STORE_TARGETS.some((t) => t.name === 'postgres'))('job claims of replicas on one PostgreSQL', () => {
  let replicas: ServiceReplicas;
  let a: TestService;
  let b: TestService;

  beforeAll(async () => {
    replicas = await serviceReplicas();
    a = await replicas.start();
    b = await replicas.start();
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await replicas?.dispose();
  });

  const claimsOf = (svc: TestService, id = newId()) => new ReplicaClaims(svc.service.store.db, id, silent);

  it('one replica holds a job; it renews it, and another takes it once it is given up', async () => {
    const one = claimsOf(a);
    const two = claimsOf(b);
    expect(await one.claim('test-job', 60_000)).toBe(true);
    expect(await two.claim('test-job', 60_000)).toBe(false);
    expect(await one.claim('test-job', 60_000)).toBe(true);
    await one.releaseAll();
    expect(await two.claim('test-job', 60_000)).toBe(true);
    expect(await one.claim('test-job', 60_000)).toBe(false);
    await two.releaseAll();
  });

  it('a holder that stops renewing (a dead replica) loses the job when its lease passes', async () => {
    const dead = claimsOf(a);
    const alive = claimsOf(b);
    expect(await dead.claim('lease-job', 300)).toBe(true);
    expect(await alive.claim('lease-job', 300)).toBe(false);
    await sleep(400);
    expect(await alive.claim('lease-job', 300)).toBe(true);
    expect(await dead.claim('lease-job', 300)).toBe(false);
    await alive.releaseAll();
  });

  it('a claimed periodic job ticks on one replica at a time, and the other takes over when it stops', async () => {
    const ticks = { one: 0, two: 0, standby: 0 };
    const claimsA = claimsOf(a);
    const job = (who: 'one' | 'two', claims: ReplicaClaims) =>
      new PeriodicJob({
        intervalMs: 30,
        tick: async () => (ticks[who] += 1),
        log: silent,
        failed: 'test job failed',
        once: { claims, name: 'ticking', unclaimed: async () => (ticks.standby += 1) },
      });
    const one = job('one', claimsA);
    const two = job('two', claimsOf(b));
    one.start();
    await sleep(100);
    two.start();
    await sleep(400);
    expect(ticks.one).toBeGreaterThan(3);
    expect(ticks.two).toBe(0);
    expect(ticks.standby).toBeGreaterThan(3);
    // A replica that stops gives its claims up: the other's next tick runs the job.
    await one.stop();
    await claimsA.releaseAll();
    await sleep(200);
    await two.stop();
    expect(ticks.two).toBeGreaterThan(0);
  });

  it("only a gone replica's prepares end as abandoned: a live replica's keep running", async () => {
    const db = a.service.store.db;
    const agent = await registerTestAgent(a);
    const sol = await a.request<{ id: string }>('POST', `/v1/orgs/${a.orgId}/solutions`, {
      body: { name: 'Claims', solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(sol.status, sol.text).toBe(201);
    const job = (replicaId: string | null) => ({
      id: newId(),
      solutionId: sol.body.id,
      orgId: a.orgId,
      creationDate: nowIso(),
      finishDate: null,
      isComplete: 0 as const,
      hasError: 0 as const,
      message: '',
      mapErrors: '[]',
      replicaId,
    });
    // Replica A is alive (its command bus renews its lease); the other ID never was.
    const live = job(a.service.replicaId as string);
    const gone = job(newId());
    const older = job(null);
    await db.insertInto('prepareJobs').values([live, gone, older]).execute();
    expect(await failAbandonedPrepareJobs(db, nowIso(), true)).toBe(2);
    const rows = await db.selectFrom('prepareJobs').select(['id', 'isComplete', 'hasError', 'message']).execute();
    const byId = new Map(rows.map((r) => [r.id, r]));
    expect(byId.get(live.id)).toMatchObject({ isComplete: 0, hasError: 0 });
    for (const ended of [gone, older]) {
      expect(byId.get(ended.id)).toMatchObject({ isComplete: 1, hasError: 1 });
      expect(byId.get(ended.id)?.message).toContain('prepare the Solution again');
    }
    await db.deleteFrom('prepareJobs').where('id', '=', live.id).execute();
  });
});
