/**
 * `ferry agent failures list|show` as a real process, against a real failed-record store in an
 * Agent's instance folder (as the Agent's runner writes it): the store is found from --home and
 * --instance alone, the listing's IDs are whole and unique (records a batch refused share the
 * first characters of their time-ordered IDs), JSON when piped, a table on a terminal.
 */
import { execFile, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { claimInstanceFolder, writeInstanceConfig, type InstancePaths } from '../../src/agent/home.js';
import { FailedRecordStore } from '../../src/failures/store.js';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const hasScript = process.platform === 'linux' && spawnSync('script', ['--version']).status === 0;
const RUN_A = '0192f0a0-0000-7000-8000-00000000000a';
const RUN_B = '0192f0a0-0000-7000-8000-00000000000b';

async function ferry(...args: string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  try {
    const { stdout, stderr } = await exec(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'agent', 'failures', ...args],
      { cwd: ROOT, env: { ...process.env, FERRY_LOG_LEVEL: 'silent', FERRY_AGENT_HOME: '' } },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

interface Listed {
  total: number;
  records: { id: string; executionId: string; code: string; source: Record<string, unknown> }[];
}

function install(home: string): InstancePaths {
  const paths = claimInstanceFolder(home);
  writeInstanceConfig(paths, {
    agentId: `0b5f0d59-4c8e-4c1c-9a52-1b1f8b1a000${paths.number}`,
    agentSecret: 'very-secret',
    orgId: 1,
    serviceUrl: 'http://127.0.0.1:8780',
    name: 'host',
    serviceName: paths.serviceName,
    fingerprint: 'f'.repeat(64),
    installId: `install-${paths.number}`,
    createdAt: '2025-01-01T00:00:00.000Z',
  });
  return paths;
}

describe('ferry agent failures', () => {
  let home: string;
  let ids: string[];
  beforeAll(async () => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-agent-failures-'));
    const paths = install(home);
    // As the runner keeps them: one batch of refused records (captured in one turn), two runs.
    const store = new FailedRecordStore(paths.failures, { thread: false });
    const capture = (run: string, n: number) =>
      store.capture({
        executionId: run,
        mapId: 4,
        mapName: 'People',
        entity: 'people',
        blockId: 'b2',
        blockName: 'Create contact',
        error: { code: 'RUN_WRITE_FAILED', kind: 'config', message: `contacts refused record ${n}` },
        source: { id: n, name: `person ${n}` },
      });
    ids = await Promise.all([...Array.from({ length: 12 }, (_, i) => capture(RUN_A, i + 1)), capture(RUN_B, 100)]);
    store.close();
  });
  afterAll(() => fs.rmSync(home, { recursive: true, force: true }));

  it("lists the only instance's records with whole, unique IDs, and one run's with --execution", async () => {
    // The batch's IDs share their first eight characters: a prefix that short names none of them.
    expect(new Set(ids.map((id) => id.slice(0, 8))).size).toBeLessThan(ids.length);
    const all = await ferry('list', '--home', home, '--limit', '100');
    expect(all.code, all.stderr).toBe(0);
    const listed = JSON.parse(all.stdout) as Listed;
    expect(listed.total).toBe(13);
    expect(new Set(listed.records.map((r) => r.id))).toEqual(new Set(ids));

    const one = JSON.parse(
      (await ferry('list', '--home', home, '--instance', '1', '--execution', RUN_B.toUpperCase())).stdout,
    ) as Listed;
    expect(one.records.map((r) => [r.id, r.executionId, r.source])).toEqual([
      [ids[12], RUN_B, { id: 100, name: 'person 100' }],
    ]);
  });

  it('shows one record by the failedRecordId History gives, with its source fields', async () => {
    const shown = await ferry('show', ids[3] as string, '--home', home, '--json');
    expect(shown.code, shown.stderr).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      id: ids[3],
      executionId: RUN_A,
      code: 'RUN_WRITE_FAILED',
      errorMessage: 'contacts refused record 4',
      source: { id: 4, name: 'person 4' },
    });
    const missing = await ferry('show', '00000000-0000-4000-8000-000000000000', '--home', home);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(/no failed record/);
    const noId = await ferry('show', '--home', home);
    expect(noId.code).toBe(2);
    expect(noId.stderr).toMatch(/give the ID of a failed record/);
  });

  it('says which instance to pick, and when an instance has kept nothing', async () => {
    const empty = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-agent-failures-none-'));
    try {
      const none = await ferry('list', '--home', empty);
      expect(none.code).toBe(1);
      expect(none.stderr).toMatch(/No Agent instance is installed in/);
      install(empty);
      const nothing = await ferry('list', '--home', empty);
      expect(nothing.code).toBe(1);
      expect(nothing.stderr).toMatch(/Agent ferry-agent-1 has kept no failed records yet/);
      expect(fs.existsSync(path.join(empty, 'ferry-agent-1', 'data', 'failures', 'failed-records.db'))).toBe(false);
      install(empty);
      const two = await ferry('list', '--home', empty);
      expect(two.code).toBe(1);
      expect(two.stderr).toMatch(/pass --instance N/);
      expect((await ferry('list', '--home', empty, '--instance', '3')).stderr).toMatch(/No Agent instance "3"/);
    } finally {
      fs.rmSync(empty, { recursive: true, force: true });
    }
  });

  it.skipIf(!hasScript)('on a terminal, list prints a table of whole IDs', () => {
    const cmd = [
      process.execPath,
      '--import',
      'tsx',
      'src/cli/main.ts',
      'agent',
      'failures',
      'list',
      '--home',
      home,
      '--limit',
      '5',
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
    const shownIds = run.stdout.match(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}(?= )/gm) ?? [];
    expect(shownIds).toHaveLength(5);
    expect(shownIds.every((id) => ids.includes(id))).toBe(true);
    expect(run.stdout).toMatch(
      /Page 1 of 3 \(13 records\)\. Next: --page 2\. Details: ferry agent failures show ID --home /,
    );
  });
});
