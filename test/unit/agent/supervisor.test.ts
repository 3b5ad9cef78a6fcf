import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { claimInstanceFolder, type InstancePaths } from '../../../src/agent/home.js';
import { runningPid, supervise } from '../../../src/agent/supervisor.js';

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
    const done = supervise({ paths, command: process.execPath, args: ['-e', WORKER, runs, ...codes], env: process.env, say: (l) => lines.push(l), crashBaseMs: 20, crashMaxMs: 50, ...(signal ? { signal } : {}) });
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
    await expect(supervise({ paths, command: process.execPath, args: ['-e', ''], env: process.env, say: () => undefined })).rejects.toMatchObject({ code: 'AGT_ALREADY_RUNNING' });
    fs.writeFileSync(paths.pidFile, '999999999\n');
    expect(runningPid(paths)).toBeUndefined();
    const { done } = start(['0']);
    expect(await done).toBe(0);
  });
});
