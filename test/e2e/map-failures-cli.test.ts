/**
 * The record errors of `ferry map run` and the commands that read its failed-record store, as real
 * processes: a Create Map run twice over the same 30 people fails every record the second time
 * (duplicate keys); the errors are summarized by code (the first 5 shown, then the count), as
 * JSON when piped and as lines on a terminal; `ferry map failures list|show` read them back.
 */
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const FIXTURE = path.join(ROOT, 'test/fixtures/maps/query-create');
const PEOPLE = 30;
const hasScript = process.platform === 'linux' && spawnSync('script', ['--version']).status === 0;

async function ferry(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'map', ...args], {
      cwd: ROOT,
      env: { ...process.env, FERRY_LOG_LEVEL: 'silent' },
      maxBuffer: 16 * 1024 * 1024,
    });
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

interface Listed {
  total: number;
  records: { id: string; code: string; mapName: string; source: Record<string, unknown> }[];
}

describe('ferry map run record errors and ferry map failures', () => {
  let dir: string;
  let map: string;
  let conns: string;
  let failures: string;
  beforeAll(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-map-failures-'));
    fs.mkdirSync(path.join(dir, 'src'));
    fs.copyFileSync(path.join(FIXTURE, 'input', 'schema.json'), path.join(dir, 'src', 'schema.json'));
    const rows = Array.from({ length: PEOPLE }, (_, i) => `${i + 1},name${i + 1},last,${20 + i},2024-01-01T00:00:00Z`);
    fs.writeFileSync(path.join(dir, 'src', 'people.csv'), `id,first,last,age,updated_at\n${rows.join('\n')}\n`);
    const model = JSON.parse(fs.readFileSync(path.join(FIXTURE, 'map.json'), 'utf8')) as {
      lastRunDate?: string;
      batchSize: number;
    };
    delete model.lastRunDate;
    model.batchSize = 7;
    map = path.join(dir, 'map.json');
    fs.writeFileSync(map, JSON.stringify(model));
    const db = new Database(path.join(dir, 'target.db'));
    db.exec('CREATE TABLE contacts (id INTEGER PRIMARY KEY, full_name TEXT NOT NULL, age_next INTEGER)');
    db.close();
    conns = path.join(dir, 'conns.json');
    fs.writeFileSync(
      conns,
      JSON.stringify({
        src: { connector: 'CSV', properties: { folder: path.join(dir, 'src') } },
        db: { connector: 'SQLite', properties: { file: path.join(dir, 'target.db') } },
      }),
    );
    failures = path.join(dir, 'failures');
    const first = await ferry('run', map, '--connections', conns, '--failures', failures);
    expect(first.code).toBe(0);
    expect(first.stderr).toBe('');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('piped: the first 5 errors of a code as JSON lines, then one summary with the count', async () => {
    const again = await ferry('run', map, '--connections', conns, '--failures', failures);
    expect(again.code).toBe(1);
    expect(JSON.parse(again.stdout)).toMatchObject({ processed: PEOPLE, failed: PEOPLE });
    const lines = again.stderr
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as Record<string, unknown>);
    expect(lines).toHaveLength(6);
    const shown = lines.slice(0, 5).map(
      (l) =>
        l['recordError'] as {
          code: string;
          blockName: string;
          sourceKey: unknown;
          sourceRow: number;
          errorMessage: string;
          failedRecordId: string;
        },
    );
    expect(shown.map((e) => e.sourceKey)).toEqual([{ id: 1 }, { id: 2 }, { id: 3 }, { id: 4 }, { id: 5 }]);
    expect(shown[0]).toMatchObject({ code: 'RUN_WRITE_FAILED', blockName: 'CreateContact', sourceRow: 1 });
    expect(shown[0]?.errorMessage).toMatch(/UNIQUE constraint failed: contacts\.id/);
    expect(shown[0]?.failedRecordId).toMatch(/^[0-9a-f-]{36}$/);
    expect(lines[5]).toEqual({
      recordErrors: { RUN_WRITE_FAILED: { count: PEOPLE, shown: 5, blocks: { CreateContact: PEOPLE } } },
    });
  });

  it.skipIf(!hasScript)(
    'on a terminal: readable lines with the Block, the key and the message, and the count by code',
    () => {
      const cmd = [
        process.execPath,
        '--import',
        'tsx',
        'src/cli/main.ts',
        'map',
        'run',
        map,
        '--connections',
        conns,
        '--failures',
        failures,
      ]
        .map((a) => `'${a}'`)
        .join(' ');
      const run = spawnSync('script', ['-qfec', `${cmd} > /dev/null`, '/dev/null'], {
        cwd: ROOT,
        env: { ...process.env, FERRY_LOG_LEVEL: 'silent' },
        encoding: 'utf8',
        timeout: 60_000,
      });
      const text = run.stdout.split('\u001b[K').join('\n').replace(/\r/g, '\n');
      expect(text).toMatch(
        /CreateContact {2}key id=1 {2}RUN_WRITE_FAILED {2}contacts refused the record: UNIQUE constraint failed: contacts\.id/,
      );
      expect(text.match(/RUN_WRITE_FAILED {2}contacts refused/g)).toHaveLength(5);
      expect(text).toMatch(
        new RegExp(
          `RUN_WRITE_FAILED: ${PEOPLE} records \\(CreateContact: ${PEOPLE}\\); the first 5 are shown above\\.`,
        ),
      );
      expect(text).toContain(`ferry map failures list --failures ${failures}`);
      expect(text).not.toContain('{"recordError"');
    },
  );

  it('lists the failed records a page at a time, filtered by code and Map, and shows one', async () => {
    const all = await ferry('failures', 'list', '--failures', failures, '--limit', '10');
    expect(all.code).toBe(0);
    const page1 = JSON.parse(all.stdout) as Listed;
    expect(page1.total).toBeGreaterThanOrEqual(PEOPLE);
    expect(page1.records).toHaveLength(10);

    const page2 = JSON.parse(
      (await ferry('failures', 'list', '--failures', failures, '--limit', '10', '--page', '2')).stdout,
    ) as Listed;
    expect(page2.records).toHaveLength(10);
    expect(page2.records.map((r) => r.id)).not.toContain(page1.records[0]?.id);

    const byCode = JSON.parse(
      (
        await ferry(
          'failures',
          'list',
          '--failures',
          failures,
          '--code',
          'RUN_WRITE_FAILED',
          '--map',
          'People to contacts',
          '--limit',
          '1000',
        )
      ).stdout,
    ) as Listed;
    expect(byCode.total).toBe(page1.total);
    expect(byCode.records.every((r) => r.code === 'RUN_WRITE_FAILED' && r.mapName === 'People to contacts')).toBe(true);
    expect(
      (
        JSON.parse(
          (await ferry('failures', 'list', '--failures', failures, '--code', 'FML_NOT_A_NUMBER')).stdout,
        ) as Listed
      ).total,
    ).toBe(0);

    const one = page1.records[0];
    const shown = await ferry('failures', 'show', one?.id ?? '', '--failures', failures);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      id: one?.id,
      code: 'RUN_WRITE_FAILED',
      blockName: 'CreateContact',
      source: one?.source,
    });
    expect(shown.stdout).toMatch(/UNIQUE constraint failed/);

    const missing = await ferry('failures', 'show', '00000000-0000-4000-8000-000000000000', '--failures', failures);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no failed record/);
    const nowhere = await ferry('failures', 'list', '--failures', path.join(dir, 'nope'));
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toMatch(/There is no failed-record store in/);
    expect(fs.existsSync(path.join(dir, 'nope'))).toBe(false);
  });

  it.skipIf(!hasScript)('on a terminal, list prints a table', () => {
    const cmd = [
      process.execPath,
      '--import',
      'tsx',
      'src/cli/main.ts',
      'map',
      'failures',
      'list',
      '--failures',
      failures,
      '--limit',
      '3',
    ]
      .map((a) => `'${a}'`)
      .join(' ');
    const run = spawnSync('script', ['-qfec', cmd, '/dev/null'], {
      cwd: ROOT,
      env: { ...process.env, FERRY_LOG_LEVEL: 'silent' },
      encoding: 'utf8',
      timeout: 60_000,
    });
    expect(run.stdout).toMatch(/^ID +WHEN \(UTC\) +MAP +BLOCK +CODE +STATE +ERROR/m);
    expect(run.stdout.match(/RUN_WRITE_FAILED/g)).toHaveLength(3);
    expect(run.stdout).toMatch(/Page 1 of \d+ \(\d+ records\)\. Next: --page 2\./);
  });
});
