import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import {
  getAgent,
  killAll,
  serviceUnderTest,
  until,
  untilStatus,
  workerPids,
  type ServiceUnderTest,
} from '../agent/harness.js';
import { createConnection, finished, POSTGRES, SQLITE, type Execution } from './harness.js';
import {
  expectCopied,
  historyOf,
  orgPath,
  runAgent,
  runAgents,
  runOnceAt,
  secondsAhead,
  solutionPath,
  statusOf,
  untilReady,
  writeReplicationSource,
  type AgentUnderTest,
  type Run,
} from './faults-helpers.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');
const ORDERS = 200_000;
const EVENTS = 60_000;
const TOTAL = ORDERS + EVENTS;
/**
 * The drained run's table: a lock another session holds on it keeps the run writing while the
 * Agent drains, however fast the copy goes, and is released once the checks are done.
 */
const NOTES = 60_000;

/**
 * Faults of the Agent process during Replication runs, with a real Service, a real Agent process,
 * a SQLite source (a keyed table of 200,000 rows and a keyless one) and PostgreSQL targets:
 * kill -9 in the middle of a run, and a user's restart with and without restartNow.
 */
describe.skipIf(!HAS_PG)(
  'Agent faults during Replication runs: kill -9 and restarts (needs FERRY_TEST_DATABASE_URL)',
  () => {
    let sut: ServiceUnderTest;
    let home: string;
    let agent: AgentUnderTest;
    let file: string;
    let sourceId: string;
    const dbs: Array<{ url: string; drop: () => Promise<void> }> = [];
    const clients: pg.Client[] = [];

    beforeAll(async () => {
      sut = serviceUnderTest();
      await sut.start();
      file = path.join(sut.dataDir, 'source.db');
      writeReplicationSource(file, { orders: ORDERS, events: EVENTS, notes: NOTES });
      const started = await runAgents(sut, 1);
      home = started.home;
      agent = started.agents[0] as AgentUnderTest;
      sourceId = await createConnection(sut, 'Source file', SQLITE, { file });
    }, 180_000);

    afterAll(async () => {
      killAll();
      for (const c of clients) await c.end().catch(() => undefined);
      await sut?.dispose();
      for (const d of dbs) await d.drop();
    });

    /** A new PostgreSQL database and an RS Solution copying `events` then `orders` into it, prepared (it prepares itself). */
    async function replication(
      name: string,
      entities = ['events', 'orders'],
      checkForBulk = true,
    ): Promise<{ id: string; client: pg.Client; url: string }> {
      const db = await createTestDatabase();
      dbs.push(db);
      const client = new pg.Client({ connectionString: db.url });
      await client.connect();
      clients.push(client);
      const targetId = await createConnection(sut, `${name} target`, POSTGRES, {
        connectionString: db.url,
        schemas: 'public',
      });
      const created = await sut.request<{ id: string }>('POST', `${orgPath(sut)}/solutions`, {
        body: {
          name,
          solutionType: 'Replication',
          agentId: agent.agentId,
          connectionIdForSource: sourceId,
          connectionIdForTarget: targetId,
          replicationSettings: { selectionType: 'Selected', entities },
          mapLinks: [],
          checkForBulk,
        },
      });
      expect(created.status, JSON.stringify(created.body)).toBe(201);
      const status = await until(
        `${name} prepared`,
        async () => {
          const s = await statusOf(sut, created.body.id);
          return s === 'OnDemand' || s === 'ProvisionError' ? s : undefined;
        },
        120_000,
      );
      expect(status).toBe('OnDemand');
      return { id: created.body.id, client, url: db.url };
    }

    async function start(solutionId: string): Promise<string> {
      const res = await sut.request<{ runId: string; started: boolean }>(
        'POST',
        `${solutionPath(sut, solutionId)}/start`,
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      expect(res.body.started).toBe(true);
      return res.body.runId;
    }

    /** Waits until the run has processed records (read from the Agent through startmonitor). */
    function untilProcessing(
      solutionId: string,
      runId: string,
      extra: () => Promise<boolean> = () => Promise.resolve(true),
    ): Promise<number> {
      return until(
        `run ${runId} processing records`,
        async () => {
          const m = await sut.request<{ running: boolean; runId: string | null; recordsProcessed: number }>(
            'POST',
            `${solutionPath(sut, solutionId)}/startmonitor`,
          );
          if (m.status !== 200 || !m.body.running) return undefined;
          expect(m.body.runId).toBe(runId);
          return m.body.recordsProcessed > 0 && (await extra()) ? m.body.recordsProcessed : undefined;
        },
        120_000,
      );
    }

    async function rowCount(client: pg.Client, table: string): Promise<number> {
      const exists = await client.query<{ t: string | null }>('SELECT to_regclass($1) AS t', [table]);
      if (exists.rows[0]?.t === null) return 0;
      const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
      return Number(rows[0]?.n);
    }

    /** The end the Service recorded for a run that died with its Agent process, and the Solution no longer in progress. */
    async function expectEndedWithAgent(solutionId: string, runId: string): Promise<Run> {
      const run = (await finished(sut, solutionId, runId, 120_000)) as Run;
      expect(run.result, JSON.stringify(run)).toBe('FatalError');
      expect(run.details).toMatch(/^RUN_AGENT_ENDED/);
      expect(run.stop).not.toBeNull();
      expect(await statusOf(sut, solutionId)).toBe('OnDemandLastRunFailed');
      return run;
    }

    it(
      'kill -9 mid-run: the run ends in History as RUN_AGENT_ENDED, and the next run copies the rest — PostgreSQL then equals the source, no row lost or doubled',
      { timeout: 300_000 },
      async () => {
        const { id, client } = await replication('Killed copy');

        // 1. The worker is killed as soon as the first batches are written (the keyless table comes
        //    first: Create, its checkpoint committed with each batch); the supervisor starts a new
        //    worker, as systemd would.
        const first = await start(id);
        await untilProcessing(id, first);
        await until(
          'the Solution in progress',
          async () => ((await statusOf(sut, id)) === 'InProgress' ? true : undefined),
          10_000,
        );
        const since1 = new Date().toISOString();
        const workers = workerPids(agent.proc);
        process.kill(workers.at(-1) as number, 'SIGKILL');
        await until(
          'a new worker process',
          () => (workerPids(agent.proc).length > workers.length ? true : undefined),
          30_000,
        );
        await untilReady(sut, agent.agentId, since1);
        await expectEndedWithAgent(id, first);
        const afterFirst = { events: await rowCount(client, 'events'), orders: await rowCount(client, 'orders') };
        expect(afterFirst.events + afterFirst.orders).toBeLessThan(TOTAL);

        // 2. The whole Agent (supervisor and worker) is killed while it copies the keyed table (Upsert,
        //    checkpoint in the Agent's state folder after each batch), then started again by hand.
        const second = await start(id);
        // More than one batch (10,000 rows) in the target: the checkpoint of the first was saved before
        // the second was written, so the kill cannot fall between a batch and its checkpoint's save.
        await untilProcessing(id, second, async () => (await rowCount(client, 'orders')) > 20_000);
        process.kill(-agent.proc.pid, 'SIGKILL');
        await agent.proc.exited;
        const since2 = new Date().toISOString();
        agent.proc = runAgent(home, agent.instance);
        await untilReady(sut, agent.agentId, since2);
        await expectEndedWithAgent(id, second);
        expect(await rowCount(client, 'events')).toBe(EVENTS);
        expect(await rowCount(client, 'orders')).toBeLessThan(ORDERS);

        // 3. A start copies what is left, from the checkpoints: not everything again.
        const third = await start(id);
        const last = (await finished(sut, id, third, 180_000)) as Run;
        expect(last, JSON.stringify(last)).toMatchObject({ result: 'CompletedSuccessfully', recordsFailed: 0 });
        expect(last.recordsProcessed).toBeGreaterThan(0);
        expect(last.recordsProcessed).toBeLessThan(ORDERS);
        await expectCopied(file, client);
        expect(await statusOf(sut, id)).toBe('OnDemand');
        const runs = await historyOf(sut, id);
        expect(runs.map((r) => r.processExecutionId).sort()).toEqual([first, second, third].sort());
      },
    );

    it(
      'restart with restartNow=false: the Agent waits for the running Solution, refuses new starts with AGT_DRAINING and skips due times as paused, then comes back Running',
      { timeout: 300_000 },
      async () => {
        const { id, client, url } = await replication('Drained copy', ['notes'], false);
        const other = await replication('Refused copy', ['events']);
        const before = workerPids(agent.proc);
        const locker = new pg.Client({ connectionString: url });
        await locker.connect();
        clients.push(locker);
        const runId = await start(id);
        // The table appears with the run's first write; the lock then holds the run's next write.
        await until(
          "the drained run's table",
          async () =>
            (await client.query<{ t: string | null }>("SELECT to_regclass('notes')::text AS t")).rows[0]?.t
              ? true
              : undefined,
          120_000,
        );
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE notes IN EXCLUSIVE MODE');
        await until(
          'the drained run writing',
          async () => {
            const m = await sut.request<{ running: boolean }>('POST', `${solutionPath(sut, id)}/startmonitor`);
            return m.body.running ? true : undefined;
          },
          120_000,
        );

        const since = new Date().toISOString();
        const res = await sut.request<{ status: string }>(
          'POST',
          `${orgPath(sut)}/agents/${agent.agentId}/restart?restartNow=false`,
        );
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        expect(res.body.status).toBe('WaitingToRestartAgentUserRequest');
        await untilStatus(sut, agent.agentId, 'WaitingToRestartAgentUserRequest');
        expect(await statusOf(sut, id)).toBe('WaitingToRestartAgentUserRequest');

        // While it waits: a start of another Solution is refused, saying why.
        const refused = await sut.request<{ code: string; detail: string }>(
          'POST',
          `${solutionPath(sut, other.id)}/start`,
        );
        expect(refused.status, JSON.stringify(refused.body)).toBe(409);
        expect(refused.body.code).toBe('AGT_DRAINING');
        expect(refused.body.detail).toMatch(/waiting to restart/);
        // The same Solution's start is ignored as usual: its run is in progress.
        const again = await sut.request<{ runId: string; started: boolean }>('POST', `${solutionPath(sut, id)}/start`);
        expect(again.body).toMatchObject({ started: false, runId });
        // A due time that comes meanwhile does not start a run: it is skipped as paused.
        // Far enough ahead that the schedule reaches the Agent first on a loaded machine (a RunOnce
        // time already past when it arrives is not run, nor skipped).
        const due = secondsAhead(6);
        expect(
          (await sut.request('PUT', `${solutionPath(sut, other.id)}/schedule`, { body: runOnceAt(due) })).status,
        ).toBe(200);
        const skip = await until(
          'the due time skipped as paused',
          async () => {
            const res = await sut.request<Array<{ dueAt: string; reason: string }>>(
              'GET',
              `${solutionPath(sut, other.id)}/history/skipped`,
            );
            return res.body.find((s) => s.dueAt === due.toISOString());
          },
          60_000,
        );
        expect(skip.reason).toBe('paused');
        expect(
          (await sut.request<{ running: boolean }>('POST', `${solutionPath(sut, id)}/startmonitor`)).body.running,
          'the drained run outlasted the checks',
        ).toBe(true);
        await locker.query('ROLLBACK');

        // The running run is not interrupted: it copies everything and completes.
        const run = (await finished(sut, id, runId, 240_000)) as Run;
        expect(run, JSON.stringify(run)).toMatchObject({
          result: 'CompletedSuccessfully',
          recordsProcessed: NOTES,
          recordsFailed: 0,
          details: null,
          stopped: false,
        });
        await expectCopied(file, client, ['notes']);

        // Then the process is replaced and the Agent is Running again.
        await until(
          'a new worker process',
          () => (workerPids(agent.proc).length > before.length ? true : undefined),
          60_000,
        );
        await untilReady(sut, agent.agentId, since);
        expect((await getAgent(sut, agent.agentId)).status).toBe('Running');
        expect(await historyOf(sut, other.id)).toEqual([] as Execution[]);
      },
    );

    it(
      'restart with restartNow=true: the run is interrupted, History says so, and the next run continues from the checkpoints',
      { timeout: 300_000 },
      async () => {
        const { id, client } = await replication('Interrupted copy');
        const before = workerPids(agent.proc);
        const runId = await start(id);
        await untilProcessing(id, runId);
        const since = new Date().toISOString();
        const res = await sut.request<{ status: string }>(
          'POST',
          `${orgPath(sut)}/agents/${agent.agentId}/restart?restartNow=true`,
        );
        expect(res.status, JSON.stringify(res.body)).toBe(200);

        const run = (await finished(sut, id, runId, 120_000)) as Run;
        expect(run.result, JSON.stringify(run)).toBe('FatalError');
        expect(run.details).toMatch(/AGT_INTERRUPTED.*restartNow=true/);
        expect(run.recordsProcessed).toBeLessThan(TOTAL);
        await until(
          'a new worker process',
          () => (workerPids(agent.proc).length > before.length ? true : undefined),
          60_000,
        );
        await untilReady(sut, agent.agentId, since);

        const next = await start(id);
        const done = (await finished(sut, id, next, 180_000)) as Run;
        expect(done, JSON.stringify(done)).toMatchObject({ result: 'CompletedSuccessfully', recordsFailed: 0 });
        expect(done.recordsProcessed).toBeLessThan(TOTAL);
        await expectCopied(file, client);
      },
    );
  },
);
