import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { parse } from 'csv-parse/sync';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import { ferry, until, untilStatus, type ServiceUnderTest } from '../agent/harness.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  finished,
  ID_NAME,
  POSTGRES,
  prepared,
  startRun,
  startWithAgent,
  stopAll,
  type Execution,
  type RunningAgent,
} from './harness.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');

interface HistoryExecution extends Execution {
  isReprocessJob: boolean;
  reprocessRecordsRemaining: number;
  sourceDataLocal: boolean;
}
interface RecordError {
  id: string;
  canReprocess: boolean;
  marked: boolean;
  failedRecordId: string | null;
  errorMessage: string;
  sourceKey: Record<string, unknown> | null;
  sourceRow: number | null;
}
interface ReprocessAnswer {
  runId: string | null;
  started: boolean;
  records: number;
}

/**
 * Reprocessing failed records end to end, with a real Agent process: a run whose target refuses
 * some records (a CHECK constraint), the errors marked, the cause fixed (the target's constraint
 * dropped, or the Map's formula saved and prepared), the marked records reprocessed from their
 * stored copies — on the Agent (across an Agent restart) or on the Service — arriving exactly once,
 * and a second reprocess doing nothing.
 */
describe.skipIf(!HAS_PG)(
  'reprocessing failed records on a real Agent: CSV → PostgreSQL (needs FERRY_TEST_DATABASE_URL)',
  () => {
    let sut: ServiceUnderTest;
    let db: { url: string; drop: () => Promise<void> };
    let agent: RunningAgent;
    let client: pg.Client;
    let folder: string;
    let O: string;

    beforeAll(async () => {
      // Ages of 100 and more are refused by the targets' CHECK constraint.
      ({ sut, agent, folder } = await startWithAgent({
        csv: {
          local: 'id,name,age\n1,ada,20\n2,alan,30\n3,grace,150\n4,kid,40\n5,linus,200\n6,ken,50\n',
          cloud: 'id,name,age\n1,ada,20\n2,alan,30\n3,grace,150\n4,kid,40\n5,linus,200\n6,ken,300\n',
        },
        fields: [...ID_NAME, { name: 'age', type: 'integer' }],
      }));
      O = `/v1/orgs/${sut.orgId}`;
      db = await createTestDatabase();
      client = new pg.Client({ connectionString: db.url });
      await client.connect();
    }, 180_000);

    afterAll(async () => {
      await agent?.proc.stop();
      await client?.end();
      await stopAll(sut);
      await db?.drop();
    });

    const mapOf = (csvId: string, pgId: string, entity: string, table: string, ageFormula: string) =>
      copyMap({ n: 1, csvId, entity, targetId: pgId, table, batchSize: 2, fields: { age: ageFormula } });

    const settings = (isSourceDataLocal: boolean) =>
      sut.request('PUT', `${O}/SecuritySettings`, {
        body: {
          captureOnFailedRecordsForReprocessing: true,
          captureDuringCloudAppRuns: true,
          captureDuringLocalAgentAppRuns: true,
          isSourceDataLocal,
        },
      });

    /** A Solution with one Map from `entity` into `table`, prepared. */
    const solutionOf = async (
      name: string,
      entity: string,
      table: string,
    ): Promise<{ id: string; S: string; mapId: number; csvId: string; pgId: string }> => {
      await client.query(
        `CREATE TABLE ${table} (id integer PRIMARY KEY, name text NOT NULL, age integer CONSTRAINT ${table}_age CHECK (age < 100))`,
      );
      const csvId = await createConnection(sut, `${name} files`, CSV, { folder });
      const pgId = await createConnection(sut, `${name} DB`, POSTGRES, { connectionString: db.url, schemas: 'public' });
      const sol = await createSolution(sut, agent.agentId, name, [mapOf(csvId, pgId, entity, table, 'Q.age')], {
        prepare: true,
      });
      const [mapId] = sol.mapIds as [number];
      return { id: sol.id, S: sol.S, mapId, csvId, pgId };
    };

    const run = async (sol: { id: string; S: string }): Promise<HistoryExecution> => {
      const runId = await startRun(sut, sol.id);
      await finished(sut, sol.id, runId);
      return (await sut.request<HistoryExecution>('GET', `${sol.S}/history/${runId}`)).body;
    };
    const errorsOf = async (S: string, id: number): Promise<RecordError[]> =>
      (await sut.request<RecordError[]>('GET', `${S}/history/${id}/errors`)).body;
    const reprocess = async (S: string, path: string): Promise<ReprocessAnswer> => {
      const res = await sut.request<ReprocessAnswer>('POST', `${S}/history/${path}/reprocess`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body;
    };
    const rows = async (table: string): Promise<Array<{ id: number; age: number }>> =>
      (await client.query<{ id: number; age: number }>(`SELECT id, age FROM ${table} ORDER BY id`)).rows;

    it(
      'kept on the Agent: mark all, the Agent restarts, the target is fixed, reprocess writes the records once; a second reprocess does nothing',
      { timeout: 300_000 },
      async () => {
        expect((await settings(true)).status).toBe(200);
        const sol = await solutionOf('Local reprocess', 'local', 'people_local');
        const first = await run(sol);
        expect(first).toMatchObject({
          result: 'CompletedWithErrors',
          recordsProcessed: 6,
          recordsFailed: 2,
          sourceDataLocal: true,
          isReprocessJob: false,
          reprocessRecordsRemaining: 2,
        });
        const errors = await errorsOf(sol.S, first.id);
        expect(errors).toHaveLength(2);
        expect(errors.every((e) => e.canReprocess && e.failedRecordId !== null)).toBe(true);
        // The copies are on the Agent: the Service says so.
        const where = await sut.request<{ detail: string }>(
          'GET',
          `${sol.S}/history/${first.id}/failedrecords/${errors[0]?.id}`,
        );
        expect(where.status).toBe(409);
        expect(where.body.detail).toContain('kept on the Agent');
        expect(where.body.detail).toContain(`ferry agent failures show ${errors[0]?.failedRecordId}`);
        // Which rows failed: the CSV file has no key, so its rows' positions in the read.
        expect(errors.map((e) => [e.sourceKey, e.sourceRow])).toEqual([
          [null, 3],
          [null, 5],
        ]);

        expect(
          (await sut.request<{ changed: number }>('POST', `${sol.S}/history/${first.id}/mark?mark=true`)).body.changed,
        ).toBe(2);

        // The Agent restarts: the marked records are reprocessed from its local store afterwards.
        await agent.proc.stop();
        agent.proc = ferry(['agent', 'run', '--home', agent.home]);
        await untilStatus(sut, agent.agentId, 'Running');

        await client.query('ALTER TABLE people_local DROP CONSTRAINT people_local_age');
        const answer = await until(
          'the reprocess accepted by the restarted Agent',
          async () => {
            const a = await sut.request<ReprocessAnswer & { code?: string }>(
              'POST',
              `${sol.S}/history/${first.id}/reprocess`,
            );
            return a.status === 200 ? a.body : undefined;
          },
          60_000,
        );
        expect(answer).toMatchObject({ started: true, records: 2 });
        const job = await finished(sut, sol.id, answer.runId ?? '');
        const again = (await sut.request<HistoryExecution>('GET', `${sol.S}/history/${job.id}`)).body;
        expect(again).toMatchObject({
          result: 'CompletedSuccessfully',
          recordsProcessed: 2,
          recordsFailed: 0,
          isReprocessJob: true,
        });
        expect(await rows('people_local')).toEqual([
          { id: 1, age: 20 },
          { id: 2, age: 30 },
          { id: 3, age: 150 },
          { id: 4, age: 40 },
          { id: 5, age: 200 },
          { id: 6, age: 50 },
        ]);
        expect(
          (await sut.request<HistoryExecution>('GET', `${sol.S}/history/${first.id}`)).body.reprocessRecordsRemaining,
        ).toBe(0);
        expect((await errorsOf(sol.S, first.id)).map((e) => [e.canReprocess, e.marked])).toEqual([
          [false, false],
          [false, false],
        ]);

        // Once: a second reprocess (SPEC.md's path) has nothing to do, and the records cannot be marked again.
        expect(await reprocess(sol.S, `${first.id}/${first.processExecutionId}`)).toMatchObject({
          started: false,
          records: 0,
        });
        expect((await sut.request('POST', `${sol.S}/history/${first.id}/errors/${errors[0]?.id}/mark`)).status).toBe(
          409,
        );
        const list = (await sut.request<HistoryExecution[]>('GET', `${sol.S}/history`)).body;
        expect(list.filter((e) => e.isReprocessJob)).toHaveLength(1);
        expect(await rows('people_local')).toHaveLength(6);
      },
    );

    it(
      'kept in the cloud: mark each, the Map is fixed and prepared, reprocess uses the saved Map; a record failing again is a new error of the reprocess run',
      { timeout: 300_000 },
      async () => {
        expect((await settings(false)).status).toBe(200);
        const sol = await solutionOf('Cloud reprocess', 'cloud', 'people_cloud');
        // The setting reached the Agent with the Solution's definition: this run keeps its copies in the cloud.
        const first = await run(sol);
        expect(first).toMatchObject({
          result: 'CompletedWithErrors',
          recordsProcessed: 6,
          recordsFailed: 3,
          sourceDataLocal: false,
        });
        const errors = await errorsOf(sol.S, first.id);
        expect(errors).toHaveLength(3);
        const copy = await until('the failed record on the Service', async () => {
          const res = await sut.request<{ name: string; sourceData: Record<string, unknown> }>(
            'GET',
            `${sol.S}/history/${first.id}/failedrecords/${errors[0]?.id}`,
          );
          return res.status === 200 ? res.body : undefined;
        });
        expect(copy).toMatchObject({ name: 'cloud', sourceData: { id: 3, age: 150 } });
        // The export names each failed row and carries its values, kept in the Service.
        const { exportId } = (await sut.request<{ exportId: number }>('GET', `${sol.S}/history/${first.id}/export`))
          .body;
        const csv = (await sut.request<string>('GET', `${sol.S}/history/${first.id}/export/${exportId}`)).body;
        const exported = parse<Record<string, string>>(csv, { columns: true }).map((r) => [
          r['sourceRow'],
          JSON.parse(r['record'] || 'null')?.age,
        ]);
        expect(exported).toEqual([
          ['3', 150],
          ['5', 200],
          ['6', 300],
        ]);

        for (const e of errors) {
          const marked = await sut.request<RecordError>('POST', `${sol.S}/history/${first.id}/errors/${e.id}/mark`);
          expect(marked.body.marked).toBe(true);
        }
        // The fix is in the Map: ages are stored less 140. The source is not read again: its file is gone.
        const saved = await sut.request('PUT', `${sol.S}/maps/advanced/${sol.mapId}`, {
          body: mapOf(sol.csvId, sol.pgId, 'cloud', 'people_cloud', 'Q.age - 140'),
        });
        expect(saved.status, JSON.stringify(saved.body)).toBe(200);
        expect((await prepared(sut, sol.id)).hasError).toBe(false);
        fs.renameSync(path.join(folder, 'cloud.csv'), path.join(folder, 'cloud.csv.bak'));

        const answer = await reprocess(sol.S, String(first.id));
        expect(answer).toMatchObject({ started: true, records: 3 });
        const job = await finished(sut, sol.id, answer.runId ?? '');
        const view = (await sut.request<HistoryExecution>('GET', `${sol.S}/history/${job.id}`)).body;
        expect(view).toMatchObject({
          result: 'CompletedWithErrors',
          recordsProcessed: 3,
          recordsFailed: 1,
          isReprocessJob: true,
          reprocessRecordsRemaining: 1,
        });
        expect(await rows('people_cloud')).toEqual([
          { id: 1, age: 20 },
          { id: 2, age: 30 },
          { id: 3, age: 10 },
          { id: 4, age: 40 },
          { id: 5, age: 60 },
        ]);
        // 300 - 140 is still refused: a new error of the reprocess run, with its own copy, reprocessable in its turn.
        const failedAgain = await errorsOf(sol.S, job.id);
        expect(failedAgain).toHaveLength(1);
        expect(failedAgain[0]).toMatchObject({ canReprocess: true, marked: false });
        const again = await until('the new copy on the Service', async () => {
          const res = await sut.request<{ sourceData: Record<string, unknown> }>(
            'GET',
            `${sol.S}/history/${job.id}/failedrecords/${failedAgain[0]?.id}`,
          );
          return res.status === 200 ? res.body : undefined;
        });
        expect(again.sourceData).toMatchObject({ id: 6, age: 300 });

        expect(
          (await sut.request<HistoryExecution>('GET', `${sol.S}/history/${first.id}`)).body.reprocessRecordsRemaining,
        ).toBe(0);
        expect(await reprocess(sol.S, String(first.id))).toMatchObject({ started: false, records: 0 });
        expect(await rows('people_cloud')).toHaveLength(5);
        fs.renameSync(path.join(folder, 'cloud.csv.bak'), path.join(folder, 'cloud.csv'));
      },
    );

    it(
      'keeps nothing when the master switch is off, from the next run: its errors cannot be marked',
      { timeout: 300_000 },
      async () => {
        const res = await sut.request('PUT', `${O}/SecuritySettings`, {
          body: {
            captureOnFailedRecordsForReprocessing: false,
            captureDuringCloudAppRuns: true,
            captureDuringLocalAgentAppRuns: true,
            isSourceDataLocal: false,
          },
        });
        expect(res.status).toBe(200);
        const list = await sut.request<Array<{ id: string; name: string }>>(
          'GET',
          `${O}/solutions?solutionNameFilter=Cloud%20reprocess`,
        );
        const id = list.body.find((s) => s.name === 'Cloud reprocess')?.id ?? '';
        const S = `${O}/solutions/${id}`;
        // Rows 1 to 5 are in the target already and 6 is refused by the Map as saved: every record fails.
        const next = await run({ id, S });
        expect(next).toMatchObject({ recordsFailed: 6, reprocessRecordsRemaining: 0 });
        const errors = await errorsOf(S, next.id);
        expect(errors.map((e) => [e.canReprocess, e.failedRecordId])).toEqual(
          Array.from({ length: 6 }, () => [false, null]),
        );
        const refused = await sut.request<{ detail: string }>(
          'POST',
          `${S}/history/${next.id}/errors/${errors[0]?.id}/mark`,
        );
        expect(refused.status).toBe(409);
        expect(refused.body.detail).toContain('kept no copy');
        expect(
          (await sut.request<{ changed: number }>('POST', `${S}/history/${next.id}/mark?mark=true`)).body.changed,
        ).toBe(0);
        expect(await reprocess(S, String(next.id))).toMatchObject({ started: false, records: 0 });
      },
    );
  },
);
