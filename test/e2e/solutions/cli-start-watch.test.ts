/**
 * `ferry solutions start --watch` and `ferry solutions watch` on a real Agent process: a Solution
 * never prepared is prepared by the start, its run copies a CSV file into SQLite, and the command
 * ends with the run's summary and exit 0; a run with record errors ends with exit 1, and its errors
 * are listed by `ferry solutions errors`; `ferry solutions prepare` answers the errors per Map.
 */
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry } from '../../helpers/cli.js';
import type { ServiceUnderTest } from '../agent/harness.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  idNameCsv,
  SQLITE,
  sqliteTarget,
  startWithAgent,
  stopAll,
  type Execution,
  type SqliteTarget,
} from './harness.js';

describe('ferry solutions start --watch on a real Agent: CSV → SQLite', () => {
  let sut: ServiceUnderTest;
  let target: SqliteTarget;

  beforeAll(async () => {
    const bed = await startWithAgent({ csv: { people: idNameCsv(500) } });
    sut = bed.sut;
    target = sqliteTarget(path.join(sut.dataDir, 'target.db'), ['people', 'strict'], { primaryKey: true });
    const csvId = await createConnection(sut, 'Files', CSV, { folder: bed.folder });
    const dbId = await createConnection(sut, 'Target', SQLITE, { file: target.file });
    await createSolution(sut, bed.agent.agentId, 'People copy', [
      copyMap({ n: 1, csvId, entity: 'people', targetId: dbId, table: 'people' }),
    ]);
    // name NOT NULL refuses the records whose formula answers null: every tenth one.
    const strict = copyMap({
      n: 2,
      csvId,
      entity: 'people',
      targetId: dbId,
      table: 'strict',
      fields: { name: 'IF(MOD(Q.id, 10) = 0, NULL, Q.name)' },
    });
    await createSolution(sut, bed.agent.agentId, 'Strict copy', [strict]);
    await createSolution(sut, bed.agent.agentId, 'Broken copy', [
      copyMap({ n: 3, csvId, entity: 'nosuch', targetId: dbId, table: 'people' }),
    ]);
  }, 180_000);

  afterAll(() => stopAll(sut));

  it('prepares, runs and watches to the end: the summary as JSON, exit 0', { timeout: 240_000 }, async () => {
    const run = await ferry(sut, ['solutions', 'start', 'people copy', '--watch', '--interval', '0.5']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toMatch(/Preparing "People copy" first/);
    const summary = JSON.parse(run.stdout) as Execution;
    expect(summary).toMatchObject({ result: 'CompletedSuccessfully', recordsProcessed: 500, recordsFailed: 0 });
    expect(target.count('people')).toBe(500);
    const history = await ferry(sut, ['solutions', 'history', 'People copy']);
    expect((JSON.parse(history.stdout) as Execution[]).map((e) => e.processExecutionId)).toEqual([
      summary.processExecutionId,
    ]);
  });

  it(
    'prepares: exit 0 once prepared, exit 1 with the errors of each Map that does not validate',
    { timeout: 240_000 },
    async () => {
      const ok = await ferry(sut, ['solutions', 'prepare', 'Strict copy']);
      expect(ok.code, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({ isComplete: true, hasError: false });
      const broken = await ferry(sut, ['solutions', 'prepare', 'Broken copy']);
      expect(broken.code).toBe(1);
      expect(JSON.parse(broken.stdout)).toMatchObject({ isComplete: true, hasError: true });
      expect(broken.stderr).toMatch(/^ferry: the prepare of "Broken copy" failed\n {2}Map \d+: .*nosuch/);
    },
  );

  it('ends with exit 1 when the run has record errors, which errors then lists', { timeout: 240_000 }, async () => {
    const run = await ferry(sut, ['solutions', 'start', 'Strict copy', '--watch', '--interval', '0.5']);
    expect(run.code, run.stdout + run.stderr).toBe(1);
    const summary = JSON.parse(run.stdout) as Execution;
    expect(summary).toMatchObject({ result: 'CompletedWithErrors', recordsFailed: 50 });
    expect(run.stderr).toContain(`ferry solutions errors "Strict copy" --run ${summary.id}`);
    const errors = await ferry(sut, ['solutions', 'errors', 'Strict copy', '--limit', '5']);
    expect(errors.code, errors.stderr).toBe(0);
    const listed = JSON.parse(errors.stdout) as { total: number; errors: Array<{ sourceRow: number }> };
    expect(listed.total).toBe(50);
    expect(listed.errors.map((e) => e.sourceRow)).toEqual([10, 20, 30, 40, 50]);
    // Watching it again after its end: the summary at once, the same exit code.
    const again = await ferry(sut, ['solutions', 'watch', 'Strict copy']);
    expect(again.code).toBe(1);
    expect((JSON.parse(again.stdout) as Execution).id).toBe(summary.id);
  });
});
