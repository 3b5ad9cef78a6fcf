import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, describe, expect, it } from 'vitest';
import { ferry, killAll, until } from './harness.js';

const PASSWORD = 'Up-password-1';

describe('ferry up (npm start) installs one local Agent once and runs it', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-up-agent-'));
  afterAll(() => {
    killAll();
    fs.rmSync(dataDir, { recursive: true, force: true });
  });
  const env = {
    FERRY_DATA_DIR: dataDir,
    FERRY_ADMIN_PASSWORD: PASSWORD,
    FERRY_LOG_LEVEL: 'warn',
    FERRY_DATABASE_URL: '',
    FERRY_AGENT_HEARTBEAT_MS: '200',
  };
  const agents = async (url: string) => {
    const res = await fetch(`${url}/v1/orgs/1/agents`, {
      headers: { authorization: `Basic ${Buffer.from(`admin@ferry.local:${PASSWORD}`).toString('base64')}` },
    });
    return (await res.json()) as Array<{ id: string; status: string; serviceName: string }>;
  };
  const storedStatus = () => {
    const db = new Database(path.join(dataDir, 'ferry.db'), { readonly: true });
    try {
      return db.prepare('SELECT id, status FROM agents').all() as Array<{ id: string; status: string }>;
    } finally {
      db.close();
    }
  };

  it(
    'first start installs and runs the Agent; a second start reuses it; SIGTERM stops both cleanly',
    { timeout: 300_000 },
    async () => {
      const first = ferry(['up', '--port', '0'], env);
      const [, url] = await first.waitFor(/listening on (http:\/\/\S+)/, 60_000);
      await first.waitFor(/Agent: {4}installed/, 60_000);
      const [running] = await until(
        'the local Agent Running',
        async () => {
          const list = await agents(url as string);
          return list.length === 1 && list[0]?.status === 'Running' ? list : undefined;
        },
        90_000,
      );
      expect(running?.serviceName).toBe('ferry-agent-1');
      expect(fs.existsSync(path.join(dataDir, 'agent', 'ferry-agent-1', 'config.json'))).toBe(true);
      // The Agent's home in the data folder is as private as the rest of it.
      expect(fs.statSync(path.join(dataDir, 'agent')).mode & 0o777).toBe(0o700);
      expect(await first.stop()).toBe(0);
      expect(storedStatus()).toEqual([{ id: running?.id, status: 'Shutdown' }]);

      // Another port this time: the Agent follows the Service's URL, and is not installed again.
      const second = ferry(['up', '--port', '0'], env);
      const [, url2] = await second.waitFor(/listening on (http:\/\/\S+)/, 60_000);
      // The banner names the Agent as the API does, once it is connected, with its instance folder.
      const [, shownId] = await second.waitFor(
        /Agent: {4}"[^"]+" \(([0-9a-f-]{36})\) connected, instance ferry-agent-1 in /,
        90_000,
      );
      expect(shownId).toBe(running?.id);
      await until(
        'the same Agent Running again',
        async () => {
          const list = await agents(url2 as string);
          return list.length === 1 && list[0]?.id === running?.id && list[0]?.status === 'Running' ? true : undefined;
        },
        90_000,
      );
      expect(second.output()).not.toMatch(/Agent: {4}installed/);
      expect(await second.stop()).toBe(0);
    },
  );
});
