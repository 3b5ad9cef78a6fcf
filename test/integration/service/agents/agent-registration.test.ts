import { execFileSync, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RegisterResponse } from '../../../../src/protocol/registration.js';
import { TestChannel, until } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface Provisioned {
  agentInstallationKey: string;
  agentInstallerLocation: string;
  expiresAt: string;
  installCommand: string;
}
interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}

const GUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe.each(STORE_TARGETS)('Agent provisioning and registration on $name', (target) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
  });
  afterAll(async () => svc?.close());

  const provision = async () =>
    (await svc.request<Provisioned>('POST', `/v1/orgs/${svc.orgId}/agents/provision_onpremise_agent`)).body;
  const register = (body: unknown) =>
    svc.request<RegisterResponse & Problem>('POST', '/v1/agent/register', { auth: null, body });
  const request = (key: string, extra: Record<string, unknown> = {}) => ({
    agentInstallationKey: key,
    machineName: 'reg-host',
    serviceName: 'ferry-agent-1',
    version: '1.0.0',
    fingerprint: 'fingerprint-0001',
    ...extra,
  });

  it('provisions a GUID key that expires in FERRY_AGENT_KEY_TTL, with the installer location of this Service', async () => {
    const before = Date.now();
    const res = await svc.request<Provisioned>('POST', `/v1/orgs/${svc.orgId}/agents/provision_onpremise_agent`);
    expect(res.status).toBe(200);
    expect(res.body.agentInstallationKey).toMatch(GUID_RE);
    expect(res.body.agentInstallerLocation).toBe(`${svc.url}/v1/agent/installer`);
    expect(res.body.installCommand).toBe(
      `curl -fsSL ${svc.url}/v1/agent/installer | sh -s -- ${res.body.agentInstallationKey}`,
    );
    const ttl = Date.parse(res.body.expiresAt) - before;
    expect(ttl).toBeGreaterThan(86_399_000);
    expect(ttl).toBeLessThan(86_401_000);
    const again = await provision();
    expect(again.agentInstallationKey).not.toBe(res.body.agentInstallationKey);
  });

  it('registers with the key over HTTP: 201, Location, identity and a secret that opens the channel', async () => {
    const key = (await provision()).agentInstallationKey;
    const res = await register(request(key, { name: 'Registered' }));
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ orgId: svc.orgId, name: 'Registered', heartbeatMs: 30_000 });
    expect(res.body.agentId).toMatch(GUID_RE);
    expect(res.body.agentSecret.length).toBeGreaterThanOrEqual(43);
    expect(res.headers['location']).toBe(`/v1/orgs/${svc.orgId}/agents/${res.body.agentId}`);
    const ch = await TestChannel.connect(svc, res.body);
    expect(await ch.hello({ fingerprint: 'fingerprint-0001', machineName: 'reg-host' })).toMatchObject({ ok: true });
    await ch.close();
  });

  it('accepts a key once: a second registration with it is refused with 409', async () => {
    const key = (await provision()).agentInstallationKey;
    expect((await register(request(key))).status).toBe(201);
    const again = await register(request(key, { fingerprint: 'fingerprint-0002' }));
    expect(again.status).toBe(409);
    expect(again.body.code).toBe('AGT_INSTALLATION_KEY_USED');
  });

  it('lets exactly one of two simultaneous registrations with a key through', async () => {
    const key = (await provision()).agentInstallationKey;
    const results = await Promise.all([
      register(request(key, { machineName: 'race-a' })),
      register(request(key, { machineName: 'race-b' })),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([201, 409]);
  });

  it('gives Agents of one machine registering at the same moment numbered names instead of refusing one', async () => {
    const keys = await Promise.all(Array.from({ length: 6 }, () => provision()));
    const results = await Promise.all(
      keys.map((k, i) =>
        register(request(k.agentInstallationKey, { machineName: 'twin-host', fingerprint: `fingerprint-twin-${i}` })),
      ),
    );
    expect(results.map((r) => r.status)).toEqual([201, 201, 201, 201, 201, 201]);
    expect(results.map((r) => r.body.name).sort()).toEqual([
      'twin-host',
      'twin-host 2',
      'twin-host 3',
      'twin-host 4',
      'twin-host 5',
      'twin-host 6',
    ]);
  });

  it('refuses an unknown key with 401', async () => {
    const res = await register(request('3f2504e0-4f89-41d3-9a0c-0305e82c3301'));
    expect(res.status).toBe(401);
    expect(res.body.code).toBe('AGT_INSTALLATION_KEY_INVALID');
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
  });

  it('refuses bad bodies with 400 and the field names', async () => {
    const key = (await provision()).agentInstallationKey;
    const cases: Array<[unknown, string]> = [
      [{}, 'body.agentInstallationKey'],
      [request(key, { fingerprint: 'short' }), 'body.fingerprint'],
      [request(key, { machineName: '' }), 'body.machineName'],
      [request(key, { version: 'v'.repeat(51) }), 'body.version'],
      [request(key, { isAdmin: true }), 'body.isAdmin'],
      [request(key, { machineName: 42 }), 'body.machineName'],
    ];
    for (const [body, field] of cases) {
      const res = await register(body);
      expect(res.status, field).toBe(400);
      expect(
        res.body.errors?.map((e) => e.path),
        field,
      ).toContain(field);
    }
    for (const raw of ['{bad', '[]', 'null', '"x"']) expect((await register(raw)).status, raw).toBe(400);
    // None of that used the key.
    expect((await register(request(key))).status).toBe(201);
  });

  it('serves the installer script: POSIX sh, needs Node.js and the key, points at this Service', async () => {
    const res = await svc.request('GET', '/v1/agent/installer', { auth: null });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/^text\/x-shellscript/);
    expect(res.text).toMatch(/^#!\/bin\/sh\n/);
    expect(res.text).toContain(`SERVICE_URL='${svc.url}'`);
    expect(res.text).toContain(`PACKAGE_URL='${svc.url}/v1/agent/package.tgz'`);
    expect(res.text).toContain('agent install --home "$FERRY_AGENT_HOME" --key "$KEY" --service "$SERVICE_URL"');
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-installer-'));
    try {
      const script = path.join(dir, 'install.sh');
      fs.writeFileSync(script, res.text);
      expect(spawnSync('/bin/sh', ['-n', script]).status).toBe(0);
      const noKey = spawnSync('/bin/sh', [script], { encoding: 'utf8' });
      expect(noKey.status).toBe(1);
      expect(noKey.stderr).toContain('usage');
      const noNode = spawnSync('/bin/sh', [script, '3f2504e0-4f89-41d3-9a0c-0305e82c3301'], {
        encoding: 'utf8',
        env: { PATH: dir },
      });
      expect(noNode.status).toBe(1);
      expect(noNode.stderr).toContain('Node.js 20 or newer is required');
      const evilKey = spawnSync('/bin/sh', [script, 'x;rm -rf /'], { encoding: 'utf8' });
      expect(evilKey.stderr).toContain('unexpected characters');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a Host header that is not a host name instead of writing it into the script', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = http.request(
        `${svc.url}/v1/agent/installer`,
        { headers: { host: "evil';touch /tmp/x;'" } },
        (res) => {
          res.resume();
          resolve(res.statusCode ?? 0);
        },
      );
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(400);
  });

  it('serves the Ferry package as a gzipped tar laid out like npm pack', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-package-'));
    try {
      const file = path.join(dir, 'ferry.tgz');
      const { status, type } = await new Promise<{ status: number; type: string }>((resolve, reject) => {
        http
          .get(`${svc.url}/v1/agent/package.tgz`, (res) => {
            const out = fs.createWriteStream(file);
            res.pipe(out);
            out.on('finish', () => resolve({ status: res.statusCode ?? 0, type: String(res.headers['content-type']) }));
          })
          .on('error', reject);
      });
      expect(status).toBe(200);
      expect(type).toBe('application/gzip');
      const names = execFileSync('tar', ['-tzf', file], { encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 }).split('\n');
      expect(names).toContain('package/package.json');
      expect(names).toContain('package/dist/src/cli/main.js');
      expect(names.every((n) => n === '' || n.startsWith('package/'))).toBe(true);
      expect(names.some((n) => n.startsWith('package/node_modules/') || n.startsWith('package/test/'))).toBe(false);
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});

describe.each(STORE_TARGETS)('installation key expiry on $name', (target) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(target, { agentKeyTtl: 0.2, cloudAgents: 'off' });
  });
  afterAll(async () => svc?.close());

  it('refuses an expired key with 410', async () => {
    const key = await svc.request<Provisioned>('POST', `/v1/orgs/${svc.orgId}/agents/provision_onpremise_agent`);
    await until(async () => (Date.now() > Date.parse(key.body.expiresAt) ? true : undefined), 'the key to expire');
    const res = await svc.request<Problem>('POST', '/v1/agent/register', {
      auth: null,
      body: {
        agentInstallationKey: key.body.agentInstallationKey,
        machineName: 'late',
        serviceName: 'ferry-agent-1',
        version: '1.0.0',
        fingerprint: 'fingerprint-late',
      },
    });
    expect(res.status).toBe(410);
    expect(res.body.code).toBe('AGT_INSTALLATION_KEY_EXPIRED');
  });
});

describe('the installer behind FERRY_PUBLIC_URL', () => {
  it('points at the public URL, not the address it was called on', async () => {
    const svc = await startService({ name: 'sqlite' }, { publicUrl: 'https://ferry.example.com/', cloudAgents: 'off' });
    try {
      const key = await svc.request<Provisioned>('POST', `/v1/orgs/${svc.orgId}/agents/provision_onpremise_agent`);
      expect(key.body.agentInstallerLocation).toBe('https://ferry.example.com/v1/agent/installer');
      const script = await svc.request('GET', '/v1/agent/installer', { auth: null });
      expect(script.text).toContain("SERVICE_URL='https://ferry.example.com'");
    } finally {
      await svc.close();
    }
  });
});
