import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import { ferry, getAgent, killAll, serviceUnderTest, until, type ServiceUnderTest } from '../agent/harness.js';
import { createConnection, CSV, finished, POSTGRES, prepared, runningAgent, type RunningAgent } from './harness.js';
import { isUsage, solutionPath, untilReady, type Run } from './faults-helpers.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');
const ROWS = 40_000;
const BATCH = 1_000;

interface Statistic {
  mapId: number | null;
  recordsProcessed: number;
  recordsFailed: number;
}

/**
 * History of an IS run whose Agent (supervisor and worker) is killed with SIGKILL mid-run and
 * started again only later: while it is away the run shows InProgress with details naming the
 * Agent, and once it is back the run ends with the records the target holds (counted in SQL), its
 * stop before the restart, and the Subscription's usage counting the same records.
 *
 * Each write into the target waits 0.1 s (a statement trigger), and the kill comes while a lock the
 * test holds on the target keeps the next write waiting: every batch committed is then counted, and
 * the one waiting never commits (its session is ended with the process's), so the count to expect
 * is exact.
 */
describe.skipIf(!HAS_PG)(
  'History of an IS run whose Agent is killed and comes back later (needs FERRY_TEST_DATABASE_URL)',
  () => {
    let sut: ServiceUnderTest;
    let db: { url: string; drop: () => Promise<void> };
    let client: pg.Client;
    let agent: RunningAgent;
    let folder: string;

    beforeAll(async () => {
      sut = serviceUnderTest();
      await sut.start();
      db = await createTestDatabase();
      client = new pg.Client({ connectionString: db.url });
      await client.connect();
      await client.query(`CREATE TABLE people (id integer NOT NULL, name text NOT NULL);
      CREATE FUNCTION slow_write() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN PERFORM pg_sleep(0.1); RETURN NULL; END $$;
      CREATE TRIGGER slow_write AFTER INSERT ON people FOR EACH STATEMENT EXECUTE FUNCTION slow_write();`);
      folder = path.join(sut.dataDir, 'csv');
      fs.mkdirSync(folder);
      fs.writeFileSync(
        path.join(folder, 'people.csv'),
        ['id,name', ...Array.from({ length: ROWS }, (_, i) => `${i + 1},person ${i + 1}`)].join('\n') + '\n',
      );
      fs.writeFileSync(
        path.join(folder, 'schema.json'),
        JSON.stringify({
          entities: {
            'people.csv': {
              fields: [
                { name: 'id', type: 'integer' },
                { name: 'name', type: 'string' },
              ],
            },
          },
        }),
      );
      agent = await runningAgent(sut);
    }, 180_000);

    afterAll(async () => {
      killAll();
      await client?.end().catch(() => undefined);
      await sut?.dispose();
      await db?.drop();
    });

    const rows = async (): Promise<number> =>
      Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM people')).rows[0]?.n);

    /** What the Agent has recorded as committed for the open run (its Solution store): to kill it once that has caught up. */
    function recordedCommitted(runId: string): number {
      const db = new Database(path.join(agent.dir, 'data', 'solutions.db'), { readonly: true, fileMustExist: true });
      try {
        const row = db
          .prepare("SELECT sum(json_extract(stats, '$.processed')) AS n FROM open_run_committed WHERE run_id = ?")
          .get(runId) as { n: number | null };
        return row.n ?? 0;
      } finally {
        db.close();
      }
    }

    it(
      'shows the Agent away while it is, then ends the run with what it committed, stopped when it stopped',
      { timeout: 180_000 },
      async () => {
        const csvId = await createConnection(sut, 'People', CSV, { folder });
        const pgId = await createConnection(sut, 'Target', POSTGRES, { connectionString: db.url, schemas: 'public' });
        const sol = await sut.request<{ id: string }>('POST', `/v1/orgs/${sut.orgId}/solutions`, {
          body: { name: 'People copy', solutionType: 'Integration', agentId: agent.agentId },
        });
        expect(sol.status, JSON.stringify(sol.body)).toBe(201);
        const S = solutionPath(sut, sol.body.id);
        const map = await sut.request('POST', `${S}/maps/advanced`, {
          body: {
            version: '3.0',
            name: 'People into PostgreSQL',
            batchSize: BATCH,
            blocks: [
              {
                blockId: '51111111-1111-4111-8111-000000000001',
                name: 'Q',
                blockType: 'Query',
                action: 'Query',
                connectionId: csvId,
                entity: 'people',
              },
              {
                blockId: '51111111-1111-4111-8111-000000000002',
                name: 'Put',
                blockType: 'Create',
                action: 'Create',
                connectionId: pgId,
                entity: 'people',
                fieldMappings: [
                  { targetField: 'id', targetFormula: 'Q.id' },
                  { targetField: 'name', targetFormula: 'Q.name' },
                ],
              },
            ],
          },
        });
        expect(map.status, JSON.stringify(map.body)).toBe(201);
        expect((await prepared(sut, sol.body.id)).hasError).toBe(false);
        const { name } = await getAgent(sut, agent.agentId);
        const usageBefore = await isUsage(sut);

        const start = await sut.request<{ runId: string; started: boolean }>('POST', `${S}/start`);
        expect(start.body.started).toBe(true);
        const runId = start.body.runId;
        await until('rows in the target', async () => ((await rows()) >= 3 * BATCH ? true : undefined), 60_000);

        // Hold the next write: SHARE mode waits for the write under way to commit, then blocks inserts.
        const lock = new pg.Client({ connectionString: db.url });
        await lock.connect();
        try {
          await lock.query('BEGIN');
          await lock.query('LOCK TABLE people IN SHARE MODE');
          const committed = Number((await lock.query<{ n: string }>('SELECT count(*) AS n FROM people')).rows[0]?.n);
          expect(committed, 'the run was still going').toBeLessThan(ROWS);
          await until(
            'the next write waiting on the lock',
            async () => {
              const { rows: waiting } = await lock.query(
                'SELECT 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid) WHERE NOT l.granted AND a.datname = current_database()',
              );
              return waiting.length > 0 ? true : undefined;
            },
            30_000,
          );
          await until(
            'the Agent to record every batch the target committed',
            () => (recordedCommitted(runId) === committed ? true : undefined),
            30_000,
          );

          // The whole Agent dies, and stays down.
          process.kill(-agent.proc.pid, 'SIGKILL');
          await agent.proc.exited;
          const killedAt = new Date().toISOString();
          const away = await until(
            'History to say the Agent is away',
            async () => {
              const res = await sut.request<Run>('GET', `${S}/history/${runId}`);
              return res.body.details?.startsWith(`The Agent ${name} (${agent.agentId}) has not been in contact since `)
                ? res.body
                : undefined;
            },
            30_000,
          );
          expect(away).toMatchObject({ result: 'InProgress', stop: null });
          expect(away.details).toMatch(/; the run's outcome is recorded when it reconnects\.$/);
          const listed = (await sut.request<Run[]>('GET', `${S}/history`)).body.find(
            (r) => r.processExecutionId === runId,
          );
          expect(listed?.details).toBe(away.details);
          // Silent past the heartbeat threshold (1.5 s here): the status is named too.
          await until(
            'History to say the Agent is late',
            async () => {
              const res = await sut.request<Run>('GET', `${S}/history/${runId}`);
              return /\((HeartbeatLate|HeartbeatFailed)\); the run's outcome/.test(res.body.details ?? '')
                ? true
                : undefined;
            },
            30_000,
          );

          // Its sessions end with it: the write that waited never commits. (A backend waiting on a lock
          // does not read its socket, so the test ends it rather than wait for the server to notice.)
          const own = Number((await client.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid);
          await lock.query(
            'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() AND pid NOT IN (pg_backend_pid(), $1)',
            [own],
          );
          await lock.query('ROLLBACK');
          expect(await rows()).toBe(committed);

          // Back later.
          const restartAt = new Date().toISOString();
          agent = { ...agent, proc: ferry(['agent', 'run', '--home', agent.home]) };
          await untilReady(sut, agent.agentId, restartAt);
          await finished(sut, sol.body.id, runId, 60_000);
          const run = (
            await sut.request<Run & { mapStatistics: Statistic[]; duration: number }>('GET', `${S}/history/${runId}`)
          ).body;
          expect(run, JSON.stringify(run)).toMatchObject({
            result: 'FatalError',
            recordsProcessed: committed,
            recordsFailed: 0,
          });
          expect(run.details).toMatch(/^RUN_AGENT_ENDED: /);
          expect(run.stop, 'stopped when its last batch was committed, not at the restart').not.toBeNull();
          expect((run.stop as string) < killedAt).toBe(true);
          expect((run.stop as string) < restartAt).toBe(true);
          expect((run.stop as string) >= run.start).toBe(true);
          expect(run.mapStatistics).toMatchObject([{ recordsProcessed: committed, recordsFailed: 0 }]);
          expect(await isUsage(sut)).toBe(usageBefore + committed);
        } finally {
          await lock.end().catch(() => undefined);
        }
      },
    );
  },
);
