import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CloudAgentSupervisor } from '../../../../service/jobs/cloud-agents.js';
import { until } from '../../../helpers/agent-client.js';

const AGENT = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';
const log = pino({ level: 'silent' });
const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Stand-in `ferry` CLIs as inline scripts: the supervisor only sees a process that starts and exits. */
const node = (script: string): [string, ...string[]] => [process.execPath, '-e', script];

describe('the Cloud Agent supervisor', () => {
  let dir: string;
  const started: number[] = [];
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-cloud-'));
  });
  afterEach(() => {
    for (const pid of started) if (alive(pid)) process.kill(pid, 'SIGKILL');
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('retries a failing installation with a new key each time and growing delays, and stops at once when asked', async () => {
    const keys: number[] = [];
    const sup = new CloudAgentSupervisor({
      dataDir: dir,
      command: node('process.exit(3)'),
      log,
      issueKey: async () => {
        keys.push(Date.now());
        return `key-${keys.length}`;
      },
      backoffBaseMs: 20,
      backoffMaxMs: 80,
    });
    sup.setServiceUrl('http://127.0.0.1:1');
    sup.start(AGENT);
    await until(async () => (keys.length >= 4 ? true : undefined), 'four attempts');
    const gaps = keys.slice(1).map((t, i) => t - (keys[i] as number));
    expect(gaps[1] as number).toBeGreaterThanOrEqual(35);
    const t0 = Date.now();
    await sup.close();
    expect(Date.now() - t0).toBeLessThan(1000);
    const count = keys.length;
    await new Promise((r) => setTimeout(r, 200));
    expect(keys.length).toBe(count);
  });

  it('runs an installed Agent, restarts it when it exits, and SIGKILLs one that ignores SIGTERM', async () => {
    const instance = path.join(dir, 'cloud-agents', AGENT, 'ferry-agent-1');
    fs.mkdirSync(instance, { recursive: true });
    fs.writeFileSync(path.join(instance, 'config.json'), JSON.stringify({ serviceUrl: 'http://old:1' }));
    // Writes its PID, ignores SIGTERM, and exits by itself on its first run only.
    const script = `
      const fs = require('fs'); const p = require('path');
      const dir = p.join(process.argv[process.argv.indexOf('--home') + 1], 'ferry-agent-1');
      const runs = p.join(dir, 'runs'); const n = fs.existsSync(runs) ? Number(fs.readFileSync(runs, 'utf8')) + 1 : 1;
      fs.writeFileSync(runs, String(n)); fs.writeFileSync(p.join(dir, 'agent.pid'), String(process.pid));
      process.on('SIGTERM', () => {});
      if (n === 1) setTimeout(() => process.exit(1), 50); else setInterval(() => {}, 1000);`;
    const sup = new CloudAgentSupervisor({
      dataDir: dir,
      command: node(script),
      log,
      issueKey: async () => 'unused',
      backoffBaseMs: 20,
      stopGraceMs: 200,
    });
    sup.setServiceUrl('http://127.0.0.1:4242');
    sup.start(AGENT);
    const pid = await until(async () => {
      const runs = fs.existsSync(path.join(instance, 'runs'))
        ? fs.readFileSync(path.join(instance, 'runs'), 'utf8')
        : '0';
      const current = sup.pidOf(AGENT);
      if (current) started.push(current);
      return runs === '2' && current ? current : undefined;
    }, 'the second run');
    expect(JSON.parse(fs.readFileSync(path.join(instance, 'config.json'), 'utf8'))).toEqual({
      serviceUrl: 'http://127.0.0.1:4242',
    });
    await sup.close();
    expect(alive(pid)).toBe(false);
  });

  it('removes the folder of a removed Cloud Agent', async () => {
    const home = path.join(dir, 'cloud-agents', AGENT);
    const sup = new CloudAgentSupervisor({
      dataDir: dir,
      command: node('setInterval(() => {}, 1000)'),
      log,
      issueKey: async () => 'k',
    });
    sup.setServiceUrl('http://127.0.0.1:1');
    sup.start(AGENT);
    await until(async () => (sup.pidOf(AGENT) ? true : undefined), 'the install step to run');
    const pid = sup.pidOf(AGENT) as number;
    started.push(pid);
    await sup.remove(AGENT);
    expect(alive(pid)).toBe(false);
    expect(fs.existsSync(home)).toBe(false);
    expect(() => sup.homeOf('../../etc')).toThrow();
  });
});
