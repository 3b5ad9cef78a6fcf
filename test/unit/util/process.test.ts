import { spawn } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import { processAlive, processStartId } from '../../../src/util/process.js';
import { procState, until, zombie } from '../../helpers/processes.js';

describe('processes', () => {
  it('runs: this process and its parent; not: a PID no process has', () => {
    expect(processAlive(process.pid)).toBe(true);
    expect(processAlive(process.ppid)).toBe(true);
    expect(processAlive(2 ** 22 + 12_345)).toBe(false);
  });

  it.runIf(process.platform === 'linux')(
    'does not count a zombie as running, although signalling it succeeds',
    async () => {
      const z = await zombie();
      try {
        expect(procState(z.pid)).toBe('Z');
        // What fooled a check by kill(pid, 0): the kernel still has the process's entry.
        expect(() => process.kill(z.pid, 0)).not.toThrow();
        expect(processAlive(z.pid)).toBe(false);
      } finally {
        z.end();
      }
    },
  );

  it.runIf(process.platform === 'linux')(
    'tells processes apart by boot and start time, which a reused PID does not share',
    async () => {
      const mine = processStartId(process.pid);
      expect(mine).toMatch(/^[0-9a-f-]{36} \d+$/);
      expect(processStartId(process.pid)).toBe(mine);
      expect(processStartId(process.ppid)).not.toBe(mine);
      const child = spawn('sleep', ['30'], { stdio: 'ignore' });
      try {
        const pid = child.pid as number;
        await until(() => procState(pid) !== undefined, 'the child to start');
        const id = processStartId(pid);
        expect(id?.split(' ')[0]).toBe(mine?.split(' ')[0]);
        expect(Number(id?.split(' ')[1])).toBeGreaterThanOrEqual(Number(mine?.split(' ')[1]));
      } finally {
        child.kill('SIGKILL');
      }
      expect(processStartId(2 ** 22 + 12_345)).toBeUndefined();
    },
  );
});
