/**
 * An unknown command is said first, on stderr, with exit code 2: the whole usage is printed only
 * when asked for (or when no command is given at all).
 */
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

function ferry(args: string[]): { code: number; stdout: string; stderr: string } {
  const run = spawnSync(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', ...args], {
    cwd: ROOT,
    encoding: 'utf8',
    env: { ...process.env, FERRY_LOG_LEVEL: 'silent' },
  });
  return { code: run.status ?? -1, stdout: run.stdout, stderr: run.stderr };
}

describe('ferry with a command it does not know', () => {
  it('says the command is unknown, first and alone, and exits 2', () => {
    const run = ferry(['frobnicate', '--org', '1']);
    expect(run.code).toBe(2);
    expect(run.stdout).toBe('');
    expect(run.stderr).toBe('ferry: unknown command "frobnicate"; run ferry --help for the commands\n');
  });

  it('names the commands of a group for an unknown or missing subcommand', () => {
    const unknown = ferry(['agent', 'frobnicate']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toMatch(
      /^ferry: unknown command "frobnicate" for "ferry agent"; its commands: install, .*status/,
    );
    const missing = ferry(['connections']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(
      /^ferry: ferry connections needs a command; its commands: list, get, create, update, test/,
    );
  });

  it('prints the usage on --help with exit 0, and with no command at all with exit 2', () => {
    const help = ferry(['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: ferry <command>/);
    const none = ferry([]);
    expect(none.code).toBe(2);
    expect(none.stderr).toMatch(/^Usage: ferry <command>/);
  });
});
