import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  acceptMessages,
  doneMessages,
  releaseRun,
  takeMessages,
} from '../../../service/store/repos/event-messages.repo.js';
import { registerTestAgent } from '../../helpers/agent-client.js';
import { startService, type TestService } from '../../helpers/service.js';
import { STORE_TARGETS } from '../../helpers/stores.js';

/**
 * The message queue of an endpoint as the Agent's runs take it (service/store/repos/event-messages.repo.ts):
 * oldest first, a message leased to one run at a time, removed only by the run that holds it, given
 * back at the run's end; and a lease a run that never began left behind is taken by the next run,
 * before newer messages (the Agent killed between its first take and the run's start).
 */
describe.each(STORE_TARGETS)('the queue of a Message Endpoint on $name', (target) => {
  let svc: TestService;
  let endpointId: number;
  const db = () => svc.service.store.db;
  const dialect = () => svc.service.store.dialect;
  const take = (runId: string, max: number, nowMs = Date.now(), leaseMs = 300_000) =>
    takeMessages(db(), dialect(), { endpointId, runId, max, nowMs, leaseMs });
  const queued = async () =>
    Number(
      (
        await db()
          .selectFrom('messageEndpoints')
          .select('queued')
          .where('id', '=', endpointId)
          .executeTakeFirstOrThrow()
      ).queued,
    );

  beforeAll(async () => {
    svc = await startService(target);
    const { agentId } = await registerTestAgent(svc);
    const sol = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/solutions`, {
      body: { name: 'Queue', solutionType: 'IntegrationEvent', agentId },
    });
    expect(sol.status, sol.text).toBe(201);
    const now = new Date().toISOString();
    const row = await db()
      .insertInto('messageEndpoints')
      .values({
        orgId: svc.orgId,
        solutionId: sol.body.id,
        urlMapId: 950_001,
        mapId: null,
        kind: 'message',
        mapName: 'Queue map',
        mapKey: 'queue map',
        entityName: 'Order',
        mapDescription: null,
        createdAt: now,
        modifiedAt: now,
      })
      .returning('id')
      .executeTakeFirstOrThrow();
    endpointId = Number(row.id);
    const bodies = Array.from({ length: 100 }, (_, i) => JSON.stringify({ n: i + 1 }));
    const [outcome] = await acceptMessages(db(), [{ endpointId, bodies }], 1000, Date.now());
    expect(outcome).toMatchObject({ status: 'stored', count: 100 });
  }, 60_000);

  afterAll(async () => {
    await svc?.close();
  });

  const ns = (ms: Array<{ body: string }>) => ms.map((m) => (JSON.parse(m.body) as { n: number }).n);

  it('hands out the oldest first, each to one run, and removes only what the holding run says it wrote', async () => {
    const a1 = await take('run-a', 20);
    const a2 = await take('run-a', 20);
    expect(ns(a1)).toEqual(Array.from({ length: 20 }, (_, i) => i + 1));
    expect(ns(a2)).toEqual(Array.from({ length: 20 }, (_, i) => i + 21));
    // Another run's ack of run-a's messages removes nothing.
    expect(
      await doneMessages(
        db(),
        endpointId,
        'run-x',
        a1.map((m) => m.id),
      ),
    ).toBe(0);
    expect(
      await doneMessages(
        db(),
        endpointId,
        'run-a',
        a1.map((m) => m.id),
      ),
    ).toBe(20);
    expect(await queued()).toBe(80);
    // run-a ends: what it still held goes back, and is taken first again.
    expect(await releaseRun(db(), 'run-a')).toBe(20);
    expect(ns(await take('run-b', 5))).toEqual([21, 22, 23, 24, 25]);
  });

  it("takes what a run that never began left leased before newer messages, and the old run's ack then removes nothing", async () => {
    // run-b (above) holds 21…25 and never reports an end: the next run takes them first.
    const c = await take('run-c', 10);
    expect(ns(c)).toEqual([21, 22, 23, 24, 25, 26, 27, 28, 29, 30]);
    expect(
      await doneMessages(
        db(),
        endpointId,
        'run-b',
        c.slice(0, 5).map((m) => m.id),
      ),
    ).toBe(0);
    expect(
      await doneMessages(
        db(),
        endpointId,
        'run-c',
        c.map((m) => m.id),
      ),
    ).toBe(10);
    expect(await queued()).toBe(70);
    // A lease past its time is free again for anyone, the same run included.
    const d = await take('run-d', 3, Date.now(), -1);
    expect(ns(await take('run-d', 3))).toEqual(ns(d));
  });
});
