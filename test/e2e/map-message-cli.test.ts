/**
 * `ferry map run --message FILE` as a real process on the request-reply golden fixture: the
 * request is handed to Wait For Request and the reply printed before the statistics.
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
const FIXTURE = path.join(ROOT, 'test/fixtures/maps/request-reply');

async function ferry(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'map', ...args], {
      cwd: ROOT,
      env: { ...process.env, FERRY_LOG_LEVEL: 'silent' },
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('ferry map run --message', () => {
  let dir: string;
  let conns: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-map-msg-'));
    const db = new Database(path.join(dir, 'target.db'));
    db.exec(fs.readFileSync(path.join(FIXTURE, 'input', 'target.sql'), 'utf8'));
    db.close();
    conns = path.join(dir, 'conns.json');
    fs.writeFileSync(
      conns,
      JSON.stringify({ db: { connector: 'SQLite', properties: { file: path.join(dir, 'target.db') } } }),
    );
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('hands the message to the Map and prints the reply, then the statistics', async () => {
    const run = await ferry(
      'run',
      path.join(FIXTURE, 'map.json'),
      '--connections',
      conns,
      '--message',
      path.join(FIXTURE, 'message.json'),
    );
    expect(run.code).toBe(0);
    const [first, ...rest] = run.stdout.split('\n');
    expect(JSON.parse(first ?? '')).toEqual({ reply: { status: 'ok', name: 'two', total: 201 } });
    expect(JSON.parse(rest.join('\n'))).toMatchObject({ processed: 1, failed: 0 });
  });

  it('refuses to run a message Map without a message', async () => {
    const run = await ferry('run', path.join(FIXTURE, 'map.json'), '--connections', conns);
    expect(run.code).not.toBe(0);
    expect(run.stderr).toContain('was given no message');
  });
});
