import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import { killAll, serviceUnderTest, until, type ServiceUnderTest } from '../agent/harness.js';
import { prepared } from './harness.js';
import {
  appendingSolution,
  arrivals,
  EVERY_MINUTE,
  historyOf,
  PEOPLE,
  runAgent,
  runAgents,
  solutionPath,
  untilDelivered,
  untilReady,
  type AgentUnderTest,
  type Run,
} from './faults-helpers.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');
const MINUTE = 60_000;

/**
 * A schedule due every minute, for three minutes, through an Agent restart and a Service restart:
 * each due time runs exactly once. The Agent is stopped across the second due time, which it
 * notices late at its next start: within the grace period (10 minutes by default) it runs that
 * one due time once, late. The Service is stopped across the third, which the Agent runs on time
 * while the Service is down.
 */
describe.skipIf(!HAS_PG)(
  'each due time fires exactly once across an Agent restart and a Service restart (needs FERRY_TEST_DATABASE_URL)',
  () => {
    let sut: ServiceUnderTest;
    let db: { url: string; drop: () => Promise<void> };
    let client: pg.Client;
    let home: string;
    let agent: AgentUnderTest;

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

    /** The scheduled run of one due time, once History has its end. */
    function scheduledRun(id: string, dueAt: number): Promise<Run> {
      return until(
        `the run due ${new Date(dueAt).toISOString()}`,
        async () => {
          const found = (await historyOf(sut, id)).find(
            (x) => x.trigger === 'schedule' && x.dueAt === new Date(dueAt).toISOString(),
          );
          return found && found.result !== 'InProgress' ? found : undefined;
        },
        2 * MINUTE,
      );
    }

    it(
      'every minute for three minutes: each due time once, the one missed during the Agent restart once and late, none doubled',
      { timeout: 330_000 },
      async () => {
        const id = await appendingSolution(sut, {
          name: 'Every minute',
          agentId: agent.agentId,
          folder: path.join(sut.dataDir, 'csv'),
          pgUrl: db.url,
          client,
        });
        const job = await prepared(sut, id);
        expect(job, job.message).toMatchObject({ hasError: false });
        const put = await sut.request('PUT', `${solutionPath(sut, id)}/schedule`, { body: EVERY_MINUTE });
        expect(put.status, JSON.stringify(put.body)).toBe(200);

        // The first due time: the first minute after the Agent got the schedule.
        const first = await until(
          'the first scheduled run',
          async () => {
            const found = (await historyOf(sut, id)).find((x) => x.trigger === 'schedule');
            return found && found.result !== 'InProgress' ? found : undefined;
          },
          2 * MINUTE + 10_000,
        );
        expect(first.result).toBe('CompletedSuccessfully');
        const m1 = Date.parse(first.dueAt ?? '');
        expect(m1 % MINUTE).toBe(0);
        const [m2, m3] = [m1 + MINUTE, m1 + 2 * MINUTE];

        // The Agent stops (SIGTERM) before the second due time and starts again after it: the due time
        // it missed is within the grace period, so it runs once, late, when the Agent is back.
        expect(await agent.proc.stop()).toBe(0);
        expect(Date.now(), 'the Agent stopped before the second due time').toBeLessThan(m2);
        await until('the second due time passed', () => (Date.now() > m2 + 2_000 ? true : undefined), 2 * MINUTE);
        const since = new Date().toISOString();
        agent.proc = runAgent(home, agent.instance);
        await untilReady(sut, agent.agentId, since);
        const second = await scheduledRun(id, m2);
        expect(second.result).toBe('CompletedSuccessfully');
        expect(Date.parse(second.start)).toBeGreaterThan(m2 + 2_000);

        // The Service stops before the third due time and starts again after the Agent ran it.
        await untilDelivered(agent.dir);
        await sut.stop();
        expect(Date.now(), 'the Service stopped before the third due time').toBeLessThan(m3);
        await until(
          'the third run written while the Service is down',
          async () => ((await arrivals(client)).length >= 3 * PEOPLE ? true : undefined),
          2 * MINUTE,
        );
        await sut.start();
        const third = await scheduledRun(id, m3);
        expect(third.result).toBe('CompletedSuccessfully');
        expect(Date.parse(third.start)).toBeGreaterThanOrEqual(m3);
        await untilDelivered(agent.dir);

        // Each due time exactly once; a later one (the fourth minute, if the clock got there) at most once too.
        const runs = (await historyOf(sut, id)).filter((x) => x.trigger === 'schedule');
        const dues = runs.map((x) => Date.parse(x.dueAt ?? ''));
        expect(new Set(dues).size, JSON.stringify(runs.map((x) => x.dueAt))).toBe(dues.length);
        expect(dues.filter((d) => d <= m3).sort((a, b) => a - b)).toEqual([m1, m2, m3]);
        expect(dues.every((d) => d >= m1 && (d - m1) % MINUTE === 0)).toBe(true);
        // The target saw each run once, and nothing was skipped or missed.
        const rows = await arrivals(client);
        expect(rows.length).toBe(PEOPLE * runs.length);
        const skipped = await sut.request<unknown[]>('GET', `${solutionPath(sut, id)}/history/skipped`);
        expect(skipped.body).toEqual([]);
      },
    );
  },
);
