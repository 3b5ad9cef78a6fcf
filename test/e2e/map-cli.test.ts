/**
 * `ferry map validate` and `ferry map run`, run as real processes on a golden fixture: CSV people →
 * SQLite contacts, with net change, a formula error and a local failed-record store.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const FIXTURE = path.join(ROOT, 'test/fixtures/maps/query-create');

async function ferry(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'map', ...args], { cwd: ROOT, env: { ...process.env, FERRY_LOG_LEVEL: 'silent' } });
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
    fs.writeFileSync(conns, JSON.stringify({
      src: { connector: 'CSV', properties: { folder: path.join(dir, 'src') } },
      db: { connector: 'SQLite', properties: { file: path.join(dir, 'target.db') } },
    }));
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('validates the Map against the Connections', async () => {
    const run = await ferry('validate', path.join(FIXTURE, 'map.json'), '--connections', conns);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/is valid/);
  });

  it('fails validation with the Block and exits non-zero when an entity is missing', async () => {
    const broken = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'map.json'), 'utf8').replace('"contacts"', '"no_such_table"')) as unknown;
    const file = path.join(dir, 'broken.json');
    fs.writeFileSync(file, JSON.stringify(broken));
    const run = await ferry('validate', file, '--connections', conns);
    expect(run.code).not.toBe(0);
    expect(run.stdout + run.stderr).toMatch(/no_such_table/);
  });

  it('runs the Map, prints the statistics as JSON, writes the good records and keeps the watermark', async () => {
    const state = path.join(dir, 'state.json');
    const run = await ferry('run', path.join(FIXTURE, 'map.json'), '--connections', conns, '--state', state, '--failures', path.join(dir, 'failures'));
    // Some records failed (a formula error): the statistics are printed and the exit code says so.
    expect(run.code).toBe(1);
    const stats = JSON.parse(run.stdout) as { processed: number; failed: number; lastRunDate: string };
    const expected = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'expected.json'), 'utf8')) as { stats: { processed: number; failed: number }; lastRunDate: string; tables: { contacts: unknown[] } };
    expect({ processed: stats.processed, failed: stats.failed }).toEqual(expected.stats);
    const db = new Database(path.join(dir, 'target.db'), { readonly: true });
    expect(db.prepare('SELECT id, full_name, age_next FROM contacts ORDER BY id').all()).toEqual(expected.tables.contacts);
    db.close();
    // the watermark, with the identity (primary key) of the record processed at exactly it
    expect(JSON.parse(fs.readFileSync(state, 'utf8'))).toEqual({ lastRunDate: expected.lastRunDate, processedAtLastRunDate: ['k:[5]'] });
    expect(fs.existsSync(path.join(dir, 'failures'))).toBe(true);
    // a second run re-reads the record at the watermark and skips it: nothing to do, exit 0
    const again = await ferry('run', path.join(FIXTURE, 'map.json'), '--connections', conns, '--state', state, '--failures', path.join(dir, 'failures'));
    expect(again.code).toBe(0);
    expect(JSON.parse(again.stdout)).toMatchObject({ processed: 0, failed: 0, lastRunDate: expected.lastRunDate });
  });
});
