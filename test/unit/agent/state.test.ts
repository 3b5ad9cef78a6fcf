import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { agentDataLayout } from '../../../src/agent/state.js';
import { Outbox } from '../../../src/channel/outbox.js';
import { isFerryError } from '../../../src/errors/ferry-error.js';
import { FailedRecordStore } from '../../../src/failures/store.js';
import { ScheduleStore } from '../../../src/solutions/scheduler-store.js';
import { SolutionStore, SOLUTIONS_SCHEMA } from '../../../src/solutions/solution-store.js';
import { migrateState } from '../../../src/util/sqlite-schema.js';

const RUN = 'b0000000-0000-4000-8000-000000000001';
const SOLUTION = 'a0000000-0000-4000-8000-000000000001';

/**
 * The files of an Agent's data folder as the Agent wrote them before they carried a schema version
 * (user_version 0): the statements that Agent ran, verbatim, and a row in each.
 */
function writeUnversionedHome(data: string): void {
  const l = agentDataLayout(data);
  fs.mkdirSync(l.failures, { recursive: true });
  const run = (file: string, sql: string): void => {
    const db = new Database(file);
    db.exec(sql);
    db.close();
  };
  run(
    l.outbox,
    `
    CREATE TABLE IF NOT EXISTS outbox (seq INTEGER PRIMARY KEY AUTOINCREMENT, id TEXT NOT NULL UNIQUE, body TEXT NOT NULL, created TEXT NOT NULL);
    CREATE TABLE IF NOT EXISTS outbox_dead (seq INTEGER PRIMARY KEY, id TEXT NOT NULL, body TEXT NOT NULL, created TEXT NOT NULL, error TEXT NOT NULL, failed TEXT NOT NULL);
    INSERT INTO outbox (id, body, created) VALUES ('r-1', '{"kind":"status","status":"Running","at":"2024-05-01T10:00:00.000Z"}', '2024-05-01T10:00:00.000Z');`,
  );
  run(
    l.solutions,
    `
    CREATE TABLE IF NOT EXISTS solutions (solution_id TEXT PRIMARY KEY, version TEXT NOT NULL, body BLOB NOT NULL);
    CREATE TABLE IF NOT EXISTS open_runs (run_id TEXT PRIMARY KEY, solution_id TEXT NOT NULL, trigger TEXT NOT NULL, started_at TEXT NOT NULL, due_at TEXT);
    CREATE TABLE IF NOT EXISTS open_run_committed (run_id TEXT NOT NULL, seq INTEGER NOT NULL, at TEXT NOT NULL, stats TEXT NOT NULL, PRIMARY KEY (run_id, seq));
    INSERT INTO open_runs VALUES ('${RUN}', '${SOLUTION}', 'start', '2024-05-01T10:00:00.000Z', NULL);`,
  );
  run(
    l.schedules,
    `
    CREATE TABLE IF NOT EXISTS schedules (solution_id TEXT PRIMARY KEY, version TEXT NOT NULL, rule TEXT NOT NULL, disabled INTEGER NOT NULL,
      handled_until TEXT NOT NULL, fired_due TEXT, run_id TEXT, fired_at TEXT);
    INSERT INTO schedules (solution_id, version, rule, disabled, handled_until) VALUES ('${SOLUTION}', 'v1', '{}', 0, '2024-05-01T10:00:00.000Z');`,
  );
  run(
    path.join(l.failures, 'failed-records.db'),
    `
    CREATE TABLE IF NOT EXISTS failed_records (
      id TEXT PRIMARY KEY, execution_id TEXT NOT NULL, map_id INTEGER, map_name TEXT NOT NULL, entity TEXT NOT NULL,
      block_id TEXT NOT NULL, block_name TEXT NOT NULL, code TEXT NOT NULL, error_message TEXT NOT NULL, error_detail TEXT NOT NULL,
      source TEXT NOT NULL, can_reprocess INTEGER NOT NULL DEFAULT 1, marked INTEGER NOT NULL DEFAULT 0, created_at TEXT NOT NULL);
    CREATE INDEX IF NOT EXISTS failed_records_execution ON failed_records(execution_id);
    INSERT INTO failed_records (id, execution_id, map_id, map_name, entity, block_id, block_name, code, error_message, error_detail, source, created_at)
      VALUES ('f-1', '${RUN}', 7, 'Map', 'people', 'b1', 'Put', 'RUN_WRITE_FAILED', 'refused', '{}', '{"id":1}', '2024-05-01T10:00:01.000Z');`,
  );
}

const versionOf = (file: string): number => {
  const db = new Database(file, { readonly: true });
  try {
    return Number(db.pragma('user_version', { simple: true }));
  } finally {
    db.close();
  }
};

describe('the Agent state: one layout, each file versioned', () => {
  let data: string;
  beforeEach(() => {
    data = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-state-'));
  });
  afterEach(() => fs.rmSync(data, { recursive: true, force: true }));

  it('opens a data folder written before versions, keeping every row, and brings each file to its latest version', () => {
    writeUnversionedHome(data);
    const l = agentDataLayout(data);
    const outbox = new Outbox(l.outbox);
    const solutions = new SolutionStore(l.solutions, 'agent-secret');
    const schedules = new ScheduleStore(l.schedules);
    const failures = new FailedRecordStore(l.failures, { thread: false });
    try {
      expect(outbox.size).toBe(1);
      expect(solutions.openRuns().map((r) => r.runId)).toEqual([RUN]);
      // The tables of version 2 are there and work.
      solutions.closeRun(RUN, true);
      expect(solutions.claimCorrection(RUN, 'map:7', 10)).toBe(true);
      expect(
        schedules
          .reconcile(
            [{ solutionId: SOLUTION, version: 'v1', rule: '{}', disabled: false }],
            Date.parse('2024-06-01T00:00:00Z'),
          )
          .get(SOLUTION),
      ).toBe(Date.parse('2024-05-01T10:00:00.000Z'));
      expect(failures.list(RUN).map((r) => r.id)).toEqual(['f-1']);
    } finally {
      outbox.close();
      solutions.close();
      schedules.close();
      failures.close();
    }
    expect(versionOf(l.outbox)).toBe(1);
    expect(versionOf(l.solutions)).toBe(SOLUTIONS_SCHEMA.migrations.length);
    expect(versionOf(l.schedules)).toBe(1);
    expect(versionOf(path.join(l.failures, 'failed-records.db'))).toBe(1);
    // Opened again: nothing to do, nothing lost.
    const again = new SolutionStore(l.solutions, 'agent-secret');
    expect(again.claimCorrection(RUN, 'map:7', 10)).toBe(false);
    again.close();
  });

  it('refuses a file a newer Agent wrote, naming it, and changes nothing there', () => {
    const l = agentDataLayout(data);
    fs.mkdirSync(l.failures, { recursive: true });
    const stores: Array<{ file: string; open: () => { close(): void } }> = [
      { file: l.outbox, open: () => new Outbox(l.outbox) },
      { file: l.solutions, open: () => new SolutionStore(l.solutions, 'agent-secret') },
      { file: l.schedules, open: () => new ScheduleStore(l.schedules) },
      {
        file: path.join(l.failures, 'failed-records.db'),
        open: () => new FailedRecordStore(l.failures, { thread: false }),
      },
    ];
    for (const s of stores) {
      const db = new Database(s.file);
      db.exec('CREATE TABLE from_the_future (x)');
      db.pragma('user_version = 99');
      db.close();
      let thrown: unknown;
      try {
        s.open().close();
      } catch (err) {
        thrown = err;
      }
      expect(isFerryError(thrown) && thrown.code, s.file).toBe('AGT_STATE_NEWER');
      expect((thrown as Error).message).toContain(s.file);
      expect((thrown as Error).message).toMatch(/newer Ferry Agent \(schema version 99; this Agent knows up to \d\)/);
      expect(versionOf(s.file)).toBe(99);
      const check = new Database(s.file, { readonly: true });
      expect(check.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all()).toEqual([
        { name: 'from_the_future' },
      ]);
      check.close();
    }
  });

  it('runs each step in one transaction with its version: a step that fails leaves the file at the version before it', () => {
    const file = path.join(data, 'x.db');
    const db = new Database(file);
    const schema = { name: 'x', migrations: ['CREATE TABLE a (x)', 'CREATE TABLE b (x); CREATE TABLE a (y)'] };
    expect(() => migrateState(db, schema, file)).toThrow(/already exists/);
    expect(Number(db.pragma('user_version', { simple: true }))).toBe(1);
    expect(db.prepare("SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name").all()).toEqual([
      { name: 'a' },
    ]);
    db.close();
  });
});
