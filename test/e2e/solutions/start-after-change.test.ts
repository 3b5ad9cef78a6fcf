import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { killAll, serviceUnderTest, type ServiceUnderTest } from '../agent/harness.js';
import { createConnection, CSV, finished, runningAgent, SQLITE } from './harness.js';

const B = (map: number, n: number): string => `44444444-4444-4444-8444-${String(map * 100 + n).padStart(12, '0')}`;

/**
 * A start right after a change to a Solution's Maps (a Map deleted, a Map saved) runs the changed
 * definition on a real Agent process, also when a prepare of the Solution was already running
 * (it built the definition from before the change): the start prepares the changed one and the
 * Agent runs that. Each Solution has Connections of its own, so its first prepare loads their
 * metadata through the Agent and is still running when the change and the start arrive.
 */
describe('a start right after a Map change runs the changed definition on a real Agent: CSV → SQLite', () => {
  let sut: ServiceUnderTest;
  let agent: Awaited<ReturnType<typeof runningAgent>>;
  let folder: string;
  const O = (): string => `/v1/orgs/${sut.orgId}`;

  const mapOf = (n: number, csvId: string, dbId: string, table: string) => ({
    version: '3.0',
    name: `Copy few to ${table}`,
    batchSize: 100,
    blocks: [
      { blockId: B(n, 1), name: 'Q', blockType: 'Query', action: 'Query', connectionId: csvId, entity: 'few' },
      { blockId: B(n, 2), name: 'Put', blockType: 'Create', action: 'Create', connectionId: dbId, entity: table, fieldMappings: [{ targetField: 'id', targetFormula: 'Q.id' }, { targetField: 'name', targetFormula: 'UPPER(Q.name)' }] },
    ],
  });

  /** A Solution with its own Connections (their metadata not loaded yet) and a SQLite file with tables a, b, c; one Map per table in `tables`. */
  const solutionWith = async (name: string, tables: string[]) => {
    const file = path.join(sut.dataDir, `${name}.db`);
    const db = new Database(file);
    for (const t of ['a', 'b', 'c']) db.exec(`CREATE TABLE ${t} (id INTEGER PRIMARY KEY, name TEXT NOT NULL)`);
    db.close();
    const csvId = await createConnection(sut, `${name} files`, CSV, { folder });
    const dbId = await createConnection(sut, `${name} target`, SQLITE, { file });
    const sol = await sut.request<{ id: string }>('POST', `${O()}/solutions`, { body: { name, solutionType: 'Integration', agentId: agent.agentId } });
    expect(sol.status).toBe(201);
    const S = `${O()}/solutions/${sol.body.id}`;
    const mapIds: number[] = [];
    for (const [i, t] of tables.entries()) {
      const res = await sut.request<{ id: number }>('POST', `${S}/maps/advanced`, { body: mapOf(i + 1, csvId, dbId, t) });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      mapIds.push(res.body.id);
    }
    const counts = (): Record<string, number> => {
      const t = new Database(file, { readonly: true });
      try {
        return Object.fromEntries(['a', 'b', 'c'].map((x) => [x, (t.prepare(`SELECT count(*) AS n FROM ${x}`).get() as { n: number }).n]));
      } finally {
        t.close();
      }
    };
    const clear = (): void => {
      const t = new Database(file);
      try {
        for (const x of ['a', 'b', 'c']) t.exec(`DELETE FROM ${x}`);
      } finally {
        t.close();
      }
    };
    return { solutionId: sol.body.id, S, csvId, dbId, mapIds, counts, clear };
  };

  const start = async (S: string): Promise<string> => {
    const res = await sut.request<{ runId: string; started: boolean }>('POST', `${S}/start`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.started).toBe(true);
    return res.body.runId;
  };

  /** The Maps the run ran, by its History statistics, once it ended successfully. */
  const mapsRun = async (solutionId: string, S: string, runId: string): Promise<Array<{ mapId: number | null; mapName: string; processed: number }>> => {
    const run = await finished(sut, solutionId, runId);
    expect(run, JSON.stringify(run)).toMatchObject({ result: 'CompletedSuccessfully', recordsFailed: 0 });
    const stats = await sut.request<{ mapStatistics: Array<{ mapId: number | null; mapName: string; recordsProcessed: number }> }>('GET', `${S}/history/${run.id}/statistics`);
    expect(stats.status, JSON.stringify(stats.body)).toBe(200);
    return stats.body.mapStatistics.map((m) => ({ mapId: m.mapId, mapName: m.mapName, processed: m.recordsProcessed }));
  };

  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    folder = path.join(sut.dataDir, 'csv');
    fs.mkdirSync(folder);
    fs.writeFileSync(path.join(folder, 'few.csv'), ['id,name', ...Array.from({ length: 7 }, (_, i) => `${i + 1},name${i + 1}`)].join('\n') + '\n');
    fs.writeFileSync(path.join(folder, 'schema.json'), JSON.stringify({ entities: { 'few.csv': { fields: [{ name: 'id', type: 'integer' }, { name: 'name', type: 'string' }] } } }));
    agent = await runningAgent(sut);
  }, 180_000);

  afterAll(async () => {
    killAll();
    await sut?.dispose();
  });

  it('a Map deleted just before a start does not run: the start prepares the Solution without it', { timeout: 240_000 }, async () => {
    const sol = await solutionWith('Deleted map', ['a', 'b', 'c']);
    const [m1, m2, m3] = sol.mapIds as [number, number, number];

    // A prepare runs (it read the three Maps); the first Map is deleted and the Solution started meanwhile.
    const job = await sut.request('POST', `${sol.S}/prepare`);
    expect(job.status, JSON.stringify(job.body)).toBe(200);
    expect((await sut.request('DELETE', `${sol.S}/maps/${m1}`)).status).toBe(204);
    const first = await mapsRun(sol.solutionId, sol.S, await start(sol.S));
    expect(first.map((m) => [m.mapId, m.processed])).toEqual([
      [m2, 7],
      [m3, 7],
    ]);
    expect(sol.counts()).toEqual({ a: 0, b: 7, c: 7 });

    // After a run: a Map deleted and the Solution started at once.
    sol.clear();
    expect((await sut.request('DELETE', `${sol.S}/maps/${m2}`)).status).toBe(204);
    const second = await mapsRun(sol.solutionId, sol.S, await start(sol.S));
    expect(second.map((m) => [m.mapId, m.processed])).toEqual([[m3, 7]]);
    expect(sol.counts()).toEqual({ a: 0, b: 0, c: 7 });
  });

  it('a Map saved just before a start runs as saved: the start prepares the saved model', { timeout: 240_000 }, async () => {
    const sol = await solutionWith('Saved map', ['a', 'b']);
    const [m1, m2] = sol.mapIds as [number, number];
    const save = async (table: string): Promise<void> => {
      const res = await sut.request('PUT', `${sol.S}/maps/advanced/${m1}`, { body: mapOf(1, sol.csvId, sol.dbId, table) });
      expect(res.status, JSON.stringify(res.body)).toBe(200);
    };

    // A prepare runs (it read the first Map writing into a); the Map is saved to write into c and the Solution started meanwhile.
    const job = await sut.request('POST', `${sol.S}/prepare`);
    expect(job.status, JSON.stringify(job.body)).toBe(200);
    await save('c');
    const first = await mapsRun(sol.solutionId, sol.S, await start(sol.S));
    expect(first.map((m) => [m.mapId, m.mapName])).toEqual([
      [m1, 'Copy few to c'],
      [m2, 'Copy few to b'],
    ]);
    expect(sol.counts()).toEqual({ a: 0, b: 7, c: 7 });

    // After a run: the Map saved back to write into a and the Solution started at once.
    sol.clear();
    await save('a');
    const second = await mapsRun(sol.solutionId, sol.S, await start(sol.S));
    expect(second.map((m) => [m.mapId, m.mapName])).toEqual([
      [m1, 'Copy few to a'],
      [m2, 'Copy few to b'],
    ]);
    expect(sol.counts()).toEqual({ a: 7, b: 7, c: 0 });
  });
});
