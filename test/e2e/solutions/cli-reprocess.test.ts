/**
 * `ferry solutions reprocess` on a real Agent process: a run whose target refuses two records (a
 * Map formula gives them no name, and the target's name is NOT NULL), the Map fixed and the
 * Solution prepared again with the CLI, then one record reprocessed by its error's ID, the other
 * by the default (every record left), each arriving in the target once; a third reprocess has
 * nothing left to do.
 */
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry } from '../../helpers/cli.js';
import type { ServiceUnderTest } from '../agent/harness.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  SQLITE,
  sqliteTarget,
  startWithAgent,
  stopAll,
  type Execution,
} from './harness.js';

interface ReprocessedRun extends Execution {
  reprocessRecordsRemaining: number;
}

interface ReprocessAnswer {
  historyId: number;
  runId: string;
  started: boolean;
  records: number;
}

const PEOPLE = 'id,name\n1,ann\n2,bob\n3,cy\n4,dee\n5,eve\n6,fay\n';

describe('ferry solutions reprocess on a real Agent: CSV → SQLite', () => {
  let sut: ServiceUnderTest;
  let file: string;
  let S: string;
  let mapId: number;
  let csvId: string;
  let dbId: string;
  const strictMap = (name: string) =>
    copyMap({ n: 1, csvId, entity: 'people', targetId: dbId, table: 'people', fields: { name } });
  const rows = (): Array<[number, string]> => {
    const db = new Database(file, { readonly: true });
    try {
      return (db.prepare('SELECT id, name FROM people ORDER BY id').all() as Array<{ id: number; name: string }>).map(
        (r) => [r.id, r.name],
      );
    } finally {
      db.close();
    }
  };

  beforeAll(async () => {
    const bed = await startWithAgent({ csv: { people: PEOPLE } });
    sut = bed.sut;
    file = sqliteTarget(path.join(sut.dataDir, 'target.db'), ['people'], { primaryKey: true }).file;
    csvId = await createConnection(sut, 'Files', CSV, { folder: bed.folder });
    dbId = await createConnection(sut, 'Target', SQLITE, { file });
    // name NOT NULL refuses the records whose formula answers null: ids 3 and 6.
    const sol = await createSolution(
      sut,
      bed.agent.agentId,
      'Strict people',
      [strictMap('IF(MOD(Q.id, 3) = 0, NULL, Q.name)')],
      { prepare: true },
    );
    S = sol.S;
    [mapId] = sol.mapIds as [number];
  }, 180_000);

  afterAll(() => stopAll(sut));

  it(
    'reprocesses the refused records after the Map is fixed: one by its error, then the rest, each once',
    { timeout: 300_000 },
    async () => {
      const first = await ferry(sut, ['solutions', 'start', 'Strict people', '--watch', '--interval', '0.5']);
      expect(first.code, first.stdout + first.stderr).toBe(1);
      const failed = JSON.parse(first.stdout) as Execution;
      expect(failed).toMatchObject({ result: 'CompletedWithErrors', recordsProcessed: 6, recordsFailed: 2 });
      expect(rows().map(([id]) => id)).toEqual([1, 2, 4, 5]);
      const listed = JSON.parse((await ferry(sut, ['solutions', 'errors', 'Strict people'])).stdout) as {
        errors: Array<{ id: string; sourceRow: number }>;
      };
      expect(listed.errors.map((e) => e.sourceRow)).toEqual([3, 6]);

      // The cause fixed: the Map saved with the source's name, and the Solution prepared again.
      const saved = await sut.request('PUT', `${S}/maps/advanced/${mapId}`, { body: strictMap('Q.name') });
      expect(saved.status, JSON.stringify(saved.body)).toBe(200);
      const prepared = await ferry(sut, ['solutions', 'prepare', 'Strict people']);
      expect(prepared.code, prepared.stderr).toBe(0);

      // One record, named by its error's ID.
      const one = await ferry(sut, [
        'solutions',
        'reprocess',
        'Strict people',
        '--run',
        String(failed.id),
        '--error',
        listed.errors[0]?.id ?? '',
      ]);
      expect(one.code, one.stderr).toBe(0);
      const started = JSON.parse(one.stdout) as ReprocessAnswer;
      expect(started).toMatchObject({ historyId: failed.id, started: true, records: 1 });
      const watched = await ferry(sut, [
        'solutions',
        'watch',
        'Strict people',
        '--run',
        started.runId,
        '--interval',
        '0.5',
      ]);
      expect(watched.code, watched.stderr).toBe(0);
      expect(JSON.parse(watched.stdout)).toMatchObject({
        isReprocessJob: true,
        result: 'CompletedSuccessfully',
        recordsProcessed: 1,
        recordsFailed: 0,
      });
      expect(rows()).toEqual([
        [1, 'ann'],
        [2, 'bob'],
        [3, 'cy'],
        [4, 'dee'],
        [5, 'eve'],
      ]);

      // The rest of that run (its latest is now the reprocess run, so --run names it), watched to the end.
      const rest = await ferry(sut, [
        'solutions',
        'reprocess',
        'Strict people',
        '--run',
        failed.processExecutionId,
        '--watch',
        '--interval',
        '0.5',
      ]);
      expect(rest.code, rest.stderr).toBe(0);
      expect(rest.stderr).toContain(`Reprocessing 1 failed record of run ${failed.id} of "Strict people" as run`);
      expect(JSON.parse(rest.stdout)).toMatchObject({
        isReprocessJob: true,
        result: 'CompletedSuccessfully',
        recordsProcessed: 1,
        recordsFailed: 0,
      });
      expect(rows()).toEqual([
        [1, 'ann'],
        [2, 'bob'],
        [3, 'cy'],
        [4, 'dee'],
        [5, 'eve'],
        [6, 'fay'],
      ]);
      const after = (await sut.request<ReprocessedRun>('GET', `${S}/history/${failed.id}`)).body;
      expect(after.reprocessRecordsRemaining).toBe(0);

      // Nothing is left to reprocess: said, exit 1, and the target is unchanged.
      const again = await ferry(sut, ['solutions', 'reprocess', 'Strict people', '--run', String(failed.id)]);
      expect(again.code).toBe(1);
      expect(JSON.parse(again.stdout)).toMatchObject({ started: false, records: 0 });
      expect(again.stderr).toMatch(
        new RegExp(`^ferry: nothing reprocessed for run ${failed.id} of "Strict people": No record`),
      );
      const spent = await ferry(sut, [
        'solutions',
        'reprocess',
        'Strict people',
        '--run',
        String(failed.id),
        '--error',
        listed.errors[1]?.id ?? '',
      ]);
      expect(spent.code).toBe(1);
      expect(spent.stderr).toContain('cannot be reprocessed');
      expect((await ferry(sut, ['solutions', 'reprocess', 'Strict people', '--marked', '--error', 'x'])).code).toBe(2);
      expect(rows()).toHaveLength(6);
    },
  );
});
