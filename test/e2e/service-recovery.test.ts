/**
 * The operator's recovery commands, run as real processes against the store of a running Service:
 * `ferry service allow` after a wrong FERRY_BOOTSTRAP_ALLOW locked every address out, and
 * `ferry service set-password` when an administrator's password is lost.
 */
import { spawn } from 'node:child_process';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { serviceData, type ServiceData } from '../helpers/service-on-dir.js';
import type { TestService } from '../helpers/service.js';
import { STORE_TARGETS } from '../helpers/stores.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs `ferry service …` on the data of `data`, writing `input` to its stdin (then closing it). */
function ferryService(data: ServiceData, args: string[], input = ''): Promise<Run> {
  const store = data.databaseUrl ? ['--database-url', data.databaseUrl] : [];
  const child = spawn(
    process.execPath,
    ['--import', 'tsx', 'src/cli/main.ts', 'service', ...args, '--data-dir', data.dataDir, ...store],
    {
      cwd: ROOT,
      env: { ...process.env, FERRY_DATABASE_URL: '', FERRY_LOG_LEVEL: 'silent' },
      stdio: ['pipe', 'pipe', 'pipe'],
    },
  );
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => (stdout += c.toString('utf8')));
  child.stderr.on('data', (c: Buffer) => (stderr += c.toString('utf8')));
  child.stdin.end(input);
  return new Promise((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => resolve({ code, stdout, stderr }));
  });
}

interface Problem {
  code: string;
  detail: string;
}

describe.each(STORE_TARGETS)('operator recovery on $name', (target) => {
  let data: ServiceData;
  let svc: TestService;

  beforeAll(async () => {
    // A typo in FERRY_BOOTSTRAP_ALLOW: the only Security Rule opens the API to an address nobody calls from.
    data = await serviceData(target, { bootstrapAllow: '10.0.0.99' });
    svc = await data.start();
  });
  afterAll(async () => {
    await svc?.close();
    await data?.dispose();
  });

  it('ferry service allow opens the API again after a wrong FERRY_BOOTSTRAP_ALLOW, as the 403 says', async () => {
    const refused = await svc.request<Problem>('GET', `/v1/orgs/${svc.orgId}`);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('API_FORBIDDEN_IP');
    expect(refused.body.detail).toContain(`ferry service allow --org ${svc.orgId} 127.0.0.1`);

    const bad = await ferryService(data, ['allow', '--org', String(svc.orgId), 'not-an-address']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/Invalid IP range "not-an-address"/);
    const unknown = await ferryService(data, ['allow', '--org', '999999', '127.0.0.1']);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toContain('Organization 999999 does not exist');

    const run = await ferryService(data, ['allow', '--org', String(svc.orgId), '127.0.0.1', '192.168.10.0/24']);
    expect(run.stderr).toBe('');
    expect(run.code).toBe(0);
    expect(run.stdout).toContain(`added to Organization ${svc.orgId}: API access from 127.0.0.1`);
    expect(run.stdout).toContain('API access from 192.168.10.0-192.168.10.255');

    // The running Service reads the rules on each request: no restart needed.
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}`)).status).toBe(200);
    const rules = await svc.request<Array<{ allowedIpRangeStartAddress: string; apiAccessEnabled: boolean }>>(
      'GET',
      `/v1/orgs/${svc.orgId}/securityrules`,
    );
    expect(rules.body.map((r) => r.allowedIpRangeStartAddress)).toEqual(
      expect.arrayContaining(['10.0.0.99', '127.0.0.1', '192.168.10.0']),
    );
  });

  it('ferry service set-password sets a password read from stdin, or generates one and prints it once', async () => {
    const email = svc.admin.email;
    const chosen = 'Chosen-password-2';
    const set = await ferryService(data, ['set-password', '--email', email.toUpperCase()], `${chosen}\n`);
    expect(set.stderr).toBe('');
    expect(set.stdout).toBe(`Password of ${email} changed.\n`);
    expect(set.stdout).not.toContain(chosen);

    const old = await svc.request<Problem>('GET', '/v1/orgs');
    expect(old.status).toBe(401);
    expect(old.body.detail).toContain('were refused');
    expect((await svc.request('GET', '/v1/orgs', { auth: { email, password: chosen } })).status).toBe(200);

    const generated = await ferryService(data, ['set-password', '--email', email]);
    const password = /New password of \S+: (\S+)\s+\(generated now and shown only once\)/.exec(generated.stdout)?.[1];
    expect(password).toBeDefined();
    expect((await svc.request('GET', '/v1/orgs', { auth: { email, password: password as string } })).status).toBe(200);
    expect((await svc.request('GET', '/v1/orgs', { auth: { email, password: chosen } })).status).toBe(401);

    const short = await ferryService(data, ['set-password', '--email', email], 'short\n');
    expect(short.code).toBe(1);
    expect(short.stderr).toContain('8 to 1024 characters');
    // Basic authentication refuses a password with a NUL, so none is set.
    const nul = await ferryService(data, ['set-password', '--email', email], 'Has-a-\u0000-in-it\n');
    expect(nul.code).toBe(1);
    expect(nul.stderr).toContain('cannot contain the NUL character');
    const nobody = await ferryService(data, ['set-password', '--email', 'nobody@ferry.test', '--generate']);
    expect(nobody.code).toBe(1);
    expect(nobody.stderr).toContain('No user has the email nobody@ferry.test');
  });
});
