import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import { killAll, serviceUnderTest, until, type ServiceUnderTest } from '../agent/harness.js';
import { prepared } from './harness.js';
import {
  appendingSolution,
  arrivals,
  historyOf,
  isUsage,
  PEOPLE,
  runAgent,
  runAgents,
  runOnceAt,
  secondsAhead,
  solutionPath,
  untilAgentHoldsRunOnce,
  untilDelivered,
  untilReady,
  type AgentUnderTest,
} from './faults-helpers.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');

/**
 * Schedules fire on the Agent, so a scheduled run happens while the Service is down; its History
 * arrives through the Agent's outbox once the Service is back, and is recorded (and counted in the
 * Subscription) once. An Agent that starts while the Service is down waits a bounded time for the
 * Service's assignment list, then fires from the copy it holds.
 */
describe.skipIf(!HAS_PG)('a Service outage during a scheduled run (needs FERRY_TEST_DATABASE_URL)', () => {
  let sut: ServiceUnderTest;
  let db: { url: string; drop: () => Promise<void> };
  let client: pg.Client;
  let agent: AgentUnderTest;
  let home: string;

  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const started = await runAgents(sut, 1);
    home = started.home;
    agent = started.agents[0] as AgentUnderTest;
  }, 180_000);

  afterAll(async () => {
    killAll();
    await client?.end();
    await sut?.dispose();
    await db?.drop();
  });

  it(
    'a due time that passes while the Service is down runs on the Agent; its History arrives after the Service is back, counted once',
    { timeout: 180_000 },
    async () => {
      const id = await appendingSolution(sut, {
        name: 'Nightly arrivals',
        agentId: agent.agentId,
        folder: path.join(sut.dataDir, 'csv'),
        pgUrl: db.url,
        client,
      });
      const job = await prepared(sut, id);
      expect(job, job.message).toMatchObject({ hasError: false });
      const usageBefore = await isUsage(sut);

      const due = secondsAhead(12);
      const put = await sut.request('PUT', `${solutionPath(sut, id)}/schedule`, { body: runOnceAt(due) });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      await untilAgentHoldsRunOnce(agent.dir, id, due);

      await sut.stop();
      const downAt = Date.now();
      expect(downAt, 'the Service stopped before the due time').toBeLessThan(due.getTime());

      // The run happens on the Agent while the Service is down: the rows arrive, stamped by PostgreSQL.
      const rows = await until(
        'the scheduled rows in PostgreSQL',
        async () => {
          const r = await arrivals(client);
          return r.length >= PEOPLE ? r : undefined;
        },
        90_000,
      );
      await sut.start();
      const upAt = Date.now();
      for (const r of rows) {
        expect(r.loadedAt.getTime()).toBeGreaterThanOrEqual(due.getTime());
        expect(r.loadedAt.getTime()).toBeLessThan(upAt);
      }

      // Its History arrives once the Service is back: one execution, started after the due time and
      // ended while the Service was still down.
      const run = await until(
        'the scheduled run in History',
        async () => {
          const found = (await historyOf(sut, id)).find((x) => x.trigger === 'schedule');
          return found && found.result !== 'InProgress' ? found : undefined;
        },
        90_000,
      );
      expect(run, JSON.stringify(run)).toMatchObject({
        trigger: 'schedule',
        result: 'CompletedSuccessfully',
        recordsProcessed: PEOPLE,
        recordsFailed: 0,
        dueAt: due.toISOString(),
        agentId: agent.agentId,
      });
      expect(Date.parse(run.start)).toBeGreaterThanOrEqual(due.getTime());
      expect(Date.parse(run.stop ?? '')).toBeLessThan(upAt);

      // Nothing counted twice: once every report has been delivered, one run, its rows once, its records counted once.
      await untilDelivered(agent.dir);
      expect(await historyOf(sut, id)).toHaveLength(1);
      expect(await arrivals(client)).toHaveLength(PEOPLE);
      expect(await isUsage(sut)).toBe(usageBefore + PEOPLE);
      const skipped = await sut.request<unknown[]>('GET', `${solutionPath(sut, id)}/history/skipped`);
      expect(skipped.body).toEqual([]);
      expect(downAt).toBeLessThan(upAt);
    },
  );

  it(
    'an Agent that starts while the Service is down still fires its schedules, from its local copy, once',
    { timeout: 180_000 },
    async () => {
      const id = await appendingSolution(sut, {
        name: 'Offline arrivals',
        agentId: agent.agentId,
        folder: path.join(sut.dataDir, 'csv'),
        pgUrl: db.url,
        client,
      });
      expect((await prepared(sut, id)).hasError).toBe(false);
      const before = (await arrivals(client)).length;
      const due = secondsAhead(10);
      expect((await sut.request('PUT', `${solutionPath(sut, id)}/schedule`, { body: runOnceAt(due) })).status).toBe(
        200,
      );
      await untilAgentHoldsRunOnce(agent.dir, id, due);

      // The Agent restarts while the Service is down: no assignment list can come, so after its wait
      // it fires from the copy it holds (the due time on time, or caught up within the grace period).
      await sut.stop();
      expect(await agent.proc.stop()).toBe(0);
      agent.proc = runAgent(home, agent.instance);
      const rows = await until(
        'the scheduled rows written while the Service is down',
        async () => {
          const r = await arrivals(client);
          return r.length >= before + PEOPLE ? r : undefined;
        },
        90_000,
      );
      await sut.start();
      const upAt = Date.now();
      await untilReady(sut, agent.agentId);
      for (const r of rows.slice(before)) {
        expect(r.loadedAt.getTime()).toBeGreaterThanOrEqual(due.getTime());
        expect(r.loadedAt.getTime()).toBeLessThan(upAt);
      }

      const run = await until(
        'the scheduled run in History',
        async () => {
          const found = (await historyOf(sut, id)).find((x) => x.trigger === 'schedule');
          return found && found.result !== 'InProgress' ? found : undefined;
        },
        90_000,
      );
      expect(run).toMatchObject({
        result: 'CompletedSuccessfully',
        recordsProcessed: PEOPLE,
        dueAt: due.toISOString(),
      });
      expect(Date.parse(run.stop ?? '')).toBeLessThan(upAt);
      await untilDelivered(agent.dir);
      expect(await historyOf(sut, id)).toHaveLength(1);
      expect(await arrivals(client)).toHaveLength(before + PEOPLE);
    },
  );
});
