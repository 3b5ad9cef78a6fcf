/**
 * What a run killed mid-way is reported with, on the real csv and sqlite plugins and a real
 * Solution store file: at a moment of an IS run (two Maps) and of an RS run (two entities), the
 * Agent's data folder is copied as a kill -9 would leave it; a new store and runner on the copy
 * recover the run, and their end must count exactly the records the target held at that moment,
 * with the statistics of each Map or entity and the time of the last counted batch.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { describe, expect, it } from 'vitest';
import { WorkRegistry } from '../../../src/agent/work.js';
import type { ReportBody } from '../../../src/protocol/channel.js';
import type { PreparedSolution } from '../../../src/protocol/solutions.js';
import { SolutionRunner } from '../../../src/solutions/runner.js';
import { SolutionStore } from '../../../src/solutions/solution-store.js';
import {
  NO_CAPTURE,
  peopleMap,
  peopleSolution,
  rowCount,
  SQLITE_CONNECTOR,
  sqliteTarget,
  stamp,
  usePluginHost,
  writePeople,
} from '../../helpers/people-solution.js';

const log = pino({ level: 'silent' });
type Finished = Extract<ReportBody, { kind: 'runFinished' }>;

describe('the end recovered for a run killed mid-way counts what its target held', () => {
  const plugins = usePluginHost('killed-counts');

  const rows = (file: string, tables: readonly string[]): number => tables.reduce((n, t) => n + rowCount(file, t), 0);

  /**
   * Runs the Solution to its end on an Agent data folder; at the first progress report for which
   * `when` holds, copies the folder's Solution store as a kill at that instant would leave it and
   * counts the target's rows. Then recovers the run from the copy, as the next process would.
   */
  async function killedAt(
    solution: PreparedSolution,
    when: (processed: number) => boolean,
    target: { file: string; tables: readonly string[] },
  ) {
    const host = plugins.host();
    const tmp = plugins.tmp();
    const dataDir = fs.mkdtempSync(path.join(tmp, 'agent-'));
    const copy = fs.mkdtempSync(path.join(tmp, 'killed-'));
    const store = new SolutionStore(path.join(dataDir, 'solutions.db'), 'agent-secret');
    store.put(solution);
    let atKill: { rows: number; processed: number; at: number } | undefined;
    const runner = new SolutionRunner({
      store,
      host: () => Promise.resolve(host),
      work: new WorkRegistry(),
      log,
      dataDir,
      runsOn: 'local',
      progressMs: 0,
      report: (body) => {
        if (body.kind !== 'runProgress' || atKill || !when(body.processed)) return;
        // Nothing else runs while this callback does: the files are what a kill now would leave.
        for (const f of ['solutions.db', 'solutions.db-wal']) {
          if (fs.existsSync(path.join(dataDir, f))) fs.copyFileSync(path.join(dataDir, f), path.join(copy, f));
        }
        atKill = { rows: rows(target.file, target.tables), processed: body.processed, at: Date.now() };
      },
    });
    const runId = crypto.randomUUID();
    expect(runner.start(solution.solutionId, runId, 'start').started).toBe(true);
    await runner.idle();
    runner.close();
    store.close();
    expect(atKill, 'the run reached the moment of the kill').toBeDefined();

    const reports: ReportBody[] = [];
    const next = new SolutionStore(path.join(copy, 'solutions.db'), 'agent-secret');
    const recovered = new SolutionRunner({
      store: next,
      host: () => Promise.resolve(host),
      work: new WorkRegistry(),
      log,
      dataDir: copy,
      runsOn: 'local',
      report: (b) => void reports.push(b),
    });
    expect(recovered.recover()).toBe(1);
    next.close();
    const end = reports[0] as Finished;
    expect(end).toMatchObject({ kind: 'runFinished', runId, result: 'FatalError' });
    return { end, atKill: atKill as { rows: number; processed: number; at: number } };
  }

  it("an IS run killed in its second Map: both Maps' records, the first Map's own statistics, the second's so far", async () => {
    const PEOPLE = 5_000;
    const dir = fs.mkdtempSync(path.join(plugins.tmp(), 'is-'));
    writePeople(dir, PEOPLE);
    const targetFile = path.join(dir, 'target.db');
    sqliteTarget(
      targetFile,
      'CREATE TABLE first_copy (id INTEGER PRIMARY KEY, name TEXT); CREATE TABLE second_copy (id INTEGER PRIMARY KEY, name TEXT);',
    );
    const solution = peopleSolution(
      dir,
      targetFile,
      [peopleMap(1, 'first_copy'), peopleMap(2, 'second_copy')],
      'Two copies',
    );

    const { end, atKill } = await killedAt(solution, (n) => n >= PEOPLE + 1_500, {
      file: targetFile,
      tables: ['first_copy', 'second_copy'],
    });
    expect(atKill.rows).toBeGreaterThan(PEOPLE);
    expect(atKill.rows).toBeLessThan(2 * PEOPLE);
    expect(end.processed).toBe(atKill.rows);
    expect(end.failed).toBe(0);
    expect(Date.parse(end.at)).toBeLessThanOrEqual(atKill.at);
    expect(Date.parse(end.at)).toBeGreaterThanOrEqual(Date.parse(end.startedAt));
    expect(end.statistics.map((s) => ({ mapId: s.mapId, entity: s.entity, processed: s.processed }))).toEqual([
      { mapId: 1, entity: 'people', processed: PEOPLE },
      { mapId: 2, entity: 'people', processed: atKill.rows - PEOPLE },
    ]);
    // The finished Map's own statistics, Blocks included; the one in progress has its counts and times so far.
    expect(end.statistics[0]?.blocks.map((b) => b.name)).toEqual(['Q', 'Put']);
    expect(end.statistics[1]).toMatchObject({ blocks: [] });
    expect(end.statistics[1]?.totalMs).toBeGreaterThan(0);
  });

  it('an RS run killed in its second entity: the first entity whole, the second so far', async () => {
    const ORDERS = 30_000;
    const NOTES = 25_000;
    const dir = fs.mkdtempSync(path.join(plugins.tmp(), 'rs-'));
    const sourceFile = path.join(dir, 'source.db');
    const src = new Database(sourceFile);
    src.exec(
      'CREATE TABLE orders (id INTEGER PRIMARY KEY, name TEXT, updated_at DATETIME NOT NULL); CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT, updated_at DATETIME NOT NULL);',
    );
    src.transaction(() => {
      const o = src.prepare('INSERT INTO orders VALUES (?, ?, ?)');
      const n = src.prepare('INSERT INTO notes VALUES (?, ?, ?)');
      for (let i = 1; i <= ORDERS; i++) o.run(i, `order ${i}`, stamp(i % 700));
      for (let i = 1; i <= NOTES; i++) n.run(i, `note ${i}`, stamp(i % 300));
    })();
    src.close();
    const targetFile = path.join(dir, 'target.db');
    new Database(targetFile).close();
    const solution: PreparedSolution = {
      solutionId: crypto.randomUUID(),
      orgId: 1,
      name: 'Copy',
      solutionType: 'Replication',
      version: 'v1',
      isDisabled: false,
      schedule: null,
      connections: [
        { connectionId: 'src', connectorId: SQLITE_CONNECTOR, name: 'Source', properties: { file: sourceFile } },
        { connectionId: 'tgt', connectorId: SQLITE_CONNECTOR, name: 'Target', properties: { file: targetFile } },
      ],
      maps: [],
      replication: {
        sourceConnectionId: 'src',
        targetConnectionId: 'tgt',
        selectionType: 'Selected',
        entities: ['orders', 'notes'],
        checkForBulk: true,
      },
      capture: NO_CAPTURE,
      lookupTables: [],
    };

    const { end, atKill } = await killedAt(solution, (n) => n > ORDERS, {
      file: targetFile,
      tables: ['orders', 'notes'],
    });
    expect(atKill.rows).toBeGreaterThan(ORDERS);
    expect(atKill.rows).toBeLessThan(ORDERS + NOTES);
    expect(end.processed).toBe(atKill.rows);
    expect(Date.parse(end.at)).toBeLessThanOrEqual(atKill.at);
    expect(end.statistics.map((s) => ({ mapName: s.mapName, entity: s.entity, processed: s.processed }))).toEqual([
      { mapName: 'orders', entity: 'orders', processed: ORDERS },
      { mapName: 'notes', entity: 'notes', processed: atKill.rows - ORDERS },
    ]);
    expect(end.statistics[0]?.blocks.map((b) => b.blockId)).toEqual(['read', 'write']);
  });
});
