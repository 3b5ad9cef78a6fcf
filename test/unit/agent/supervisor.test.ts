import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimInstanceFolder, type InstancePaths } from '../../../src/agent/home.js';
import { runningPid, supervise } from '../../../src/agent/supervisor.js';
import { processStartId } from '../../../src/util/process.js';
import { zombie } from '../../helpers/processes.js';

/** A stand-in worker: each run appends its PID to a file and exits with the next scripted code ('wait' = until SIGTERM). */
const WORKER = `
const fs = require('fs');
const [log, ...codes] = process.argv.slice(1);
const n = fs.existsSync(log) ? fs.readFileSync(log, 'utf8').split('\\n').filter(Boolean).length : 0;
fs.appendFileSync(log, process.pid + '\\n');
const code = codes[n] ?? 'wait';
if (code === 'wait') { process.on('SIGTERM', () => process.exit(0)); setInterval(() => {}, 1000); }
else process.exit(Number(code));
`;

describe('the run supervisor', () => {
  let home: string;
  let paths: InstancePaths;
  let runs: string;
  beforeEach(() => {
    home = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-sup-'));
    paths = claimInstanceFolder(home);
    runs = path.join(home, 'runs.txt');
  });
  afterEach(() => fs.rmSync(home, { recursive: true, force: true }));

  const pids = () => (fs.existsSync(runs) ? fs.readFileSync(runs, 'utf8').split('\n').filter(Boolean) : []);
  const start = (codes: string[], signal?: AbortSignal) => {
    const lines: string[] = [];
    const done = supervise({
      paths,
      command: process.execPath,
      args: ['-e', WORKER, runs, ...codes],
      env: process.env,
      say: (l) => lines.push(l),
      crashBaseMs: 20,
      crashMaxMs: 50,
      ...(signal ? { signal } : {}),
    });
    return { done, lines };
  };
  const until = async (cond: () => boolean) => {
    const deadline = Date.now() + 10_000;
    while (!cond()) {
      if (Date.now() > deadline) throw new Error('condition not met');
      await new Promise((r) => setTimeout(r, 20));
    }
  };

  it('replaces the worker at once on exit 75, after back-off on a crash, and stops it on a stop signal', async () => {
    const stop = new AbortController();
    const { done, lines } = start(['75', '1', 'wait'], stop.signal);
    await until(() => pids().length === 3);
    expect(new Set(pids()).size).toBe(3);
    expect(runningPid(paths)).toBe(process.pid);
    stop.abort();
    expect(await done).toBe(0);
    expect(lines.some((l) => l.includes('restart'))).toBe(true);
    expect(lines.some((l) => l.includes('crashed'))).toBe(true);
    expect(fs.existsSync(paths.pidFile)).toBe(false);
  });

  it('gives up on a configuration error (78) instead of restarting', async () => {
    const { done } = start(['78']);
    expect(await done).toBe(78);
    expect(pids()).toHaveLength(1);
  });

  it('refuses to run an instance another live process runs, and takes over a stale pid file', async () => {
    fs.writeFileSync(paths.pidFile, `${process.ppid}\n`);
    await expect(
      supervise({ paths, command: process.execPath, args: ['-e', ''], env: process.env, say: () => undefined }),
    ).rejects.toMatchObject({ code: 'AGT_ALREADY_RUNNING' });
    fs.writeFileSync(paths.pidFile, '999999999\n');
    expect(runningPid(paths)).toBeUndefined();
    const { done } = start(['0']);
    expect(await done).toBe(0);
  });

  it.runIf(process.platform === 'linux')(
    'takes over the pid file of a run that has exited but is not reaped (a zombie)',
    async () => {
      const z = await zombie();
      try {
        fs.writeFileSync(paths.pidFile, `${z.pid}\n`);
        expect(runningPid(paths)).toBeUndefined();
        const { done, lines } = start(['0']);
        expect(await done).toBe(0);
        expect(lines).toContain('worker exited');
      } finally {
        z.end();
      }
    },
  );

  it.runIf(process.platform === 'linux')(
    'records its start in the pid file, so that a PID given to another process since is not taken for it',
    async () => {
      const stop = new AbortController();
      const { done } = start(['wait'], stop.signal);
      await until(() => pids().length === 1);
      expect(fs.readFileSync(paths.pidFile, 'utf8')).toBe(`${process.pid}\n${processStartId(process.pid)}\n`);
      expect(runningPid(paths)).toBe(process.pid);
      stop.abort();
      expect(await done).toBe(0);

      // The file of a run that died without removing it, whose PID now names another live process.
      const [boot, ticks] = (processStartId(process.ppid) ?? '').split(' ');
      for (const recorded of [`${boot} ${Number(ticks) + 1}`, `00000000-0000-0000-0000-000000000000 ${ticks}`]) {
        fs.writeFileSync(paths.pidFile, `${process.ppid}\n${recorded}\n`);
        expect(runningPid(paths), recorded).toBeUndefined();
      }
      // Its worker is the second run the stand-in counts: the scripted code at index 1.
      const again = start(['0', '0']);
      expect(await again.done).toBe(0);
      // The process the file names, started when the file says: still refused.
      fs.writeFileSync(paths.pidFile, `${process.ppid}\n${processStartId(process.ppid)}\n`);
      expect(runningPid(paths)).toBe(process.ppid);
      await expect(
        supervise({ paths, command: process.execPath, args: ['-e', ''], env: process.env, say: () => undefined }),
      ).rejects.toMatchObject({ code: 'AGT_ALREADY_RUNNING' });
    },
  );
});
