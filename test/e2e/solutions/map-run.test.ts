import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, serviceUnderTest, until, type ServiceUnderTest } from '../agent/harness.js';
import { createConnection, CSV, finished, runningAgent, SQLITE, type Execution } from './harness.js';

interface MapRun {
  commandId: string;
  mapId: number;
  status: string;
  ignored: boolean;
  message: string;
  runId: string | null;
  prepareId: string | null;
  executionId: number | null;
  result: string | null;
  recordsProcessed: number | null;
  recordsFailed: number | null;
  mapStatistics: { mapId: number; processed: number } | null;
}

const ROWS = 60_000;
const B = (map: number, n: number): string => `33333333-3333-4333-8333-${String(map * 100 + n).padStart(12, '0')}`;

/**
 * Single-Map runs through the API on a real Agent process: one Map of a Solution copies a CSV file
 * into SQLite, recorded in History as a run of its Solution with that Map's statistics; the other
 * Maps do not run; a run of a Map (or a start of the Solution) while another runs is ignored.
 */
describe('single-Map runs on a real Agent: CSV → SQLite', () => {
  let sut: ServiceUnderTest;
  let agent: Awaited<ReturnType<typeof runningAgent>>;
  let file: string;
  let S: string;
  let solutionId: string;
  const mapIds: number[] = [];

  const count = (table: string): number => {
    const db = new Database(file, { readonly: true });
    try {
      return (db.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
    } finally {
      db.close();
    }
  };
  const mapOf = (n: number, csvId: string, dbId: string, entity: string, table: string, batchSize: number) => ({
    version: '3.0',
    name: `Copy ${entity} to ${table}`,
    batchSize,
    blocks: [
      { blockId: B(n, 1), name: 'Q', blockType: 'Query', action: 'Query', connectionId: csvId, entity },
      { blockId: B(n, 2), name: 'Put', blockType: 'Create', action: 'Create', connectionId: dbId, entity: table, fieldMappings: [{ targetField: 'id', targetFormula: 'Q.id' }, { targetField: 'name', targetFormula: 'UPPER(Q.name)' }] },
    ],
  });
  const run = async (mapId: number): Promise<MapRun> => {
    const res = await sut.request<MapRun>('POST', `${S}/maps/${mapId}/run`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };
  const ended = (mapId: number, commandId: string): Promise<MapRun> =>
    until('the single-Map run', async () => {
      const res = await sut.request<MapRun>('GET', `${S}/maps/${mapId}/run/${commandId}`);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      return res.body.status === 'finished' || res.body.status === 'failed' ? res.body : undefined;
    }, 180_000);

  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    const folder = path.join(sut.dataDir, 'csv');
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, 'few.csv'), ['id,name', ...Array.from({ length: 7 }, (_, i) => `${i + 1},name${i + 1}`)].join('\n') + '\n');
    fs.writeFileSync(path.join(folder, 'many.csv'), ['id,name', ...Array.from({ length: ROWS }, (_, i) => `${i + 1},n${i + 1}`)].join('\n') + '\n');
    const fields = [{ name: 'id', type: 'integer' }, { name: 'name', type: 'string' }];
    fs.writeFileSync(path.join(folder, 'schema.json'), JSON.stringify({ entities: { 'few.csv': { fields }, 'many.csv': { fields } } }));
    file = path.join(sut.dataDir, 'target.db');
    const db = new Database(file);
    for (const t of ['a', 'b', 'c']) db.exec(`CREATE TABLE ${t} (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`);
    db.close();
    agent = await runningAgent(sut);
    const csvId = await createConnection(sut, 'Files', CSV, { folder });
    const dbId = await createConnection(sut, 'Target', SQLITE, { file });
    const sol = await sut.request<{ id: string }>('POST', `/v1/orgs/${sut.orgId}/solutions`, { body: { name: 'Three maps', solutionType: 'Integration', agentId: agent.agentId } });
    expect(sol.status).toBe(201);
    solutionId = sol.body.id;
    S = `/v1/orgs/${sut.orgId}/solutions/${solutionId}`;
    for (const [n, body] of [mapOf(1, csvId, dbId, 'few', 'a', 100), mapOf(2, csvId, dbId, 'few', 'b', 100), mapOf(3, csvId, dbId, 'many', 'c', 20)].entries()) {
      const res = await sut.request<{ id: number }>('POST', `${S}/maps/advanced`, { body });
      expect(res.status, `map ${n}: ${JSON.stringify(res.body)}`).toBe(201);
      mapIds.push(res.body.id);
    }
  }, 180_000);

  afterAll(async () => {
    killAll();
    await sut?.dispose();
  });

  it('runs one Map of an unprepared Solution: prepared first, then only that Map runs, recorded in History with its statistics', { timeout: 240_000 }, async () => {
    const [first] = mapIds as [number];
    const started = await run(first);
    expect(started).toMatchObject({ ignored: false, mapId: first });
    expect(started.prepareId).not.toBeNull();
    expect(['queued', 'running']).toContain(started.status);
    const done = await ended(first, started.commandId);
    expect(done, JSON.stringify(done)).toMatchObject({ status: 'finished', result: 'CompletedSuccessfully', recordsProcessed: 7, recordsFailed: 0, runId: started.runId });
    expect(done.mapStatistics).toMatchObject({ mapId: first, processed: 7 });
    expect(count('a')).toBe(7);
    expect(count('b')).toBe(0);
    expect(count('c')).toBe(0);

    // The History execution is the Solution's, with this one Map's statistics.
    const execution = await finished(sut, solutionId, started.runId ?? '');
    expect(execution.id).toBe(done.executionId);
    const stats = await sut.request<{ mapStatistics: Array<{ mapId: number; recordsProcessed: number }> }>('GET', `${S}/history/${execution.id}/statistics`);
    expect(stats.body.mapStatistics).toEqual([expect.objectContaining({ mapId: first, recordsProcessed: 7 })]);
  });

  it('ignores a run of a Map, and a start of the Solution, while another Map of it runs', { timeout: 240_000 }, async () => {
    const [first, second, big] = mapIds as [number, number, number];
    const long = await run(big);
    expect(long).toMatchObject({ ignored: false, prepareId: null });
    const other = await run(second);
    expect(other).toMatchObject({ ignored: true, status: 'ignored', runId: long.runId });
    expect(other.message).toContain('ignored');
    const same = await run(big);
    expect(same).toMatchObject({ ignored: true, runId: long.runId });
    const start = await sut.request<{ started: boolean; runId: string }>('POST', `${S}/start`);
    expect(start.body).toMatchObject({ started: false, runId: long.runId });
    // The ignored command says so when asked again.
    const asked = await sut.request<MapRun>('GET', `${S}/maps/${second}/run/${other.commandId}`);
    expect(asked.body).toMatchObject({ status: 'ignored', ignored: true, executionId: null });

    const running = await until('the long run in History', async () => {
      const res = await sut.request<MapRun>('GET', `${S}/maps/${big}/run/${long.commandId}`);
      return res.body.status !== 'queued' ? res.body : undefined;
    });
    expect(['running', 'finished']).toContain(running.status);
    const done = await ended(big, long.commandId);
    expect(done).toMatchObject({ status: 'finished', result: 'CompletedSuccessfully', recordsProcessed: ROWS });
    expect(count('c')).toBe(ROWS);
    expect(count('b')).toBe(0);

    // Once it ended, the Map runs.
    const now = await run(second);
    expect(now.ignored).toBe(false);
    expect(await ended(second, now.commandId)).toMatchObject({ result: 'CompletedSuccessfully', recordsProcessed: 7 });
    expect(count('b')).toBe(7);
    // Map a again: its rows are already there, so each record is an error of a finished run.
    const again = await run(first);
    const failed = await ended(first, again.commandId);
    expect(failed).toMatchObject({ status: 'finished', result: 'CompletedWithErrors', recordsFailed: 7 });
    const history = await sut.request<Execution[]>('GET', `${S}/history?limit=100`);
    expect(history.body.filter((e) => [long.runId, now.runId, again.runId].includes(e.processExecutionId))).toHaveLength(3);
  });

  it('answers 404 for an unknown Map or command, and 400 for a command ID that is not a GUID', async () => {
    const [first] = mapIds as [number];
    expect((await sut.request('POST', `${S}/maps/999999/run`)).status).toBe(404);
    expect((await sut.request('GET', `${S}/maps/${first}/run/3f2504e0-4f89-41d3-9a0c-0305e82c3301`)).status).toBe(404);
    expect((await sut.request('GET', `${S}/maps/${first}/run/nope`)).status).toBe(400);
  });
});
