import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import { killAll, serviceUnderTest, until, type ServiceUnderTest } from '../agent/harness.js';
import { prepared } from './harness.js';
import {
  appendingSolution,
  arrivals,
  heldSchedules,
  historyOf,
  PEOPLE,
  runAgent,
  runAgents,
  runOnceAt,
  secondsAhead,
  solutionPath,
  statusOf,
  untilAgentHoldsRunOnce,
  untilDelivered,
  untilReady,
  type AgentUnderTest,
  type Run,
} from './faults-helpers.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');

/**
 * A scheduled Solution moved from Agent A to Agent B (two instances of one home) while A is
 * stopped: no due time may run on both. B gets it only once A has reconnected and confirmed it
 * dropped it; A, back, drops it before it fires anything (not even the due time it missed while
 * down); and on B the Solution needs a prepare, since the move made it Incomplete
 * (docs/decisions.md "Prepare and runs").
 */
describe.skipIf(!HAS_PG)('a scheduled Solution moved to another Agent (needs FERRY_TEST_DATABASE_URL)', () => {
  let sut: ServiceUnderTest;
  let db: { url: string; drop: () => Promise<void> };
  let client: pg.Client;
  let home: string;
  let a: AgentUnderTest;
  let b: AgentUnderTest;

  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    db = await createTestDatabase();
    client = new pg.Client({ connectionString: db.url });
    await client.connect();
    const started = await runAgents(sut, 2);
    home = started.home;
    [a, b] = started.agents as [AgentUnderTest, AgentUnderTest];
  }, 240_000);

  afterAll(async () => {
    killAll();
    await client?.end();
    await sut?.dispose();
    await db?.drop();
  });

  /** The scheduled run of a due time, once History has its end. */
  function scheduledRun(id: string, due: Date): Promise<Run> {
    return until(
      `the run due ${due.toISOString()}`,
      async () => {
        const found = (await historyOf(sut, id)).find((x) => x.trigger === 'schedule' && x.dueAt === due.toISOString());
        return found && found.result !== 'InProgress' ? found : undefined;
      },
      90_000,
    );
  }

  async function schedule(id: string, due: Date): Promise<void> {
    const put = await sut.request('PUT', `${solutionPath(sut, id)}/schedule`, { body: runOnceAt(due) });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
  }

  it(
    'runs on B only after A confirmed; A never fires it again, not even the due time it missed; B needs a prepare, then fires it',
    { timeout: 300_000 },
    async () => {
      const id = await appendingSolution(sut, {
        name: 'Moving arrivals',
        agentId: a.agentId,
        folder: path.join(sut.dataDir, 'csv'),
        pgUrl: db.url,
        client,
      });
      const S = solutionPath(sut, id);
      expect((await prepared(sut, id)).hasError).toBe(false);

      // On A, the schedule fires.
      const due1 = secondsAhead(6);
      await schedule(id, due1);
      const first = await scheduledRun(id, due1);
      expect(first).toMatchObject({ result: 'CompletedSuccessfully', agentId: a.agentId });

      // A holds the next due time, and stops before it.
      const due2 = secondsAhead(12);
      await schedule(id, due2);
      await untilAgentHoldsRunOnce(a.dir, id, due2);
      expect(await a.proc.stop()).toBe(0);
      expect(Date.now(), 'A stopped before its due time').toBeLessThan(due2.getTime());

      // The move, while A is down: the Solution is Incomplete, B does not get it, a start names A.
      const current = await sut.request<Record<string, unknown>>('GET', S);
      const moved = await sut.request<{ agentId: string; status: string }>('PUT', S, {
        body: { ...current.body, agentId: b.agentId },
      });
      expect(moved.status, JSON.stringify(moved.body)).toBe(200);
      expect(moved.body).toMatchObject({ agentId: b.agentId, status: 'Incomplete' });
      const refused = await sut.request<{ code: string; detail: string }>('POST', `${S}/start`);
      expect(refused.status, JSON.stringify(refused.body)).toBe(409);
      expect(refused.body.detail).toContain(a.agentId);
      expect(heldSchedules(b.dir).has(id)).toBe(false);

      // A's due time passes while A is down (well within the grace period), then A starts again.
      await until('the due time passed', () => (Date.now() > due2.getTime() + 2_000 ? true : undefined), 60_000);
      const since = new Date().toISOString();
      a.proc = runAgent(home, a.instance);
      await untilReady(sut, a.agentId, since);
      await until(
        'A confirmed it dropped the Solution',
        () => (sut.query('SELECT 1 FROM solution_moves WHERE solution_id = ?', id).length === 0 ? true : undefined),
        60_000,
      );
      await untilDelivered(a.dir);
      // A dropped it before firing anything: no run, and no skipped due time either, from A after the move.
      expect(heldSchedules(a.dir).has(id)).toBe(false);
      expect((await historyOf(sut, id)).map((x) => x.processExecutionId)).toEqual([first.processExecutionId]);
      expect((await sut.request<unknown[]>('GET', `${S}/history/skipped`)).body).toEqual([]);
      expect(await arrivals(client)).toHaveLength(PEOPLE);

      // B needs a prepare: until then the Solution is Incomplete and B holds nothing.
      expect(await statusOf(sut, id)).toBe('Incomplete');
      expect(heldSchedules(b.dir).has(id)).toBe(false);
      expect((await prepared(sut, id)).hasError).toBe(false);
      expect(await statusOf(sut, id)).toBe('OnDemand');

      // Then B fires the next due time, and A does not.
      const due3 = secondsAhead(6);
      await schedule(id, due3);
      await untilAgentHoldsRunOnce(b.dir, id, due3);
      const third = await scheduledRun(id, due3);
      expect(third).toMatchObject({ result: 'CompletedSuccessfully', agentId: b.agentId });
      await untilDelivered(a.dir);
      await untilDelivered(b.dir);
      const runs = await historyOf(sut, id);
      expect(runs.map((x) => [x.agentId, x.dueAt])).toEqual([
        [a.agentId, due1.toISOString()],
        [b.agentId, due3.toISOString()],
      ]);
      expect(heldSchedules(a.dir).has(id)).toBe(false);
      expect(await arrivals(client)).toHaveLength(2 * PEOPLE);
    },
  );

  it(
    'a Solution disabled while its Agent was down does not fire the due time the Agent missed',
    { timeout: 180_000 },
    async () => {
      const id = await appendingSolution(sut, {
        name: 'Disabled meanwhile',
        agentId: b.agentId,
        folder: path.join(sut.dataDir, 'csv'),
        pgUrl: db.url,
        client,
      });
      const S = solutionPath(sut, id);
      expect((await prepared(sut, id)).hasError).toBe(false);
      const rowsBefore = (await arrivals(client)).length;
      const due = secondsAhead(8);
      await schedule(id, due);
      await untilAgentHoldsRunOnce(b.dir, id, due);
      expect(await b.proc.stop()).toBe(0);
      expect(Date.now(), 'B stopped before its due time').toBeLessThan(due.getTime());

      const current = await sut.request<Record<string, unknown>>('GET', S);
      const disabled = await sut.request<{ status: string }>('PUT', S, { body: { ...current.body, isDisabled: true } });
      expect(disabled.status, JSON.stringify(disabled.body)).toBe(200);
      expect(disabled.body.status).toBe('Disabled');
      await until('the due time passed', () => (Date.now() > due.getTime() + 2_000 ? true : undefined), 60_000);

      // B comes back within the grace period of the due time it missed, but the Solution is disabled now.
      const since = new Date().toISOString();
      b.proc = runAgent(home, b.instance);
      await untilReady(sut, b.agentId, since);
      // Once B holds the Solution as disabled, a run it started before that is in its outbox.
      await until(
        'B to hold the Solution disabled',
        () => (heldSchedules(b.dir).get(id)?.disabled ? true : undefined),
        30_000,
      );
      await untilDelivered(b.dir);
      expect(await historyOf(sut, id)).toEqual([]);
      expect(await arrivals(client)).toHaveLength(rowsBefore);
    },
  );
});
