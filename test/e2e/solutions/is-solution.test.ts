import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import { killAll, serviceUnderTest, until, type ServiceUnderTest } from '../agent/harness.js';
import { createConnection, CSV, finished, POSTGRES, prepared, runningAgent, type Execution } from './harness.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');
const ROWS = 40_000;

/**
 * An Integration Solution through the API alone, run by a real Agent process: a Map reads a CSV
 * file, computes fields with formulas and a Lookup Table, and creates rows in PostgreSQL; one
 * record is refused by the target. Then start while running is ignored, stop ends a run, and the
 * Agent and Connections the Solution uses cannot be deleted.
 */
describe.skipIf(!HAS_PG)(
  'an IS Solution on a real Agent: CSV → formulas and a Lookup Table → PostgreSQL (needs FERRY_TEST_DATABASE_URL)',
  () => {
    let sut: ServiceUnderTest;
    let db: { url: string; drop: () => Promise<void> };
    let agent: Awaited<ReturnType<typeof runningAgent>>;
    let client: pg.Client;
    let folder: string;

    beforeAll(async () => {
      sut = serviceUnderTest();
      await sut.start();
      db = await createTestDatabase();
      client = new pg.Client({ connectionString: db.url });
      await client.connect();
      await client.query(
        'CREATE TABLE contacts (id integer PRIMARY KEY, full_name text NOT NULL, state_name text, age_next integer)',
      );
      folder = path.join(sut.dataDir, 'csv');
      fs.mkdirSync(folder);
      const lines = ['id,first,last,state,age'];
      // Row 3 repeats id 2: the target's primary key refuses it.
      for (let i = 1; i <= 5; i++)
        lines.push(`${i === 3 ? 2 : i},first${i},last${i},${i % 2 === 0 ? 'CA' : 'NY'},${20 + i}`);
      fs.writeFileSync(path.join(folder, 'people.csv'), lines.join('\n') + '\n');
      const big = ['id,first,last,state,age'];
      for (let i = 1; i <= ROWS; i++) big.push(`${i},f${i},l${i},CA,${i % 90}`);
      fs.writeFileSync(path.join(folder, 'many.csv'), big.join('\n') + '\n');
      fs.writeFileSync(
        path.join(folder, 'schema.json'),
        JSON.stringify({
          entities: Object.fromEntries(
            ['people.csv', 'many.csv'].map((f) => [
              f,
              {
                fields: [
                  { name: 'id', type: 'integer' },
                  { name: 'first', type: 'string' },
                  { name: 'last', type: 'string' },
                  { name: 'state', type: 'string' },
                  { name: 'age', type: 'integer' },
                ],
              },
            ]),
          ),
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

    const mapOf = (csvId: string, pgId: string, entity: string, batchSize: number) => ({
      version: '3.0',
      name: `People from ${entity}`,
      batchSize,
      blocks: [
        {
          blockId: '11111111-1111-4111-8111-000000000001',
          name: 'Q',
          blockType: 'Query',
          action: 'Query',
          connectionId: csvId,
          entity,
        },
        {
          blockId: '11111111-1111-4111-8111-000000000002',
          name: 'CreateContact',
          blockType: 'Create',
          action: 'Create',
          connectionId: pgId,
          entity: 'contacts',
          fieldMappings: [
            { targetField: 'id', targetFormula: 'Q.id' },
            { targetField: 'full_name', targetFormula: 'CONCATENATE(UPPER(Q.first), " ", Q.last)' },
            { targetField: 'state_name', targetFormula: 'LOOKUPTABLEVALUE2("States", Q.state)' },
            { targetField: 'age_next', targetFormula: 'Q.age + 1' },
          ],
        },
      ],
    });

    it(
      'prepares, runs and records History: the bad record is an error, the others arrive; used Agent and Connections cannot be deleted',
      { timeout: 240_000 },
      async () => {
        const O = `/v1/orgs/${sut.orgId}`;
        const table = await sut.request('POST', `${O}/lookuptables`, {
          body: {
            name: 'States',
            lookupTableValues: [
              { value1: 'CA', value2: 'California' },
              { value1: 'NY', value2: 'New York' },
            ],
          },
        });
        expect(table.status).toBe(201);
        const csvId = await createConnection(sut, 'People files', CSV, { folder });
        const pgId = await createConnection(sut, 'Contacts DB', POSTGRES, {
          connectionString: db.url,
          schemas: 'public',
        });
        const sol = await sut.request<{ id: string; status: string }>('POST', `${O}/solutions`, {
          body: { name: 'People sync', solutionType: 'Integration', agentId: agent.agentId, mapLinks: [] },
        });
        expect(sol.status).toBe(201);
        expect(sol.body.status).toBe('Incomplete');
        const S = `${O}/solutions/${sol.body.id}`;
        const map = await sut.request<{ id: number }>('POST', `${S}/maps/advanced`, {
          body: mapOf(csvId, pgId, 'people', 2),
        });
        expect(map.status, JSON.stringify(map.body)).toBe(201);

        const job = await prepared(sut, sol.body.id);
        expect(job, job.message).toMatchObject({ hasError: false, mapErrorModels: [] });
        expect((await sut.request<{ status: string }>('GET', S)).body.status).toBe('OnDemand');

        // An empty JSON body, as clients of the original service send it.
        const start = await sut.request<{ runId: string; started: boolean }>('POST', `${S}/start`, { body: undefined });
        expect(start.status, JSON.stringify(start.body)).toBe(200);
        expect(start.body.started).toBe(true);
        const run = await finished(sut, sol.body.id, start.body.runId);
        expect(run, JSON.stringify(run)).toMatchObject({
          result: 'CompletedWithErrors',
          recordsProcessed: 5,
          recordsFailed: 1,
        });
        const rows = await client.query<{ id: number; full_name: string; state_name: string; age_next: number }>(
          'SELECT * FROM contacts ORDER BY id',
        );
        expect(rows.rows).toEqual([
          { id: 1, full_name: 'FIRST1 last1', state_name: 'New York', age_next: 22 },
          { id: 2, full_name: 'FIRST2 last2', state_name: 'California', age_next: 23 },
          { id: 4, full_name: 'FIRST4 last4', state_name: 'California', age_next: 25 },
          { id: 5, full_name: 'FIRST5 last5', state_name: 'New York', age_next: 26 },
        ]);
        const errors = await sut.request<Array<{ mapName: string; sourceEntity: string; errorMessage: string }>>(
          'GET',
          `${S}/history/${run.id}/errors`,
        );
        expect(errors.body).toHaveLength(1);
        expect(errors.body[0]).toMatchObject({ mapName: 'People from people', sourceEntity: 'people' });
        expect(errors.body[0]?.errorMessage).toMatch(/duplicate|already/i);
        expect((await sut.request<{ status: string }>('GET', S)).body.status).toBe('OnDemandLastRunRowErrors');
        // The Organization's health says so too.
        const orgView = await sut.request<{ status: string; statusCause: string }>('GET', `${O}?expandStatus=true`);
        expect(orgView.body).toMatchObject({
          status: 'Job Warning',
          statusCause: 'Solution People sync: its last run had record errors',
        });

        // Used by the Solution: neither the Agent nor the Connections can be deleted.
        const delAgent = await sut.request<{ detail: string }>('DELETE', `${O}/agents/${agent.agentId}`);
        expect(delAgent.status).toBe(409);
        expect(delAgent.body.detail).toContain('People sync');
        expect((await sut.request('DELETE', `${O}/connections/${pgId}`)).status).toBe(409);
      },
    );

    it(
      'reports why prepare fails, per Map: an unknown field, a Connection that fails',
      { timeout: 240_000 },
      async () => {
        const O = `/v1/orgs/${sut.orgId}`;
        const csvId = await createConnection(sut, 'People files 2', CSV, { folder });
        const pgId = await createConnection(sut, 'Contacts DB 3', POSTGRES, {
          connectionString: db.url,
          schemas: 'public',
        });
        const brokenId = await createConnection(sut, 'Nowhere', CSV, {
          folder: path.join(sut.dataDir, 'no-such-folder'),
        });
        const sol = await sut.request<{ id: string }>('POST', `${O}/solutions`, {
          body: { name: 'Broken maps', solutionType: 'Integration', agentId: agent.agentId },
        });
        const S = `${O}/solutions/${sol.body.id}`;
        const good = mapOf(csvId, pgId, 'people', 10);
        const unknownField = {
          ...good,
          name: 'Unknown field',
          blocks: [
            good.blocks[0],
            { ...good.blocks[1], fieldMappings: [{ targetField: 'no_such_column', targetFormula: 'Q.id' }] },
          ],
        };
        const badConnection = {
          ...good,
          name: 'Bad connection',
          blocks: [{ ...good.blocks[0], connectionId: brokenId }, good.blocks[1]],
        };
        const m1 = await sut.request<{ id: number }>('POST', `${S}/maps/advanced`, { body: unknownField });
        const m2 = await sut.request<{ id: number }>('POST', `${S}/maps/advanced`, { body: badConnection });
        const m3 = await sut.request<{ id: number }>('POST', `${S}/maps/advanced`, { body: { ...good, name: 'Fine' } });
        const job = await prepared(sut, sol.body.id);
        expect(job.hasError).toBe(true);
        expect(job.mapErrorModels.map((e) => e.mapId).sort()).toEqual([m1.body.id, m2.body.id].sort());
        const m1Errors = job.mapErrorModels.find((e) => e.mapId === m1.body.id);
        expect(m1Errors?.message).toContain('no_such_column');
        // Each error once per Block: the list names the Block, the line names it once.
        const write = good.blocks[1] as { blockId: string; name: string };
        expect(m1Errors?.errors).toEqual([
          {
            blockId: write.blockId,
            blockName: write.name,
            code: 'MAP_FIELD_NOT_FOUND',
            message: expect.stringContaining('no_such_column'),
          },
        ]);
        expect(m1Errors?.message).toBe(`${write.name}: ${m1Errors?.errors[0]?.message}`);
        const m2Errors = job.mapErrorModels.find((e) => e.mapId === m2.body.id);
        expect(m2Errors?.message).toContain('no-such-folder');
        expect(m2Errors?.errors).toEqual([
          { blockId: null, blockName: null, code: 'API_METADATA_LOAD_FAILED', message: m2Errors?.message },
        ]);
        expect((await sut.request<{ status: string }>('GET', S)).body.status).toBe('ProvisionError');
        const links = (await sut.request<{ mapLinks: Array<{ id: number; valid: boolean }> }>('GET', S)).body.mapLinks;
        expect(links.find((l) => l.id === m3.body.id)?.valid).toBe(true);
        expect(links.find((l) => l.id === m1.body.id)?.valid).toBe(false);
      },
    );

    it('fires a schedule on the Agent without a start call, once', { timeout: 240_000 }, async () => {
      const O = `/v1/orgs/${sut.orgId}`;
      const list = await sut.request<Array<{ id: string; name: string }>>(
        'GET',
        `${O}/solutions?solutionNameFilter=People%20sync`,
      );
      const sol = list.body.find((s) => s.name === 'People sync');
      expect(sol).toBeDefined();
      const S = `${O}/solutions/${sol?.id ?? ''}`;
      await client.query('DELETE FROM contacts');
      const due = new Date(Date.now() + 8_000);
      due.setUTCMilliseconds(0);
      const put = await sut.request('PUT', `${S}/schedule`, {
        body: {
          scheduleOption: 'RunOnce',
          runOnceOptions: { dateTime: due.toISOString().replace('.000Z', 'Z') },
          recurringOptions: null,
        },
      });
      expect(put.status, JSON.stringify(put.body)).toBe(200);
      const run = await until(
        'the scheduled run',
        async () => {
          const res = await sut.request<Execution[]>('GET', `${S}/history?limit=100`);
          const e = res.body.find((x) => x.trigger === 'schedule' && x.result !== 'InProgress');
          return e;
        },
        120_000,
      );
      expect(run).toMatchObject({ result: 'CompletedWithErrors', recordsProcessed: 5, recordsFailed: 1 });
      const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM contacts');
      expect(Number(rows[0]?.n)).toBe(4);
      // Once: a RunOnce schedule is never due again.
      await new Promise((r) => setTimeout(r, 3_000));
      const all = await sut.request<Execution[]>('GET', `${S}/history?limit=100`);
      expect(all.body.filter((x) => x.trigger === 'schedule')).toHaveLength(1);
    });

    it(
      'keeps failed source records in the cloud when the Organization says so, and says where they are otherwise',
      { timeout: 240_000 },
      async () => {
        const O = `/v1/orgs/${sut.orgId}`;
        const list = await sut.request<Array<{ id: string; name: string }>>(
          'GET',
          `${O}/solutions?solutionNameFilter=People%20sync`,
        );
        const S = `${O}/solutions/${list.body.find((s) => s.name === 'People sync')?.id ?? ''}`;
        const run = async (): Promise<{ run: Execution; error: { id: string; failedRecordId: string | null } }> => {
          await client.query('DELETE FROM contacts');
          const start = await sut.request<{ runId: string; started: boolean }>('POST', `${S}/start`);
          expect(start.body.started, JSON.stringify(start.body)).toBe(true);
          const id = S.split('/').pop() ?? '';
          const done = await finished(sut, id, start.body.runId);
          const errors = await sut.request<Array<{ id: string; failedRecordId: string | null }>>(
            'GET',
            `${S}/history/${done.id}/errors`,
          );
          expect(errors.body).toHaveLength(1);
          return { run: done, error: errors.body[0] as { id: string; failedRecordId: string | null } };
        };
        const settings = (isSourceDataLocal: boolean) =>
          sut.request('PUT', `${O}/SecuritySettings`, {
            body: {
              captureOnFailedRecordsForReprocessing: true,
              captureDuringCloudAppRuns: true,
              captureDuringLocalAgentAppRuns: true,
              isSourceDataLocal,
            },
          });
        expect((await settings(false)).status).toBe(200);
        // The change reaches the Agent with the Solution's next version: the next run keeps its failed records in the cloud.
        const cloud = await until(
          'a run that keeps its failed record in the cloud',
          async () => {
            const r = await run();
            return (r.run as Execution & { sourceDataLocal: boolean }).sourceDataLocal ? undefined : r;
          },
          120_000,
        );
        expect(cloud.error.failedRecordId).toBeTruthy();
        const rec = await until('the failed record on the Service', async () => {
          const res = await sut.request<{
            id: string;
            name: string;
            sourceData: Record<string, unknown>;
            properties: Array<{ key: string; value: unknown }>;
          }>('GET', `${S}/history/${cloud.run.id}/failedrecords/${cloud.error.id}`);
          return res.status === 200 ? res.body : undefined;
        });
        expect(rec).toMatchObject({
          id: cloud.error.id,
          name: 'people',
          sourceData: { id: 2, first: 'first3', state: 'NY' },
        });
        expect(rec.properties).toContainEqual({ key: 'first', value: 'first3' });
        // Stored sealed: the Service's database does not hold the record's values in clear.
        const stored = sut.query<{ source: string }>('SELECT source FROM failed_records');
        expect(stored.length).toBeGreaterThan(0);
        expect(stored.map((r) => r.source).join()).not.toContain('first3');

        expect((await settings(true)).status).toBe(200);
        const local = await until(
          'a run that keeps its failed record on the Agent',
          async () => {
            const r = await run();
            return (r.run as Execution & { sourceDataLocal: boolean }).sourceDataLocal ? r : undefined;
          },
          120_000,
        );
        const res = await sut.request<{ detail: string }>(
          'GET',
          `${S}/history/${local.run.id}/failedrecords/${local.error.id}`,
        );
        expect(res.status).toBe(409);
        expect(res.body.detail).toContain('kept on the Agent');
      },
    );

    it(
      'ignores a start while a run is in progress, reports progress to startmonitor, and stop ends the run',
      { timeout: 240_000 },
      async () => {
        const O = `/v1/orgs/${sut.orgId}`;
        const csvId = await createConnection(sut, 'Many people', CSV, { folder });
        const pgId = await createConnection(sut, 'Contacts DB 2', POSTGRES, {
          connectionString: db.url,
          schemas: 'public',
        });
        await client.query('DELETE FROM contacts');
        const sol = await sut.request<{ id: string }>('POST', `${O}/solutions`, {
          body: { name: 'Many people', solutionType: 'Integration', agentId: agent.agentId, mapLinks: [] },
        });
        const S = `${O}/solutions/${sol.body.id}`;
        expect((await sut.request('POST', `${S}/maps/advanced`, { body: mapOf(csvId, pgId, 'many', 50) })).status).toBe(
          201,
        );
        // Not prepared: the start prepares first, then runs.
        const start = await sut.request<{ runId: string; started: boolean; prepareId: string | null }>(
          'POST',
          `${S}/commands/start`,
        );
        expect(start.status, JSON.stringify(start.body)).toBe(200);
        expect(start.body.prepareId).not.toBeNull();
        const monitor = await until(
          'records processed during the run',
          async () => {
            const m = await sut.request<{ running: boolean; runId: string | null; recordsProcessed: number }>(
              'POST',
              `${S}/startmonitor`,
            );
            return m.body.running && m.body.recordsProcessed > 0 ? m.body : undefined;
          },
          120_000,
        );
        expect(monitor.runId).toBe(start.body.runId);
        const again = await sut.request<{ runId: string; started: boolean }>('POST', `${S}/start`);
        expect(again.body).toMatchObject({ started: false, runId: start.body.runId });
        expect((await sut.request<{ status: string }>('GET', S)).body.status).toBe('InProgress');
        const stop = await sut.request<{ stopping: boolean }>('POST', `${S}/stop`);
        expect(stop.body.stopping).toBe(true);
        const run: Execution = await finished(sut, sol.body.id, start.body.runId);
        expect(run.recordsProcessed).toBeGreaterThan(0);
        expect(run.recordsProcessed).toBeLessThan(ROWS);
        expect(run.details).toMatch(/Stopped/);
        // A copy cut short by a stop is not reported as a clean success (a client filtering on results trusts it).
        expect(run.result).toBe('FatalError');
        expect(run.details).toMatch(/^RUN_STOPPED: /);
        const { rows } = await client.query<{ n: string }>('SELECT count(*) AS n FROM contacts');
        expect(Number(rows[0]?.n)).toBe(run.recordsProcessed);
        expect((await sut.request('POST', `${S}/stopmonitor`)).status).toBe(204);
      },
    );
  },
);
