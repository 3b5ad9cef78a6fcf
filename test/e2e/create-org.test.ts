import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { startService } from '../helpers/service.js';

const run = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');

describe('ferry service create-org', () => {
  it('adds a platform-hosted root Organization whose administrator can log in, and which refuses changes', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-create-org-'));
    try {
      const { stdout } = await run(process.execPath, [
        '--import', 'tsx', 'src/cli/main.ts', 'service', 'create-org',
        '--data-dir', dataDir, '--name', 'Hosted Co', '--admin-email', 'ops@hosted.test', '--platform-hosted', '--data-center', '13',
      ], { cwd: ROOT, env: { ...process.env, FERRY_DATABASE_URL: '', FERRY_LOG_LEVEL: 'silent' } });
      const [, orgId, password] = stdout.match(/Organization (\d+) created; Administrator \S+ with password (\S+)/) ?? [];
      expect(orgId).toBeDefined();

      const svc = await startService({ name: 'sqlite' }, { dataDir });
      try {
        const auth = { email: 'ops@hosted.test', password: password as string };
        const org = await svc.request<{ isSvcOrg: boolean; dataCenterId: number; dataCenterName: string }>('GET', `/v1/orgs/${orgId}`, { auth });
        expect(org.status).toBe(200);
        expect(org.body).toMatchObject({ isSvcOrg: true, dataCenterId: 13 });
        const put = await svc.request<{ code: string }>('PUT', `/v1/orgs/${orgId}`, { auth, body: { name: 'x' } });
        expect(put.body.code).toBe('API_PLATFORM_HOSTED');
        // The bootstrap of the Service saw an existing root and created nothing.
        expect(svc.service.bootstrap.created).toBe(false);
      } finally {
        await svc.close();
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });

  it('refuses a platform-only data center for a classic Organization', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-create-org-'));
    try {
      await expect(
        run(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'service', 'create-org', '--data-dir', dataDir, '--name', 'C', '--admin-email', 'c@c.test', '--data-center', '12'], {
          cwd: ROOT,
          env: { ...process.env, FERRY_DATABASE_URL: '' },
        }),
      ).rejects.toMatchObject({ stderr: expect.stringMatching(/only for platform-hosted/) });
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});
