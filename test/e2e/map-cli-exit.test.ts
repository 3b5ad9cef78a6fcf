/**
 * `ferry map run` ends cleanly every time: the formula sandbox is closed (calls settled, handles
 * released, isolate disposed) before the process ends, so isolated-vm never aborts at exit. Sixteen
 * runs of a small Map, two at a time; each must exit 0 with nothing but statistics, and no native
 * assertion or signal. Then six runs whose every record fails (the error path) must each exit 1
 * with nothing on stderr but the record errors. FERRY_TEST_EXIT_RUNS sets the first number (the
 * second is a third of it, at least six) for a longer hunt.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const FIXTURE = path.join(ROOT, 'test/fixtures/maps/query-create');
const RUNS = Number(process.env['FERRY_TEST_EXIT_RUNS'] ?? 16);
const AT_ONCE = 2;
const FAILING_RUNS = Math.max(6, Math.round(RUNS / 3));

interface Exit {
  code: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
}

function ferry(args: string[]): Promise<Exit> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'map', ...args], {
      cwd: ROOT,
      env: { ...process.env, FERRY_LOG_LEVEL: 'silent' },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d: Buffer) => (stdout += d.toString()));
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()));
    child.on('error', reject);
    child.on('close', (code, signal) => resolve({ code, signal, stdout, stderr }));
  });
}

describe('ferry map run at exit', () => {
  let dir: string;
  let map: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-map-exit-'));
    fs.mkdirSync(path.join(dir, 'src'));
    fs.copyFileSync(path.join(FIXTURE, 'input', 'schema.json'), path.join(dir, 'src', 'schema.json'));
    // The fixture's people, all valid: every run succeeds, so any other exit code is the process's own.
    fs.writeFileSync(
      path.join(dir, 'src', 'people.csv'),
      fs.readFileSync(path.join(FIXTURE, 'input', 'people.csv'), 'utf8').replace(',x,', ',7,'),
    );
    const model = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'map.json'), 'utf8')) as Record<string, unknown>;
    delete model['lastRunDate'];
    map = path.join(dir, 'map.json');
    fs.writeFileSync(map, JSON.stringify(model));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it(`exits 0 with no native assertion in ${RUNS} runs`, { timeout: 240_000 }, async () => {
    const exits: Exit[] = [];
    let next = 0;
    const worker = async (): Promise<void> => {
      while (next < RUNS) {
        const i = next++;
        // A fresh target per run (ids are keys): each run writes the same five contacts.
        const db = new Database(path.join(dir, `target-${i}.db`));
        db.exec('CREATE TABLE contacts (id INTEGER PRIMARY KEY, full_name TEXT NOT NULL, age_next INTEGER)');
        db.close();
        const conns = path.join(dir, `conns-${i}.json`);
        fs.writeFileSync(
          conns,
          JSON.stringify({
            src: { connector: 'CSV', properties: { folder: path.join(dir, 'src') } },
            db: { connector: 'SQLite', properties: { file: path.join(dir, `target-${i}.db`) } },
          }),
        );
        exits.push(await ferry(['run', map, '--connections', conns]));
      }
    };
    await Promise.all(Array.from({ length: AT_ONCE }, worker));
    expect(exits).toHaveLength(RUNS);
    for (const exit of exits) {
      expect({ code: exit.code, signal: exit.signal, stderr: exit.stderr }).toEqual({
        code: 0,
        signal: null,
        stderr: '',
      });
      expect(JSON.parse(exit.stdout)).toMatchObject({ processed: 5, failed: 0 });
    }
  });

  it(
    `exits 1 with no native assertion in ${FAILING_RUNS} runs where every record fails`,
    { timeout: 240_000 },
    async () => {
      // One target the first run fills: every later run fails each record with a duplicate key, after its formulas ran.
      const db = new Database(path.join(dir, 'target-shared.db'));
      db.exec('CREATE TABLE contacts (id INTEGER PRIMARY KEY, full_name TEXT NOT NULL, age_next INTEGER)');
      db.close();
      const conns = path.join(dir, 'conns-shared.json');
      fs.writeFileSync(
        conns,
        JSON.stringify({
          src: { connector: 'CSV', properties: { folder: path.join(dir, 'src') } },
          db: { connector: 'SQLite', properties: { file: path.join(dir, 'target-shared.db') } },
        }),
      );
      const fill = await ferry(['run', map, '--connections', conns]);
      expect(fill.code).toBe(0);
      const exits: Exit[] = [];
      for (let i = 0; i < FAILING_RUNS; i++)
        exits.push(await ferry(['run', map, '--connections', conns, '--failures', path.join(dir, 'failures')]));
      for (const exit of exits) {
        expect({ code: exit.code, signal: exit.signal }).toEqual({ code: 1, signal: null });
        expect(JSON.parse(exit.stdout)).toMatchObject({ processed: 5, failed: 5 });
        // Only the record errors, as JSON lines (piped): no assertion or other native message.
        for (const line of exit.stderr.trim().split('\n'))
          expect(Object.keys(JSON.parse(line) as object)).toEqual([expect.stringMatching(/^recordErrors?$/)]);
      }
    },
  );
});
