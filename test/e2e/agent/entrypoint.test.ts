import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  FAST_AGENT_ENV,
  ROOT,
  getAgent,
  killAll,
  provisionKey,
  reportsOf,
  serviceUnderTest,
  until,
  untilStatus,
  type ServiceUnderTest,
} from './harness.js';

const ENTRYPOINT = path.join(ROOT, 'installer/docker/entrypoint.sh');

describe('the Cloud Agent container entry point, run directly (no Docker engine here)', () => {
  let sut: ServiceUnderTest;
  let home: string;
  let pid: number | undefined;
  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    home = path.join(sut.dataDir, 'volume');
  }, 60_000);
  afterEach(() => {
    if (pid) {
      try {
        process.kill(-pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
    }
    killAll();
  });
  afterAll(async () => sut.dispose());

  it(
    'installs on the first start, runs in the foreground, answers the health check, and stops on SIGTERM',
    { timeout: 180_000 },
    async () => {
      const env = {
        ...process.env,
        ...FAST_AGENT_ENV,
        FERRY_CLI: `${process.execPath} --import tsx ${path.join(ROOT, 'src/cli/main.ts')}`,
        FERRY_AGENT_HOME: home,
        FERRY_AGENT_CLOUD: 'true',
        FERRY_AGENT_KEY: await provisionKey(sut),
        FERRY_SERVICE_URL: sut.url,
      };
      const start = () => {
        const child = spawn(ENTRYPOINT, [], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
        pid = child.pid;
        let out = '';
        child.stdout.on('data', (c: Buffer) => (out += c.toString()));
        child.stderr.on('data', (c: Buffer) => (out += c.toString()));
        const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
        return { child, exited, output: () => out };
      };
      const health = () => spawnSync(ENTRYPOINT, ['health'], { cwd: ROOT, env, encoding: 'utf8' }).status;

      const first = start();
      const config = await until('the instance on the volume', () => {
        const file = path.join(home, 'ferry-agent-1', 'config.json');
        return fs.existsSync(file) ? (JSON.parse(fs.readFileSync(file, 'utf8')) as { agentId: string }) : undefined;
      });
      await untilStatus(sut, config.agentId, 'Running');
      expect(health()).toBe(0);
      first.child.kill('SIGTERM');
      expect(await first.exited).toBe(0);
      expect(health()).not.toBe(0);
      await until('ShutdownCloud reported', () =>
        reportsOf(sut, config.agentId).some((r) => r.status === 'ShutdownCloud') ? true : undefined,
      );

      // The second start reuses the volume's identity (the key is spent and not needed).
      const second = start();
      await until('Running again', async () =>
        (await getAgent(sut, config.agentId)).status === 'Running' ? true : undefined,
      );
      expect(fs.readdirSync(home).filter((n) => n.startsWith('ferry-agent-'))).toEqual(['ferry-agent-1']);
      second.child.kill('SIGTERM');
      expect(await second.exited).toBe(0);
      expect(second.output()).not.toMatch(/Installed Agent/);
    },
  );
});
