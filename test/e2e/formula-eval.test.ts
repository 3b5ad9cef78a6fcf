/**
 * `ferry formula eval`, run as a real process through the CLI entry point.
 */
import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

async function ferry(...args: string[]): Promise<Run> {
  try {
    const { stdout, stderr } = await exec(
      process.execPath,
      ['--import', 'tsx', 'src/cli/main.ts', 'formula', 'eval', ...args],
      { cwd: ROOT, env: { ...process.env, FERRY_LOG_LEVEL: 'silent' } },
    );
    return { code: 0, stdout, stderr };
  } catch (err) {
    const e = err as { code: number; stdout: string; stderr: string };
    return { code: e.code, stdout: e.stdout, stderr: e.stderr };
  }
}

describe('ferry formula eval', () => {
  it('prints the value as JSON', async () => {
    const run = await ferry(
      'CONCATENATE(Query_Account.Name, " (", Query_Account.City, ")")',
      '--record',
      '{"Query_Account": {"Name": "Acme", "City": "Oslo"}}',
    );
    expect(run).toMatchObject({ code: 0, stdout: '"Acme (Oslo)"\n' });
    expect((await ferry('"2" + "1"')).stdout).toBe('3\n');
    expect((await ferry('ISNULL(Q.Missing)')).stdout).toBe('true\n');
    expect((await ferry('DATEADD("day", 1, NOW())', '--now', '2024-03-05T10:00:00Z')).stdout).toBe(
      '"2024-03-06T10:00:00.000Z"\n',
    );
    expect(
      (await ferry('LOOKUPTABLEVALUE2("States", "Texas")', '--lookup-tables', '{"States": [["Texas", "TX"]]}')).stdout,
    ).toBe('"TX"\n');
    expect((await ferry('--', '-1 + 3')).stdout).toBe('2\n');
  });

  it('prints a record error with its position and exits 1', async () => {
    const run = await ferry('1 +\n  "TWO"');
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe('FML_NOT_A_NUMBER: "TWO" is not a number (line 2, column 3)\n    "TWO"\n    ^^^^^\n');
  });

  it('prints a compile error with its position and exits 1', async () => {
    const run = await ferry('UPPER(LEFTT("a", 1))');
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('FML_UNKNOWN_FUNCTION: Unknown function LEFTT; did you mean LEFT? (line 1, column 7)');
    expect(run.stderr).toContain('\n        ^^^^^\n');
  });

  it('refuses a record that is not {"Block": {"Field": value}} and exits 2', async () => {
    const run = await ferry('Q.X', '--record', '{"Q": 5}');
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('FML_INVALID_INPUT');
    expect((await ferry()).code).toBe(2);
    expect((await ferry('1', '--record', 'not json')).code).toBe(2);
  });

  it('refuses a record that holds none of the fields the formula reads, naming them', async () => {
    const run = await ferry(
      '[Query Account].[First Name] & Q.Last',
      '--record',
      '{"fields":{"Query Account.First Name":"Ada"}}',
    );
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toContain(
      'FML_INVALID_INPUT: --record holds none of the fields the formula reads: [Query Account].[First Name], Q.Last.',
    );
    expect(run.stderr).toContain('{"Query Account": {"First Name": …}, "Q": {"Last": …}}');
    expect((await ferry('Q.Name', '--record', '{"q": {"name": "a"}}')).code).toBe(2);
    // One field found is enough: the others are null, as in a run.
    expect(await ferry('Q.A & "-" & Q.B', '--record', '{"Q": {"A": "x"}}')).toMatchObject({
      code: 0,
      stdout: '"x-"\n',
    });
    expect(await ferry('1 + 1', '--record', '{}')).toMatchObject({ code: 0, stdout: '2\n' });
  });
});
