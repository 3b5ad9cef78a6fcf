import fs from 'node:fs';
import path from 'node:path';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { unzip } from '../../helpers/unzip.js';
import { ferry, install, killAll, serviceUnderTest, until, untilStatus, type ServiceUnderTest } from './harness.js';

describe('Agent logs: zip, upload and one download from the same address', () => {
  let sut: ServiceUnderTest;
  let home: string;
  let agent: { agentId: string; dir: string };
  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    home = path.join(sut.dataDir, 'agents');
    agent = await install(sut, home);
  }, 60_000);
  afterEach(() => killAll());
  afterAll(async () => {
    killAll();
    await sut.dispose();
  });

  it(
    'zips the log files, uploads them with the bearer credentials, and serves them once',
    { timeout: 120_000 },
    async () => {
      const run = ferry(['agent', 'run', '--home', home]);
      await untilStatus(sut, agent.agentId, 'Running');
      const base = `/v1/orgs/${sut.orgId}/agents/${agent.agentId}/logs`;
      const posted = await sut.request<{ logId: string }>('POST', base);
      expect(posted.status).toBe(201);
      const { logId } = posted.body;

      // From another address: refused, whether or not the archive is there yet.
      const fromElsewhere = await sut.request<{ code: string }>('GET', `${base}/${logId}`, { from: '127.0.0.2' });
      expect(fromElsewhere.status).toBe(403);

      const zip = await until('the archive', async () => {
        const res = await sut.request('GET', `${base}/${logId}`);
        if (res.status === 404) return undefined;
        return res;
      });
      expect(zip.status).toBe(200);
      expect(zip.headers['content-type']).toMatch(/application\/zip/);
      const entries = unzip(zip.raw);
      const names = [...entries.keys()];
      expect(names.length).toBeGreaterThan(0);
      expect(names.every((n) => /^agent\.\d{4}-\d{2}-\d{2}\.\d+\.log$/.test(n))).toBe(true);
      const text = [...entries.values()].map((b) => b.toString('utf8')).join('');
      const lines = text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as { agentId?: string; msg?: string });
      expect(lines.every((l) => l.agentId === agent.agentId)).toBe(true);
      expect(lines.some((l) => l.msg === 'channel connected')).toBe(true);
      const { agentSecret } = JSON.parse(fs.readFileSync(path.join(agent.dir, 'config.json'), 'utf8')) as {
        agentSecret: string;
      };
      expect(text).not.toContain(agentSecret);

      // One download per logId.
      expect((await sut.request('GET', `${base}/${logId}`)).status).toBe(410);
      // The temporary zip is gone from the Agent's folder (removed once the Agent has the upload's
      // answer, which may come a moment after the Service already serves the archive).
      const zips = (): string[] => fs.readdirSync(path.join(agent.dir, 'data')).filter((n) => n.endsWith('.zip'));
      expect(
        await until('the temporary zip to be removed', () => (zips().length === 0 ? true : undefined), 10_000),
      ).toBe(true);
      expect(await run.stop()).toBe(0);
    },
  );
});
