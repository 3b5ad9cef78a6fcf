import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { instancePaths } from '../../../src/agent/home.js';
import { quoteArg, renderUnit, systemdAvailable } from '../../../src/agent/systemd.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const template = fs.readFileSync(path.join(ROOT, 'installer/systemd/ferry-agent.service.template'), 'utf8');
const hasAnalyze = spawnSync('systemd-analyze', ['--version']).status === 0;

describe('the systemd unit', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry unit '));
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));
  const home = path.join(dir, 'agents');
  const paths = instancePaths(home, 2);
  const execStart = [
    process.execPath,
    path.join(ROOT, 'src/cli/main.ts'),
    'agent',
    'run',
    '--home',
    home,
    '--instance',
    '2',
  ];

  it('renders one unit per instance: supervised run, restart on failure except on configuration errors', () => {
    const unit = renderUnit(template, { paths, home, execStart, user: 'ferry' });
    expect(unit).not.toMatch(/@[A-Z_]+@/);
    expect(unit).toContain('Description=Ferry Agent (ferry-agent-2)');
    expect(unit).toMatch(/^ExecStart=\S+ .* agent run --home ".*agents" --instance 2$/m);
    expect(unit).toMatch(/^Restart=on-failure$/m);
    expect(unit).toMatch(/^RestartPreventExitStatus=78$/m);
    expect(unit).toMatch(/^User=ferry$/m);
    expect(renderUnit(template, { paths, home, execStart })).not.toMatch(/^User=/m);
  });

  it('quotes arguments the way systemd reads them', () => {
    expect(quoteArg('/usr/bin/node')).toBe('/usr/bin/node');
    expect(quoteArg('/a b/c')).toBe('"/a b/c"');
    expect(quoteArg('100%')).toBe('100%%');
    expect(quoteArg('say "hi"')).toBe('"say \\"hi\\""');
  });

  it.skipIf(!hasAnalyze)('passes systemd-analyze verify', () => {
    fs.mkdirSync(paths.dir, { recursive: true });
    const file = path.join(dir, `${paths.serviceName}.service`);
    fs.writeFileSync(file, renderUnit(template, { paths, home, execStart }));
    const res = spawnSync('systemd-analyze', ['verify', file], { encoding: 'utf8' });
    expect(
      res.stderr
        .split('\n')
        .filter((l) => l.includes(paths.serviceName) && !/Unit ferry-agent-2.service not found|multi-user/.test(l)),
    ).toEqual([]);
    expect(res.status).toBe(0);
  });

  it('detects systemd from /run/systemd/system', () => {
    expect(systemdAvailable(() => true)).toBe(process.platform === 'linux');
    expect(systemdAvailable(() => false)).toBe(false);
  });
});
