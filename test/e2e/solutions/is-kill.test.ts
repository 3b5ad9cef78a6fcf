import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import { killAll, serviceUnderTest, until, workerPids, type ServiceUnderTest } from '../agent/harness.js';
import { createConnection, CSV, finished, POSTGRES, prepared, runningAgent, type Execution } from './harness.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');
const ROWS = 150_000;
const T0 = Date.UTC(2024, 0, 2);

/**
 * kill -9 of the Agent's worker in the middle of two IS runs with net change — a Create into a
 * PostgreSQL table with a primary key and one into a table without — then the next runs: the
 * killed runs end in History with RUN_AGENT_ENDED, and the next runs neither lose nor write twice
 * a record (the batch in flight committed with its checkpoint in the target's transaction).
 */
describe.skipIf(!HAS_PG)(
  'IS runs killed with SIGKILL, then run again: no record lost or doubled (needs FERRY_TEST_DATABASE_URL)',
  () => {
    let sut: ServiceUnderTest;
    let db: { url: string; drop: () => Promise<void> };
    let client: pg.Client;
    let agent: Awaited<ReturnType<typeof runningAgent>>;
    let folder: string;

    beforeAll(async () => {
      sut = serviceUnderTest();
      await sut.start();
      db = await createTestDatabase();
      client = new pg.Client({ connectionString: db.url });
      await client.connect();
      await client.query(
        'CREATE TABLE keyed (id integer PRIMARY KEY, name text NOT NULL); CREATE TABLE plain (id integer NOT NULL, name text NOT NULL)',
      );
      folder = path.join(sut.dataDir, 'csv');
      fs.mkdirSync(folder);
      const lines = ['id,name,updated_at'];
      for (let i = 1; i <= ROWS; i++)
        lines.push(`${i},n${i},${new Date(T0 + i * 1000).toISOString().replace('.000Z', 'Z')}`);
      fs.writeFileSync(path.join(folder, 'people.csv'), lines.join('\n') + '\n');
      fs.writeFileSync(
        path.join(folder, 'schema.json'),
        JSON.stringify({
          entities: {
            'people.csv': {
              fields: [
                { name: 'id', type: 'integer', primaryKey: true },
                { name: 'name', type: 'string' },
                { name: 'updated_at', type: 'datetime' },
              ],
            },
          },
        }),
      );
      agent = await runningAgent(sut);
    }, 180_000);

    afterAll(async () => {
      killAll();
      await client?.end();
      await sut?.dispose();
      await db?.drop();
    });

    const mapInto = (csvId: string, pgId: string, table: string) => ({
      version: '3.0',
      name: `People into ${table}`,
      batchSize: 500,
      blocks: [
        {
          blockId: '21111111-1111-4111-8111-000000000001',
          name: 'Q',
          blockType: 'Query',
          action: 'Query',
          connectionId: csvId,
          entity: 'people',
          netChange: { fieldName: 'updated_at' },
        },
        {
          blockId: '21111111-1111-4111-8111-000000000002',
          name: 'Put',
          blockType: 'Create',
          action: 'Create',
          connectionId: pgId,
          entity: table,
          fieldMappings: [
            { targetField: 'id', targetFormula: 'Q.id' },
            { targetField: 'name', targetFormula: 'Q.name' },
          ],
        },
      ],
    });

    it(
      'ends the killed runs with RUN_AGENT_ENDED and the next runs complete the tables exactly once',
      { timeout: 300_000 },
      async () => {
        const O = `/v1/orgs/${sut.orgId}`;
        const csvId = await createConnection(sut, 'People', CSV, { folder });
        const pgId = await createConnection(sut, 'Target', POSTGRES, { connectionString: db.url, schemas: 'public' });
        const solutions: string[] = [];
        for (const table of ['keyed', 'plain']) {
          const sol = await sut.request<{ id: string }>('POST', `${O}/solutions`, {
            body: { name: `Into ${table}`, solutionType: 'Integration', agentId: agent.agentId },
          });
          expect(
            (
              await sut.request('POST', `${O}/solutions/${sol.body.id}/maps/advanced`, {
                body: mapInto(csvId, pgId, table),
              })
            ).status,
          ).toBe(201);
          expect((await prepared(sut, sol.body.id)).hasError).toBe(false);
          solutions.push(sol.body.id);
        }
        const runs: string[] = [];
        for (const id of solutions)
          runs.push((await sut.request<{ runId: string }>('POST', `${O}/solutions/${id}/start`)).body.runId);
        // Both runs under way, then the worker dies without a chance to say anything.
        for (const table of ['keyed', 'plain']) {
          await until(
            `rows in ${table}`,
            async () => {
              const { rows } = await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${table}`);
              return Number(rows[0]?.n) > 2_000 ? true : undefined;
            },
            120_000,
          );
        }
        const [worker] = workerPids(agent.proc);
        process.kill(worker as number, 'SIGKILL');
        const atKill = await Promise.all(
          ['keyed', 'plain'].map(async (t) =>
            Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${t}`)).rows[0]?.n),
          ),
        );
        expect(Math.min(...atKill), 'the runs were still going when killed').toBeLessThan(ROWS);

        // The supervisor starts a new worker; it ends the runs the killed one left open.
        for (const [i, id] of solutions.entries()) {
          const ended = await finished(sut, id, runs[i] as string, 120_000);
          expect(ended.result).toBe('FatalError');
          expect(ended.details).toContain('RUN_AGENT_ENDED');
          await until('the Solution no longer in progress', async () =>
            (await sut.request<{ status: string }>('GET', `${O}/solutions/${id}`)).body.status !== 'InProgress'
              ? true
              : undefined,
          );
        }
        // What the killed worker committed: the next runs must process exactly the rest.
        const before = await Promise.all(
          ['keyed', 'plain'].map(async (t) =>
            Number((await client.query<{ n: string }>(`SELECT count(*) AS n FROM ${t}`)).rows[0]?.n),
          ),
        );
        const again: Execution[] = [];
        for (const id of solutions) {
          const start = await until(
            'a start the new worker takes',
            async () => {
              const res = await sut.request<{ runId: string; started: boolean }>('POST', `${O}/solutions/${id}/start`);
              return res.status === 200 && res.body.started ? res.body : undefined;
            },
            60_000,
          );
          again.push(await finished(sut, id, start.runId));
        }
        for (const [i, table] of ['keyed', 'plain'].entries()) {
          // Nothing refused: not one record of the batch in flight at the kill was written again.
          expect(again[i], JSON.stringify(again[i])).toMatchObject({
            result: 'CompletedSuccessfully',
            recordsFailed: 0,
          });
          const { rows } = await client.query<{ n: string; d: string; lo: number; hi: number }>(
            `SELECT count(*) AS n, count(DISTINCT id) AS d, min(id) AS lo, max(id) AS hi FROM ${table}`,
          );
          const r = rows[0];
          expect({ n: Number(r?.n), d: Number(r?.d), lo: Number(r?.lo), hi: Number(r?.hi) }, table).toEqual({
            n: ROWS,
            d: ROWS,
            lo: 1,
            hi: ROWS,
          });
          expect((again[i] as Execution).recordsProcessed, table).toBe(ROWS - (before[i] as number));
        }
      },
    );
  },
);
