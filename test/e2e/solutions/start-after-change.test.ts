import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceUnderTest } from '../agent/harness.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  finished,
  idNameCsv,
  SQLITE,
  sqliteTarget,
  startRun,
  startWithAgent,
  stopAll,
  type RunningAgent,
} from './harness.js';

/**
 * A start right after a change to a Solution's Maps (a Map deleted, a Map saved) runs the changed
 * definition on a real Agent process, also when a prepare of the Solution was already running
 * (it built the definition from before the change): the start prepares the changed one and the
 * Agent runs that. Each Solution has Connections of its own, so its first prepare loads their
 * metadata through the Agent and is still running when the change and the start arrive.
 */
describe('a start right after a Map change runs the changed definition on a real Agent: CSV → SQLite', () => {
  let sut: ServiceUnderTest;
  let agent: RunningAgent;
  let folder: string;

  const mapOf = (n: number, csvId: string, dbId: string, table: string) =>
    copyMap({ n, csvId, entity: 'few', targetId: dbId, table, batchSize: 100, fields: { name: 'UPPER(Q.name)' } });

  /** A Solution with its own Connections (their metadata not loaded yet) and a SQLite file with tables a, b, c; one Map per table in `tables`. */
  const solutionWith = async (name: string, tables: string[]) => {
    const target = sqliteTarget(path.join(sut.dataDir, `${name}.db`), ['a', 'b', 'c'], { primaryKey: true });
    const csvId = await createConnection(sut, `${name} files`, CSV, { folder });
    const dbId = await createConnection(sut, `${name} target`, SQLITE, { file: target.file });
    const sol = await createSolution(
      sut,
      agent.agentId,
      name,
      tables.map((t, i) => mapOf(i + 1, csvId, dbId, t)),
    );
    return {
      solutionId: sol.id,
      S: sol.S,
      csvId,
      dbId,
      mapIds: sol.mapIds,
      counts: target.counts,
      clear: target.clear,
    };
  };

  /** The Maps the run ran, by its History statistics, once it ended successfully. */
  const mapsRun = async (
    solutionId: string,
    S: string,
    runId: string,
  ): Promise<Array<{ mapId: number | null; mapName: string; processed: number }>> => {
    const run = await finished(sut, solutionId, runId);
    expect(run, JSON.stringify(run)).toMatchObject({ result: 'CompletedSuccessfully', recordsFailed: 0 });
    const stats = await sut.request<{
      mapStatistics: Array<{ mapId: number | null; mapName: string; recordsProcessed: number }>;
    }>('GET', `${S}/history/${run.id}/statistics`);
    expect(stats.status, JSON.stringify(stats.body)).toBe(200);
    return stats.body.mapStatistics.map((m) => ({ mapId: m.mapId, mapName: m.mapName, processed: m.recordsProcessed }));
  };

  beforeAll(async () => {
    ({ sut, agent, folder } = await startWithAgent({ csv: { few: idNameCsv(7) } }));
  }, 180_000);

  afterAll(() => stopAll(sut));

  it(
    'a Map deleted just before a start does not run: the start prepares the Solution without it',
    { timeout: 240_000 },
    async () => {
      const sol = await solutionWith('Deleted map', ['a', 'b', 'c']);
      const [m1, m2, m3] = sol.mapIds as [number, number, number];

      // A prepare runs (it read the three Maps); the first Map is deleted and the Solution started meanwhile.
      const job = await sut.request('POST', `${sol.S}/prepare`);
      expect(job.status, JSON.stringify(job.body)).toBe(200);
      expect((await sut.request('DELETE', `${sol.S}/maps/${m1}`)).status).toBe(204);
      const first = await mapsRun(sol.solutionId, sol.S, await startRun(sut, sol.solutionId));
      expect(first.map((m) => [m.mapId, m.processed])).toEqual([
        [m2, 7],
        [m3, 7],
      ]);
      expect(sol.counts()).toEqual({ a: 0, b: 7, c: 7 });

      // After a run: a Map deleted and the Solution started at once.
      sol.clear();
      expect((await sut.request('DELETE', `${sol.S}/maps/${m2}`)).status).toBe(204);
      const second = await mapsRun(sol.solutionId, sol.S, await startRun(sut, sol.solutionId));
      expect(second.map((m) => [m.mapId, m.processed])).toEqual([[m3, 7]]);
      expect(sol.counts()).toEqual({ a: 0, b: 0, c: 7 });
    },
  );

  it(
    'a Map saved just before a start runs as saved: the start prepares the saved model',
    { timeout: 240_000 },
    async () => {
      const sol = await solutionWith('Saved map', ['a', 'b']);
      const [m1, m2] = sol.mapIds as [number, number];
      const save = async (table: string): Promise<void> => {
        const res = await sut.request('PUT', `${sol.S}/maps/advanced/${m1}`, {
          body: mapOf(1, sol.csvId, sol.dbId, table),
        });
        expect(res.status, JSON.stringify(res.body)).toBe(200);
      };

      // A prepare runs (it read the first Map writing into a); the Map is saved to write into c and the Solution started meanwhile.
      const job = await sut.request('POST', `${sol.S}/prepare`);
      expect(job.status, JSON.stringify(job.body)).toBe(200);
      await save('c');
      const first = await mapsRun(sol.solutionId, sol.S, await startRun(sut, sol.solutionId));
      expect(first.map((m) => [m.mapId, m.mapName])).toEqual([
        [m1, 'Copy few to c'],
        [m2, 'Copy few to b'],
      ]);
      expect(sol.counts()).toEqual({ a: 0, b: 7, c: 7 });

      // After a run: the Map saved back to write into a and the Solution started at once.
      sol.clear();
      await save('a');
      const second = await mapsRun(sol.solutionId, sol.S, await startRun(sut, sol.solutionId));
      expect(second.map((m) => [m.mapId, m.mapName])).toEqual([
        [m1, 'Copy few to a'],
        [m2, 'Copy few to b'],
      ]);
      expect(sol.counts()).toEqual({ a: 7, b: 7, c: 0 });
    },
  );
});
