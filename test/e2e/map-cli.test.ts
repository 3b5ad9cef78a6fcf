/**
 * `ferry map validate` and `ferry map run`, run as real processes on a golden fixture: CSV people →
 * SQLite contacts, with net change, a formula error and a local failed-record store; Lookup Tables
 * from a file; and a run killed with SIGKILL in the middle, then run again.
 */
import { execFile, spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const FIXTURE = path.join(ROOT, 'test/fixtures/maps/query-create');

const ferryArgs = (...args: string[]): string[] => ['--import', 'tsx', 'src/cli/main.ts', 'map', ...args];
const ferryEnv = { ...process.env, FERRY_LOG_LEVEL: 'silent' };

async function ferry(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, ferryArgs(...args), {
      cwd: ROOT,
      env: ferryEnv,
      maxBuffer: 64 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('ferry map validate | run', () => {
  let dir: string;
  let conns: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-map-cli-'));
    fs.cpSync(path.join(FIXTURE, 'input'), path.join(dir, 'src'), { recursive: true });
    const db = new Database(path.join(dir, 'target.db'));
    db.exec(fs.readFileSync(path.join(dir, 'src', 'target.sql'), 'utf8'));
    db.close();
    conns = path.join(dir, 'conns.json');
    fs.writeFileSync(
      conns,
      JSON.stringify({
        src: { connector: 'CSV', properties: { folder: path.join(dir, 'src') } },
        db: { connector: 'SQLite', properties: { file: path.join(dir, 'target.db') } },
      }),
    );
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('validates the Map against the Connections', async () => {
    const run = await ferry('validate', path.join(FIXTURE, 'map.json'), '--connections', conns);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/is valid/);
  });

  it('fails validation with the Block and exits non-zero when an entity is missing', async () => {
    const broken = JSON.parse(
      fs.readFileSync(path.join(FIXTURE, 'map.json'), 'utf8').replace('"contacts"', '"no_such_table"'),
    ) as unknown;
    const file = path.join(dir, 'broken.json');
    fs.writeFileSync(file, JSON.stringify(broken));
    const run = await ferry('validate', file, '--connections', conns);
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(/no_such_table/);
  });

  it('prints a formula position once and suggests near-miss entity and field names', async () => {
    const text = fs.readFileSync(path.join(FIXTURE, 'map.json'), 'utf8');
    const file = path.join(dir, 'near-miss.json');
    fs.writeFileSync(file, text.replace('"UPPER(Q.first)"', '"UPPER(Q.frist)"'));
    const run = await ferry('validate', file, '--connections', conns);
    expect(run.code).toBe(1);
    const line = run.stdout.split('\n').find((l) => l.includes('FML_UNKNOWN_FIELD')) ?? '';
    expect(line).toContain('did you mean Q.first?');
    expect(line.match(/\(line 1, column 7\)/g)).toHaveLength(1);

    fs.writeFileSync(file, text.replace('"contacts"', '"contact"'));
    const entity = await ferry('validate', file, '--connections', conns);
    expect(entity.stdout).toContain('has no entity contact (did you mean contacts?)');
  });

  it('runs the Map, prints the statistics as JSON, writes the good records and keeps the watermark', async () => {
    const state = path.join(dir, 'state.json');
    const run = await ferry(
      'run',
      path.join(FIXTURE, 'map.json'),
      '--connections',
      conns,
      '--state',
      state,
      '--failures',
      path.join(dir, 'failures'),
    );
    // Some records failed (a formula error): the statistics are printed and the exit code says so.
    expect(run.code).toBe(1);
    const stats = JSON.parse(run.stdout) as { processed: number; failed: number; lastRunDate: string };
    const expected = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'expected.json'), 'utf8')) as {
      stats: { processed: number; failed: number };
      lastRunDate: string;
      tables: { contacts: unknown[] };
    };
    expect({ processed: stats.processed, failed: stats.failed }).toEqual(expected.stats);
    const db = new Database(path.join(dir, 'target.db'), { readonly: true });
    expect(db.prepare('SELECT id, full_name, age_next FROM contacts ORDER BY id').all()).toEqual(
      expected.tables.contacts,
    );
    db.close();
    // the watermark, with the identity (primary key) of the record processed at exactly it
    expect(JSON.parse(fs.readFileSync(state, 'utf8'))).toEqual({
      lastRunDate: expected.lastRunDate,
      processedAtLastRunDate: ['k:[5]'],
    });
    expect(fs.existsSync(path.join(dir, 'failures'))).toBe(true);
    // a second run re-reads the record at the watermark and skips it: nothing to do, exit 0
    const again = await ferry(
      'run',
      path.join(FIXTURE, 'map.json'),
      '--connections',
      conns,
      '--state',
      state,
      '--failures',
      path.join(dir, 'failures'),
    );
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ processed: 0, failed: 0, lastRunDate: expected.lastRunDate });
  });

  describe('--lookup-tables', () => {
    const withLookup = (): string => {
      const model = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'map.json'), 'utf8')) as {
        blocks: Array<{ fieldMappings?: Array<{ targetField: string; targetFormula: string }> }>;
      };
      const create = model.blocks[1]?.fieldMappings ?? [];
      for (const m of create)
        if (m.targetField === 'full_name') m.targetFormula = 'LOOKUPTABLEVALUE2("Names", Q.first)';
      const file = path.join(dir, 'lookup-map.json');
      fs.writeFileSync(file, JSON.stringify(model));
      return file;
    };
    const freshTarget = (name: string): string => {
      const file = path.join(dir, name);
      const db = new Database(file);
      db.exec(fs.readFileSync(path.join(dir, 'src', 'target.sql'), 'utf8'));
      db.close();
      const c = path.join(dir, `${name}.conns.json`);
      fs.writeFileSync(
        c,
        JSON.stringify({
          src: { connector: 'CSV', properties: { folder: path.join(dir, 'src') } },
          db: { connector: 'SQLite', properties: { file } },
        }),
      );
      return c;
    };
    const rows = (name: string): unknown[] => {
      const db = new Database(path.join(dir, name), { readonly: true });
      try {
        return db.prepare('SELECT id, full_name FROM contacts ORDER BY id').all();
      } finally {
        db.close();
      }
    };

    it('runs the Map with the Lookup Tables of a JSON file', async () => {
      const tables = path.join(dir, 'tables.json');
      fs.writeFileSync(
        tables,
        JSON.stringify({
          Names: [
            { value1: 'ada', value2: 'Ada Lovelace' },
            { value1: 'alan', value2: 'Alan Turing' },
            ['kid', 'The Kid'],
          ],
          Unused: [],
        }),
      );
      const c = freshTarget('lookup.db');
      const run = await ferry('run', withLookup(), '--connections', c, '--lookup-tables', tables);
      // grace fails (her age is not a number), the others are looked up
      expect(run.code).toBe(1);
      expect(JSON.parse(run.stdout)).toMatchObject({ processed: 4, failed: 1 });
      expect(rows('lookup.db')).toEqual([
        { id: 2, full_name: 'Alan Turing' },
        { id: 3, full_name: 'The Kid' },
        { id: 5, full_name: 'Ada Lovelace' },
      ]);
    });

    it('refuses to run a Map that reads a Lookup Table the file does not hold, or without the file', async () => {
      const tables = path.join(dir, 'other-tables.json');
      fs.writeFileSync(tables, JSON.stringify({ States: [{ value1: 'California', value2: 'CA' }] }));
      const c = freshTarget('lookup-missing.db');
      const missing = await ferry('run', withLookup(), '--connections', c, '--lookup-tables', tables);
      expect(missing.code).toBe(1);
      expect(missing.stderr).toMatch(/Lookup Table\(s\) "Names"/);
      const none = await ferry('run', withLookup(), '--connections', c);
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/"Names", but no --lookup-tables file was given/);
      expect(rows('lookup-missing.db')).toEqual([]);
    });

    it('names the bad entry of a malformed file', async () => {
      const tables = path.join(dir, 'bad-tables.json');
      fs.writeFileSync(tables, JSON.stringify({ Names: [{ value1: 'ada', value2: 'Ada' }, { value1: 'alan' }] }));
      const run = await ferry(
        'run',
        withLookup(),
        '--connections',
        freshTarget('lookup-bad.db'),
        '--lookup-tables',
        tables,
      );
      expect(run.code).toBe(1);
      expect(run.stderr).toContain('"Names"[1] must be {"value1": text, "value2": text} or [value1, value2]');
    });
  });

  describe('stopped in the middle of a run (SIGKILL, SIGINT), then run again', () => {
    const N = 50_000;
    const BATCH = 500;
    const T0 = Date.UTC(2024, 0, 2);
    const at = (i: number): string => new Date(T0 + i * 1000).toISOString().replace('.000Z', 'Z');
    const indexOf = (date: string): number => (Date.parse(date) - T0) / 1000;
    const checkpointOf = (state: string): number =>
      indexOf((JSON.parse(fs.readFileSync(state, 'utf8')) as { lastRunDate: string }).lastRunDate);

    /** N people, one a second, and an Upsert Map of them into a target whose `writes` table records every insert and update. */
    function setUpBig(name: string): { args: string[]; dbFile: string; state: string } {
      const base = path.join(dir, name);
      fs.mkdirSync(path.join(base, 'src'), { recursive: true });
      fs.copyFileSync(path.join(FIXTURE, 'input', 'schema.json'), path.join(base, 'src', 'schema.json'));
      const lines = ['id,first,last,age,updated_at'];
      for (let i = 1; i <= N; i++) lines.push(`${i},p${i},l${i},${i % 90},${at(i)}`);
      fs.writeFileSync(path.join(base, 'src', 'people.csv'), `${lines.join('\n')}\n`);
      const dbFile = path.join(base, 'target.db');
      const db = new Database(dbFile);
      db.exec(`CREATE TABLE contacts (id INTEGER PRIMARY KEY, full_name TEXT NOT NULL, age_next INTEGER);
        CREATE TABLE writes (id INTEGER NOT NULL);
        CREATE TRIGGER contacts_inserted AFTER INSERT ON contacts BEGIN INSERT INTO writes (id) VALUES (NEW.id); END;
        CREATE TRIGGER contacts_updated AFTER UPDATE ON contacts BEGIN INSERT INTO writes (id) VALUES (NEW.id); END;`);
      db.close();
      const c = path.join(base, 'conns.json');
      fs.writeFileSync(
        c,
        JSON.stringify({
          src: { connector: 'CSV', properties: { folder: path.join(base, 'src') } },
          db: { connector: 'SQLite', properties: { file: dbFile } },
        }),
      );
      const model = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'map.json'), 'utf8')) as {
        batchSize: number;
        lastRunDate: string;
        blocks: Array<Record<string, unknown>>;
      };
      model.batchSize = BATCH;
      model.lastRunDate = '2024-01-01T00:00:00Z';
      Object.assign(model.blocks[1] ?? {}, { blockType: 'Upsert', action: 'InsertUpdate' });
      const mapFile = path.join(base, 'map.json');
      fs.writeFileSync(mapFile, JSON.stringify(model));
      const state = path.join(base, 'state.json');
      return {
        args: ['run', mapFile, '--connections', c, '--state', state, '--failures', path.join(base, 'failures')],
        dbFile,
        state,
      };
    }

    /** Starts the run, sends `signal` once a fifth of the records are checkpointed, and waits for the process to end. */
    async function stopMidway(
      args: string[],
      state: string,
      signal: NodeJS.Signals,
    ): Promise<{ code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }> {
      const child = spawn(process.execPath, ferryArgs(...args), {
        cwd: ROOT,
        env: ferryEnv,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
      child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
      const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
      const deadline = Date.now() + 120_000;
      while (Date.now() < deadline && child.exitCode === null) {
        let done = 0;
        try {
          done = checkpointOf(state);
        } catch {
          done = 0;
        }
        if (done >= N / 5) break;
        await new Promise((r) => setTimeout(r, 5));
      }
      child.kill(signal);
      const [code, sig] = await exited;
      return { code, signal: sig, stdout, stderr };
    }

    /** The target after the stop: everything up to the checkpoint is there; beyond it at most the batch in flight. */
    function checkAfterStop(dbFile: string, done: number): void {
      expect(done).toBeGreaterThan(0);
      expect(done).toBeLessThan(N);
      // read-write: opening recovers the journal a killed process left
      const db = new Database(dbFile);
      const written = db.prepare('SELECT id FROM contacts ORDER BY id').all() as { id: number }[];
      db.close();
      expect(written.slice(0, done).map((r) => r.id)).toEqual(Array.from({ length: done }, (_, k) => k + 1));
      expect(written.length - done).toBeLessThanOrEqual(BATCH);
    }

    /** Runs again to the end: nothing lost, each record once with its values, and only the batch in flight at the stop written a second time. */
    async function checkResumed(args: string[], dbFile: string, done: number): Promise<void> {
      const again = await ferry(...args);
      expect(again.code).toBe(0);
      expect(JSON.parse(again.stdout)).toMatchObject({
        processed: N - done,
        failed: 0,
        cancelled: false,
        lastRunDate: at(N),
      });
      const db = new Database(dbFile, { readonly: true });
      try {
        expect(
          db.prepare("SELECT count(*) AS n FROM contacts WHERE full_name = 'P' || id AND age_next = id % 90 + 1").get(),
        ).toEqual({ n: N });
        expect(db.prepare('SELECT count(*) AS n FROM contacts').get()).toEqual({ n: N });
        expect(db.prepare('SELECT count(DISTINCT id) AS n FROM writes').get()).toEqual({ n: N });
        const twice = db.prepare('SELECT id, count(*) AS n FROM writes GROUP BY id HAVING n > 1 ORDER BY id').all() as {
          id: number;
          n: number;
        }[];
        expect(twice.length).toBeLessThanOrEqual(BATCH);
        for (const t of twice) {
          expect(t.n).toBe(2);
          expect(t.id).toBeGreaterThan(done);
          expect(t.id).toBeLessThanOrEqual(done + BATCH);
        }
      } finally {
        db.close();
      }
    }

    it('kill -9: nothing is lost, and only the batch in flight can be written again (Upsert: each record once in the target)', async () => {
      const { args, dbFile, state } = setUpBig('crash');
      const stopped = await stopMidway(args, state, 'SIGKILL');
      expect({ code: stopped.code, signal: stopped.signal, stderr: stopped.stderr }).toEqual({
        code: null,
        signal: 'SIGKILL',
        stderr: '',
      });
      const done = checkpointOf(state);
      checkAfterStop(dbFile, done);
      await checkResumed(args, dbFile, done);
    }, 240_000);

    it('SIGINT: the run stops between batches and prints its statistics, marked cancelled, up to the checkpoint', async () => {
      const { args, dbFile, state } = setUpBig('interrupt');
      const stopped = await stopMidway(args, state, 'SIGINT');
      expect({ code: stopped.code, signal: stopped.signal }).toEqual({ code: 0, signal: null });
      const done = checkpointOf(state);
      const stats = JSON.parse(stopped.stdout) as {
        processed: number;
        failed: number;
        cancelled: boolean;
        lastRunDate: string;
      };
      expect(stats).toMatchObject({ cancelled: true, failed: 0, processed: done, lastRunDate: at(done) });
      checkAfterStop(dbFile, done);
      await checkResumed(args, dbFile, done);
    }, 240_000);
  });
});
