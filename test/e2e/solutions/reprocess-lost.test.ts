import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import { ferry, killAll, serviceUnderTest, until, untilStatus, type ServiceUnderTest } from '../agent/harness.js';
import { createConnection, CSV, finished, POSTGRES, prepared, runningAgent, type Execution } from './harness.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');

interface HistoryExecution extends Execution {
  isReprocessJob: boolean;
  reprocessRecordsRemaining: number;
}
interface RecordError {
  canReprocess: boolean;
  marked: boolean;
}
interface Problem {
  code: string;
  detail: string;
}

/** How long the Service waits for the answer to reprocessRun; a run younger than this is not asked about. */
const REPROCESS_WAIT_MS = 10_000;

/**
 * A reprocess run whose answer the Service never got, with a real Agent process: the Agent is
 * stopped (SIGSTOP) as the command is sent and killed before it reads it, or killed right after it
 * started the run. After its restart the Service asks it which runs it has: the run it never
 * started gives its records back, marked, and they are reprocessed once; the run it started keeps
 * them, and ends with the Agent.
 */
describe.skipIf(!HAS_PG)(
  'reprocess runs lost with their Agent: CSV → PostgreSQL (needs FERRY_TEST_DATABASE_URL)',
  () => {
    let sut: ServiceUnderTest;
    let db: { url: string; drop: () => Promise<void> };
    let agent: Awaited<ReturnType<typeof runningAgent>>;
    let client: pg.Client;
    let folder: string;
    let O: string;

    beforeAll(async () => {
      sut = serviceUnderTest();
      await sut.start();
      O = `/v1/orgs/${sut.orgId}`;
      db = await createTestDatabase();
      client = new pg.Client({ connectionString: db.url });
      await client.connect();
      folder = path.join(sut.dataDir, 'csv');
      fs.mkdirSync(folder);
      // Ages of 100 and more are refused by the targets' CHECK constraint.
      const people = 'id,name,age\n1,ada,20\n2,alan,30\n3,grace,150\n4,kid,40\n5,linus,200\n6,ken,50\n';
      fs.writeFileSync(path.join(folder, 'unsent.csv'), people);
      fs.writeFileSync(path.join(folder, 'started.csv'), people);
      const fields = [
        { name: 'id', type: 'integer' },
        { name: 'name', type: 'string' },
        { name: 'age', type: 'integer' },
      ];
      fs.writeFileSync(
        path.join(folder, 'schema.json'),
        JSON.stringify({ entities: { 'unsent.csv': { fields }, 'started.csv': { fields } } }),
      );
      agent = await runningAgent(sut);
      const settings = await sut.request('PUT', `${O}/SecuritySettings`, {
        body: {
          captureOnFailedRecordsForReprocessing: true,
          captureDuringCloudAppRuns: true,
          captureDuringLocalAgentAppRuns: true,
          isSourceDataLocal: true,
        },
      });
      expect(settings.status).toBe(200);
    }, 180_000);

    afterAll(async () => {
      await agent?.proc.stop();
      killAll();
      await client?.end();
      await sut?.dispose();
      await db?.drop();
    });

    /** Sends `signal` to the Agent's supervisor and worker (one process group). */
    const signalAgent = (signal: NodeJS.Signals): void => {
      process.kill(-agent.proc.pid, signal);
    };
    /** Kills the Agent (kill -9) and starts it again on the same home; resolves once it is Running. */
    const killAndRestart = async (): Promise<void> => {
      signalAgent('SIGKILL');
      await agent.proc.exited;
      agent.proc = ferry(['agent', 'run', '--home', agent.home]);
      await untilStatus(sut, agent.agentId, 'Running');
    };

    /** A prepared Solution with one Map from `entity` into a new table `table`, run once: two records refused, both marked. */
    const markedRun = async (
      name: string,
      entity: string,
      table: string,
    ): Promise<{ id: string; S: string; first: HistoryExecution }> => {
      await client.query(
        `CREATE TABLE ${table} (id integer PRIMARY KEY, name text NOT NULL, age integer CONSTRAINT ${table}_age CHECK (age < 100))`,
      );
      const csvId = await createConnection(sut, `${name} files`, CSV, { folder });
      const pgId = await createConnection(sut, `${name} DB`, POSTGRES, { connectionString: db.url, schemas: 'public' });
      const sol = await sut.request<{ id: string }>('POST', `${O}/solutions`, {
        body: { name, solutionType: 'Integration', agentId: agent.agentId, mapLinks: [] },
      });
      expect(sol.status, JSON.stringify(sol.body)).toBe(201);
      const S = `${O}/solutions/${sol.body.id}`;
      const map = await sut.request('POST', `${S}/maps/advanced`, {
        body: {
          version: '3.0',
          name: `People from ${entity}`,
          batchSize: 2,
          blocks: [
            {
              blockId: '22222222-2222-4222-8222-000000000001',
              name: 'Q',
              blockType: 'Query',
              action: 'Query',
              connectionId: csvId,
              entity,
            },
            {
              blockId: '22222222-2222-4222-8222-000000000002',
              name: 'CreatePerson',
              blockType: 'Create',
              action: 'Create',
              connectionId: pgId,
              entity: table,
              fieldMappings: [
                { targetField: 'id', targetFormula: 'Q.id' },
                { targetField: 'name', targetFormula: 'Q.name' },
                { targetField: 'age', targetFormula: 'Q.age' },
              ],
            },
          ],
        },
      });
      expect(map.status, JSON.stringify(map.body)).toBe(201);
      const job = await prepared(sut, sol.body.id);
      expect(job, job.message).toMatchObject({ hasError: false });
      const start = await sut.request<{ runId: string; started: boolean }>('POST', `${S}/start`);
      expect(start.body.started, JSON.stringify(start.body)).toBe(true);
      await finished(sut, sol.body.id, start.body.runId);
      const first = (await sut.request<HistoryExecution>('GET', `${S}/history/${start.body.runId}`)).body;
      expect(first).toMatchObject({
        result: 'CompletedWithErrors',
        recordsProcessed: 6,
        recordsFailed: 2,
        reprocessRecordsRemaining: 2,
      });
      expect(
        (await sut.request<{ changed: number }>('POST', `${S}/history/${first.id}/mark?mark=true`)).body.changed,
      ).toBe(2);
      // The cause is fixed: the reprocess writes them.
      await client.query(`ALTER TABLE ${table} DROP CONSTRAINT ${table}_age`);
      return { id: sol.body.id, S, first };
    };

    const execution = async (S: string, ref: string | number): Promise<HistoryExecution> =>
      (await sut.request<HistoryExecution>('GET', `${S}/history/${ref}`)).body;
    const reprocessRuns = async (S: string): Promise<HistoryExecution[]> =>
      (await sut.request<HistoryExecution[]>('GET', `${S}/history`)).body.filter((e) => e.isReprocessJob);
    const errorsOf = async (S: string, id: number): Promise<RecordError[]> =>
      (await sut.request<RecordError[]>('GET', `${S}/history/${id}/errors`)).body;
    const ids = async (table: string): Promise<number[]> =>
      (await client.query<{ id: number }>(`SELECT id FROM ${table} ORDER BY id`)).rows.map((r) => r.id);

    it(
      'stopped as the command is sent and killed before reading it: after the restart the records come back marked, and are reprocessed once',
      { timeout: 300_000 },
      async () => {
        const sol = await markedRun('Unsent reprocess', 'unsent', 'people_unsent');

        // The Agent stops answering with the channel still open: the reprocess waits for it in vain.
        signalAgent('SIGSTOP');
        const lost = await sut.request<Problem>('POST', `${sol.S}/history/${sol.first.id}/reprocess`);
        expect(lost.status, JSON.stringify(lost.body)).toBe(504);
        expect(lost.body.code).toBe('CHN_TIMEOUT');
        expect(lost.body.detail).toContain('given back, still marked');
        const [run] = await reprocessRuns(sol.S);
        expect(run).toMatchObject({ result: 'InProgress', recordsProcessed: 0 });
        expect((await execution(sol.S, sol.first.id)).reprocessRecordsRemaining).toBe(0);

        // Killed with the command unread; the restarted Agent never had the run.
        await killAndRestart();
        await until(
          'the records given back',
          async () => ((await execution(sol.S, sol.first.id)).reprocessRecordsRemaining === 2 ? true : undefined),
          60_000,
        );
        expect(await reprocessRuns(sol.S)).toEqual([]);
        expect((await sut.request('GET', `${sol.S}/history/${run?.processExecutionId}`)).status).toBe(404);
        expect((await errorsOf(sol.S, sol.first.id)).map((e) => [e.canReprocess, e.marked])).toEqual([
          [true, true],
          [true, true],
        ]);
        expect(await ids('people_unsent')).toEqual([1, 2, 4, 6]);

        const again = await sut.request<{ started: boolean; records: number; runId: string }>(
          'POST',
          `${sol.S}/history/${sol.first.id}/reprocess`,
        );
        expect(again.body, JSON.stringify(again.body)).toMatchObject({ started: true, records: 2 });
        const done = await finished(sut, sol.id, again.body.runId);
        expect(await execution(sol.S, done.id)).toMatchObject({
          result: 'CompletedSuccessfully',
          recordsProcessed: 2,
          recordsFailed: 0,
          isReprocessJob: true,
        });
        expect(await ids('people_unsent')).toEqual([1, 2, 3, 4, 5, 6]);
        expect((await execution(sol.S, sol.first.id)).reprocessRecordsRemaining).toBe(0);
        expect(await reprocessRuns(sol.S)).toHaveLength(1);
      },
    );

    it(
      'killed right after it started the run: the Agent still knows it after the restart, so its records are never given back',
      { timeout: 300_000 },
      async () => {
        const sol = await markedRun('Started reprocess', 'started', 'people_started');

        const answer = await sut.request<{ started: boolean; records: number; runId: string }>(
          'POST',
          `${sol.S}/history/${sol.first.id}/reprocess`,
        );
        expect(answer.body, JSON.stringify(answer.body)).toMatchObject({ started: true, records: 2 });
        signalAgent('SIGKILL');
        await agent.proc.exited;
        // Old enough to be asked about as soon as the Agent connects again.
        const sent = Date.now();
        await until(
          'the reprocess older than the Service waits for an answer',
          () => (Date.now() - sent > REPROCESS_WAIT_MS + 500 ? true : undefined),
          REPROCESS_WAIT_MS * 2,
        );
        agent.proc = ferry(['agent', 'run', '--home', agent.home]);
        await untilStatus(sut, agent.agentId, 'Running');

        // The run ends with the Agent (RUN_AGENT_ENDED), or completed before the kill; either way it stays in History.
        const ended = await finished(sut, sol.id, answer.body.runId);
        const view = await execution(sol.S, ended.id);
        expect(view.isReprocessJob).toBe(true);
        expect(['FatalError', 'CompletedSuccessfully']).toContain(view.result);
        if (view.result === 'FatalError') expect(view.details).toContain('RUN_AGENT_ENDED');
        expect(await reprocessRuns(sol.S)).toHaveLength(1);
        expect((await execution(sol.S, sol.first.id)).reprocessRecordsRemaining).toBe(0);
        expect((await errorsOf(sol.S, sol.first.id)).map((e) => [e.canReprocess, e.marked])).toEqual([
          [false, false],
          [false, false],
        ]);
        const written = await ids('people_started');
        expect(written.filter((id) => ![3, 5].includes(id))).toEqual([1, 2, 4, 6]);
      },
    );
  },
);
