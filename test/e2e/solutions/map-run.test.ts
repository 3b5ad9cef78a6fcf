import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until, type ServiceUnderTest } from '../agent/harness.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  finished,
  idNameCsv,
  SQLITE,
  sqliteTarget,
  startWithAgent,
  stopAll,
  type Execution,
  type SqliteTarget,
} from './harness.js';

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

/**
 * Single-Map runs through the API on a real Agent process: one Map of a Solution copies a CSV file
 * into SQLite, recorded in History as a run of its Solution with that Map's statistics; the other
 * Maps do not run; a run of a Map (or a start of the Solution) while another runs is ignored.
 */
describe('single-Map runs on a real Agent: CSV → SQLite', () => {
  let sut: ServiceUnderTest;
  let target: SqliteTarget;
  let S: string;
  let solutionId: string;
  let mapIds: number[];

  const run = async (mapId: number): Promise<MapRun> => {
    const res = await sut.request<MapRun>('POST', `${S}/maps/${mapId}/run`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    return res.body;
  };
  const ended = (mapId: number, commandId: string): Promise<MapRun> =>
    until(
      'the single-Map run',
      async () => {
        const res = await sut.request<MapRun>('GET', `${S}/maps/${mapId}/run/${commandId}`);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        return res.body.status === 'finished' || res.body.status === 'failed' ? res.body : undefined;
      },
      180_000,
    );

  beforeAll(async () => {
    const bed = await startWithAgent({ csv: { few: idNameCsv(7), many: idNameCsv(ROWS, 'n') } });
    sut = bed.sut;
    target = sqliteTarget(path.join(sut.dataDir, 'target.db'), ['a', 'b', 'c'], { primaryKey: true });
    const csvId = await createConnection(sut, 'Files', CSV, { folder: bed.folder });
    const dbId = await createConnection(sut, 'Target', SQLITE, { file: target.file });
    const copy = (n: number, entity: string, table: string, batchSize: number) =>
      copyMap({ n, csvId, entity, targetId: dbId, table, batchSize, fields: { name: 'UPPER(Q.name)' } });
    ({
      id: solutionId,
      S,
      mapIds,
    } = await createSolution(sut, bed.agent.agentId, 'Three maps', [
      copy(1, 'few', 'a', 100),
      copy(2, 'few', 'b', 100),
      copy(3, 'many', 'c', 20),
    ]));
  }, 180_000);

  afterAll(() => stopAll(sut));

  it(
    'runs one Map of an unprepared Solution: prepared first, then only that Map runs, recorded in History with its statistics',
    { timeout: 240_000 },
    async () => {
      const [first] = mapIds as [number];
      const started = await run(first);
      expect(started).toMatchObject({ ignored: false, mapId: first });
      expect(started.prepareId).not.toBeNull();
      expect(['queued', 'running']).toContain(started.status);
      const done = await ended(first, started.commandId);
      expect(done, JSON.stringify(done)).toMatchObject({
        status: 'finished',
        result: 'CompletedSuccessfully',
        recordsProcessed: 7,
        recordsFailed: 0,
        runId: started.runId,
      });
      expect(done.mapStatistics).toMatchObject({ mapId: first, processed: 7 });
      expect(target.count('a')).toBe(7);
      expect(target.count('b')).toBe(0);
      expect(target.count('c')).toBe(0);

      // The History execution is the Solution's, with this one Map's statistics.
      const execution = await finished(sut, solutionId, started.runId ?? '');
      expect(execution.id).toBe(done.executionId);
      const stats = await sut.request<{ mapStatistics: Array<{ mapId: number; recordsProcessed: number }> }>(
        'GET',
        `${S}/history/${execution.id}/statistics`,
      );
      expect(stats.body.mapStatistics).toEqual([expect.objectContaining({ mapId: first, recordsProcessed: 7 })]);
    },
  );

  it(
    'ignores a run of a Map, and a start of the Solution, while another Map of it runs',
    { timeout: 240_000 },
    async () => {
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
      expect(target.count('c')).toBe(ROWS);
      expect(target.count('b')).toBe(0);

      // Once it ended, the Map runs.
      const now = await run(second);
      expect(now.ignored).toBe(false);
      expect(await ended(second, now.commandId)).toMatchObject({
        result: 'CompletedSuccessfully',
        recordsProcessed: 7,
      });
      expect(target.count('b')).toBe(7);
      // Map a again: its rows are already there, so each record is an error of a finished run.
      const again = await run(first);
      const failed = await ended(first, again.commandId);
      expect(failed).toMatchObject({ status: 'finished', result: 'CompletedWithErrors', recordsFailed: 7 });
      const history = await sut.request<Execution[]>('GET', `${S}/history?limit=100`);
      expect(
        history.body.filter((e) => [long.runId, now.runId, again.runId].includes(e.processExecutionId)),
      ).toHaveLength(3);
    },
  );

  it('answers 404 for an unknown Map or command, and 400 for a command ID that is not a GUID', async () => {
    const [first] = mapIds as [number];
    expect((await sut.request('POST', `${S}/maps/999999/run`)).status).toBe(404);
    expect((await sut.request('GET', `${S}/maps/${first}/run/3f2504e0-4f89-41d3-9a0c-0305e82c3301`)).status).toBe(404);
    expect((await sut.request('GET', `${S}/maps/${first}/run/nope`)).status).toBe(400);
  });
});
