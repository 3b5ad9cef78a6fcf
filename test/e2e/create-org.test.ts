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
      const { stdout } = await run(
        process.execPath,
        [
          '--import',
          'tsx',
          'src/cli/main.ts',
          'service',
          'create-org',
          '--data-dir',
          dataDir,
          '--name',
          'Hosted Co',
          '--admin-email',
          'ops@hosted.test',
          '--platform-hosted',
          '--data-center',
          '13',
        ],
        { cwd: ROOT, env: { ...process.env, FERRY_DATABASE_URL: '', FERRY_LOG_LEVEL: 'silent' } },
      );
      const [, orgId, password] =
        stdout.match(/Organization (\d+) created; Administrator \S+ with password (\S+)/) ?? [];
      expect(orgId).toBeDefined();

      const svc = await startService({ name: 'sqlite' }, { dataDir });
      try {
        const auth = { email: 'ops@hosted.test', password: password as string };
        const org = await svc.request<{ isSvcOrg: boolean; dataCenterId: number; dataCenterName: string }>(
          'GET',
          `/v1/orgs/${orgId}`,
          { auth },
        );
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
        run(
          process.execPath,
          [
            '--import',
            'tsx',
            'src/cli/main.ts',
            'service',
            'create-org',
            '--data-dir',
            dataDir,
            '--name',
            'C',
            '--admin-email',
            'c@c.test',
            '--data-center',
            '12',
          ],
          {
            cwd: ROOT,
            env: { ...process.env, FERRY_DATABASE_URL: '' },
          },
        ),
      ).rejects.toMatchObject({ stderr: expect.stringMatching(/only for platform-hosted/) });
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
  });
});

describe('ferry service manage-connector', () => {
  it('makes an Organization the vendor of a private Connector, installed there; public ones are refused', async () => {
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-manage-'));
    const vendorDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-vendor-'));
    const id = '0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d';
    fs.mkdirSync(path.join(vendorDir, 'acme'));
    fs.writeFileSync(
      path.join(vendorDir, 'acme', 'manifest.json'),
      JSON.stringify({
        id,
        name: 'Acme',
        vendor: 'Acme',
        version: '1.0.0',
        sdkVersion: '^1.0.0',
        solutionRoles: ['Svc.IS2.Source'],
        isCloudSupported: false,
        isPublic: false,
        uiDecorations: [],
      }),
    );
    fs.writeFileSync(
      path.join(vendorDir, 'acme', 'index.js'),
      'export default { connect: async () => { throw new Error("x"); } };\n',
    );
    const env = {
      ...process.env,
      FERRY_DATABASE_URL: '',
      FERRY_LOG_LEVEL: 'silent',
      FERRY_CONNECTORS_DIR: vendorDir,
      FERRY_ADMIN_PASSWORD: 'Admin-password-1',
      FERRY_ADMIN_EMAIL: 'admin@ferry.test',
    };
    const cli = (...args: string[]) =>
      run(
        process.execPath,
        ['--import', 'tsx', 'src/cli/main.ts', 'service', 'manage-connector', '--data-dir', dataDir, ...args],
        { cwd: ROOT, env },
      );
    try {
      const { stdout } = await cli('--connector', id, '--vendor-org', '1');
      expect(stdout).toContain('Organization 1 now manages the Acme connector');
      await expect(
        cli('--connector', 'd2227fbd-50de-482d-9fa3-d5c685da7ba4', '--vendor-org', '1'),
      ).rejects.toMatchObject({ stderr: expect.stringContaining('is public') as string });
      await expect(cli('--connector', id, '--vendor-org', '999')).rejects.toMatchObject({
        stderr: expect.stringContaining('does not exist') as string,
      });
      const svc = await startService({ name: 'sqlite' }, { dataDir, connectorsDir: vendorDir });
      try {
        const market = await svc.request<Array<{ adapterTypeId: string; installed: boolean; isAssociated: boolean }>>(
          'GET',
          '/v1/marketplace/connectors?orgId=1',
        );
        expect(market.body.find((m) => m.adapterTypeId === id)).toMatchObject({ installed: true, isAssociated: true });
      } finally {
        await svc.close();
      }
    } finally {
      fs.rmSync(dataDir, { recursive: true, force: true });
      fs.rmSync(vendorDir, { recursive: true, force: true });
    }
  });
});
