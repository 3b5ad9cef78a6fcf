import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceUnderTest } from '../agent/harness.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  PEOPLE_CSV,
  prepared,
  runToEnd,
  SQLITE,
  sqliteTarget,
  startWithAgent,
  stopAll,
  type SqliteTarget,
} from './harness.js';

/**
 * Enable state on a real Agent process: a Map disabled after prepare is skipped by the next run of
 * its Solution without a new prepare (the Agent's copy follows), and runs again once enabled.
 */
describe('a disabled Map on a real Agent: CSV → SQLite', () => {
  let sut: ServiceUnderTest;
  let target: SqliteTarget;
  let S: string;
  let solutionId: string;
  let mapIds: number[];

  beforeAll(async () => {
    const bed = await startWithAgent({ csv: { people: PEOPLE_CSV } });
    sut = bed.sut;
    target = sqliteTarget(path.join(sut.dataDir, 'target.db'), ['a', 'b']);
    const csvId = await createConnection(sut, 'Files', CSV, { folder: bed.folder });
    const dbId = await createConnection(sut, 'Target', SQLITE, { file: target.file });
    const maps = ['a', 'b'].map((table, i) => copyMap({ n: i + 1, csvId, entity: 'people', targetId: dbId, table }));
    ({ id: solutionId, S, mapIds } = await createSolution(sut, bed.agent.agentId, 'Two maps', maps));
  }, 180_000);

  afterAll(() => stopAll(sut));

  it(
    'skips a Map disabled after prepare, and runs it again once enabled, without a new prepare',
    { timeout: 240_000 },
    async () => {
      const job = await prepared(sut, solutionId);
      expect(job, job.message).toMatchObject({ hasError: false, mapErrorModels: [] });
      const [first, second] = mapIds as [number, number];

      const off = await sut.request<{ enabled: boolean }>('PUT', `${S}/maps/${second}/enable?enableState=false`);
      expect(off.status, JSON.stringify(off.body)).toBe(200);
      expect(off.body.enabled).toBe(false);
      expect((await sut.request<{ status: string }>('GET', S)).body.status).not.toBe('Incomplete');

      const run1 = await runToEnd(sut, solutionId);
      expect(run1, JSON.stringify(run1)).toMatchObject({
        result: 'CompletedSuccessfully',
        recordsProcessed: 3,
        recordsFailed: 0,
      });
      expect([target.count('a'), target.count('b')]).toEqual([3, 0]);

      expect((await sut.request('PUT', `${S}/maps/${second}/enable`)).status).toBe(200);
      expect((await sut.request('PUT', `${S}/maps/${first}/enable?enableState=false`)).status).toBe(200);
      const run2 = await runToEnd(sut, solutionId);
      expect(run2, JSON.stringify(run2)).toMatchObject({ result: 'CompletedSuccessfully', recordsProcessed: 3 });
      expect([target.count('a'), target.count('b')]).toEqual([3, 3]);
    },
  );
});
