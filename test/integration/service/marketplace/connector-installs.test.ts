import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decryptProperty, encryptProperty } from '../../../../service/connections/properties-crypto.js';
import { setManagedConnectorVendor } from '../../../../service/store/repos/connector-installs.repo.js';
import { sha256, unpackFiles } from '../../../../src/connectors/package.js';
import { TestChannel, registerTestAgent, until, type Incoming, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const POSTGRES = '18cc2a91-e317-4972-9c24-be9fc63775ab';
const SQLITE_NAME = 'SQLite';
const PRIVATE = '7c1e6a52-1f0b-4d7e-9a55-2b1f3c4d5e6f';

interface Problem {
  code: string;
  detail: string;
}
interface MarketplaceEntry {
  adapterTypeId: string;
  name: string;
  installed: boolean;
  isPublic: boolean;
  isLocked: boolean;
  isAssociated: boolean;
  version: { major: number; minor: number; build: number; revision: number };
  status: string | null;
  agentInstallStatuses: Array<{
    agentId: string;
    agentName: string;
    status: string;
    version: string;
    error: string | null;
  }>;
}

/** A private (Managed) Connector: a self-contained plugin in the operator's extra folder. */
function privateConnectorDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-vendor-'));
  const folder = path.join(dir, 'acme');
  fs.mkdirSync(folder);
  fs.writeFileSync(
    path.join(folder, 'manifest.json'),
    JSON.stringify({
      id: PRIVATE,
      name: 'Acme ERP',
      description: 'The Acme ERP, for Acme customers only.',
      vendor: 'Acme',
      version: '2.1.0',
      sdkVersion: '^1.0.0',
      main: 'index.js',
      solutionRoles: ['Svc.IS2.Source'],
      isCloudSupported: true,
      isPublic: false,
      uiDecorations: [{ propertyName: 'apiKey', label: 'API key', inputType: 'Password', isRequired: true }],
    }),
  );
  fs.writeFileSync(
    path.join(folder, 'index.js'),
    'export default { connect: async () => { throw new Error("offline"); } };\n',
  );
  return dir;
}

describe.each(STORE_TARGETS)('Connector installs, versions, Marketplace and Managed Connectors on $name', (target) => {
  let svc: TestService;
  let K: string;
  let C: string;
  let token: string;
  const channels: TestChannel[] = [];
  const vendorDir = privateConnectorDir();

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off', connectorsDir: vendorDir });
    K = `/v1/orgs/${svc.orgId}/connectors`;
    C = `/v1/orgs/${svc.orgId}/connections`;
    token = (await svc.request<{ apiCryptoToken: string }>('GET', `/v1/orgs/${svc.orgId}/SecuritySettings`)).body
      .apiCryptoToken;
  });
  afterAll(async () => {
    await Promise.all(channels.map((c) => c.close()));
    await svc?.close();
    fs.rmSync(vendorDir, { recursive: true, force: true });
  });

  const connect = async (agent: TestAgent, installed: Array<{ connectorId: string; version: string }> = []) => {
    const ch = await TestChannel.connect(svc, agent);
    channels.push(ch);
    await ch.hello(agent, { installedConnectors: installed });
    return ch;
  };
  const commandsOf = (ch: TestChannel, type: string) => ch.received.filter((m) => m['type'] === type);
  const marketplace = async (orgId = svc.orgId, query = '') =>
    (await svc.request<MarketplaceEntry[]>('GET', `/v1/marketplace/connectors?orgId=${orgId}${query}`)).body;
  const childOrg = async (name: string) =>
    (
      await svc.request<{ id: number }>('POST', '/v1/orgs', {
        body: {
          name,
          parentId: svc.orgId,
          securityRules: [
            {
              name: 'lo',
              allowedIpRangeStartAddress: '127.0.0.1',
              allowedIpRangeEndAddress: '127.0.0.1',
              apiAccessEnabled: true,
            },
          ],
        },
      })
    ).body.id;

  it("gives a connecting Agent the Organization's Connectors: a package it downloads with its credentials, whose SHA-256 matches, and the statuses it reports", async () => {
    const agent = await registerTestAgent(svc, { name: 'Fresh' });
    const ch = await connect(agent);
    const installs = await until(
      async () => (commandsOf(ch, 'installConnector').length === 7 ? commandsOf(ch, 'installConnector') : undefined),
      'seven install commands',
    );
    expect(installs.map((c) => c['name']).sort()).toEqual([
      'CSV',
      'HTTP / JSON API',
      'MariaDB',
      'NATS JetStream',
      'PostgreSQL',
      'RabbitMQ',
      SQLITE_NAME,
    ]);
    const csv = installs.find((c) => c['connectorId'] === CSV) as Incoming;
    expect(csv).toMatchObject({ version: '1.0.0', sha256: expect.stringMatching(/^[0-9a-f]{64}$/) as string });
    expect(String(csv['packageUrl'])).toBe(`${svc.url}/v1/agent/connectors/${CSV}/1.0.0/package`);

    const download = await fetch(String(csv['packageUrl']), {
      headers: { authorization: `Bearer ${agent.agentId}.${agent.agentSecret}` },
    });
    expect(download.status).toBe(200);
    const tgz = Buffer.from(await download.arrayBuffer());
    expect(tgz.length).toBe(csv['size']);
    expect(sha256(tgz)).toBe(csv['sha256']);
    const files = unpackFiles(tgz);
    expect(files.map((f) => f.name).sort()).toEqual(['index.mjs', 'manifest.json']);
    expect(JSON.parse(files.find((f) => f.name === 'manifest.json')!.data.toString())).toMatchObject({
      id: CSV,
      version: '1.0.0',
      main: 'index.mjs',
    });
    // The SDK is bundled in; Ferry's own dependencies stay imports the Agent resolves.
    const code = files.find((f) => f.name === 'index.mjs')!.data.toString();
    expect(code).not.toContain('../../src/connectors');
    expect(code).toMatch(/from ["']zod["']/);
    expect((await fetch(String(csv['packageUrl']))).status).toBe(401);
    expect(
      (await fetch(String(csv['packageUrl']), { headers: { authorization: `Bearer ${agent.agentId}.wrong` } })).status,
    ).toBe(401);

    // Nothing answered yet: the Service is still sending.
    const before = (await marketplace()).find((m) => m.adapterTypeId === CSV)!;
    expect(before.agentInstallStatuses.find((s) => s.agentId === agent.agentId)?.status).toBe(
      'SendingCommandToTheAgent',
    );
    ch.send({ re: csv['id'], ok: true, result: { received: true } });
    await until(
      async () =>
        (await marketplace())
          .find((m) => m.adapterTypeId === CSV)!
          .agentInstallStatuses.find((s) => s.agentId === agent.agentId)?.status === 'AgentReceivedCommand'
          ? true
          : undefined,
      'AgentReceivedCommand',
    );
    await ch.report({
      kind: 'connectorInstall',
      operation: 'install',
      connectorId: CSV,
      version: '1.0.0',
      status: 'AgentDownloadingConnectorUpdate',
      installed: [],
    });
    expect(
      (await marketplace())
        .find((m) => m.adapterTypeId === CSV)!
        .agentInstallStatuses.find((s) => s.agentId === agent.agentId)?.status,
    ).toBe('AgentDownloadingConnectorUpdate');
    await ch.report({
      kind: 'connectorInstall',
      operation: 'install',
      connectorId: CSV,
      version: '1.0.0',
      status: 'Installed',
      installed: [{ connectorId: CSV, version: '1.0.0' }],
    });
    const after = (await marketplace()).find((m) => m.adapterTypeId === CSV)!;
    expect(after.agentInstallStatuses.find((s) => s.agentId === agent.agentId)).toMatchObject({
      agentName: 'Fresh',
      status: 'Installed',
      version: '1.0.0',
      error: null,
    });
    expect(
      (await svc.request<Array<{ id: string }>>('GET', `${K}?agentId=${agent.agentId}`)).body.map((c) => c.id),
    ).toEqual([CSV]);
    // A late acknowledgement moves nothing back.
    const pg = installs.find((c) => c['connectorId'] === POSTGRES) as Incoming;
    await ch.report({
      kind: 'connectorInstall',
      operation: 'install',
      connectorId: POSTGRES,
      version: '1.0.0',
      status: 'InstallFailed',
      error: { code: 'CON_PACKAGE_CHECKSUM', kind: 'transient', message: 'checksum mismatch' },
      installed: [{ connectorId: CSV, version: '1.0.0' }],
    });
    ch.send({ re: pg['id'], ok: true, result: { received: true } });
    await new Promise((r) => setTimeout(r, 200));
    expect(
      (await marketplace())
        .find((m) => m.adapterTypeId === POSTGRES)!
        .agentInstallStatuses.find((s) => s.agentId === agent.agentId),
    ).toMatchObject({ status: 'InstallFailed', error: 'checksum mismatch' });

    // Installs nobody finished time out.
    const timedOut = await svc.service.connectors.sweep(Date.now() + 3_600_000);
    expect(timedOut).toBeGreaterThanOrEqual(1);
    expect(
      (await marketplace())
        .find((m) => m.name === SQLITE_NAME)!
        .agentInstallStatuses.find((s) => s.agentId === agent.agentId)?.status,
    ).toBe('InstallTimedOut');
    await ch.close();
  });

  it('uninstalls from all Agents, refuses while a Connection uses the Connector, and installs again', async () => {
    const agent = await registerTestAgent(svc, { name: 'Holder' });
    const ch = await connect(agent, [
      { connectorId: CSV, version: '1.0.0' },
      { connectorId: POSTGRES, version: '1.0.0' },
    ]);
    ch.autoReply = (cmd) => ({ re: cmd['id'], ok: true, result: { received: true } });
    const conn = await svc.request<{ id: string }>('POST', C, {
      body: {
        name: 'Files',
        connectorId: CSV,
        color: '#FF000000',
        properties: [{ key: 'folder', value: encryptProperty('/tmp', token) }],
      },
    });
    expect(conn.status).toBe(201);
    const refused = await svc.request<Problem & { connections?: string[] }>('DELETE', `${K}/${CSV}/delete`);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('CON_IN_USE');
    expect(refused.body.detail).toContain('Files');
    expect((await svc.request('DELETE', `${C}/${conn.body.id}`)).status).toBe(204);
    expect((await svc.request('DELETE', `${K}/${CSV}/delete`)).status).toBe(204);
    await until(
      async () =>
        commandsOf(ch, 'uninstallConnector').some((c) => String(c['connectorId']).toLowerCase() === CSV)
          ? true
          : undefined,
      'the uninstall command',
    );
    expect((await svc.request<Array<{ id: string }>>('GET', K)).body.map((c) => c.id)).not.toContain(CSV);
    expect((await svc.request<Problem>('DELETE', `${K}/${CSV}/delete`)).body.code).toBe('CON_NOT_INSTALLED');
    const blocked = await svc.request<Problem>('POST', C, {
      body: { name: 'Again', connectorId: CSV, color: '#FF000000' },
    });
    expect(blocked.status).toBe(409);
    expect(blocked.body.code).toBe('CON_NOT_INSTALLED');
    await ch.report({
      kind: 'connectorInstall',
      operation: 'uninstall',
      connectorId: CSV,
      version: '1.0.0',
      status: 'Installed',
      installed: [{ connectorId: POSTGRES, version: '1.0.0' }],
    });
    expect((await marketplace()).find((m) => m.adapterTypeId === CSV)).toMatchObject({ installed: false });

    const reinstalled = await svc.request<{ id: string; version: string }>('POST', `${K}/${CSV}/install`);
    expect(reinstalled.status).toBe(200);
    expect(reinstalled.body).toMatchObject({ id: CSV, version: '1.0.0' });
    await until(
      async () => (commandsOf(ch, 'installConnector').some((c) => c['connectorId'] === CSV) ? true : undefined),
      'the install command',
    );
    expect((await svc.request<Array<{ id: string }>>('GET', K)).body.map((c) => c.id)).toContain(CSV);
    const user = await addUser(svc, svc.orgId, 'User');
    expect((await svc.request('POST', `${K}/${CSV}/install`, { auth: user })).status).toBe(403);
    expect((await svc.request<Problem>('POST', `${K}/${PRIVATE}/install`)).status).toBe(404);
    await ch.close();
  });

  it('locks only the current production version, and unlocks', async () => {
    const lock = `${K}/${POSTGRES}/version`;
    expect((await svc.request('GET', lock)).body).toMatchObject({ isLocked: 'false', version: '1.0.0' });
    const wrong = await svc.request<Problem>('PUT', `${lock}?isLocked=true&updateVersion=0.9.0`);
    expect(wrong.status).toBe(400);
    expect(wrong.body.code).toBe('CON_VERSION_NOT_LOCKABLE');
    expect((await svc.request<Problem>('PUT', lock)).status).toBe(400);
    const locked = await svc.request<Record<string, unknown>>('PUT', `${lock}?updateVersion=1.0.0`);
    expect(locked.status).toBe(200);
    expect(locked.body).toMatchObject({ isLocked: 'true', version: '1.0.0', modificationBy: svc.admin.email });
    expect(typeof locked.body['creationDate']).toBe('string');
    expect((await marketplace()).find((m) => m.adapterTypeId === POSTGRES)).toMatchObject({
      isLocked: true,
      version: { major: 1, minor: 0, build: 0, revision: 0 },
    });
    const ro = await addUser(svc, svc.orgId, 'ReadOnly');
    expect((await svc.request('PUT', `${lock}?isLocked=false&updateVersion=1.0.0`, { auth: ro })).status).toBe(403);
    expect((await svc.request('PUT', `${lock}?isLocked=false&updateVersion=1.0.0`)).body).toMatchObject({
      isLocked: 'false',
      version: '1.0.0',
    });
  });

  it('lists the Marketplace: filterByName OR filterByDescription, and without orgId the public Connectors installed in your Organizations', async () => {
    const all = await marketplace();
    expect(all.map((m) => m.name).sort()).toEqual([
      'CSV',
      'HTTP / JSON API',
      'MariaDB',
      'NATS JetStream',
      'PostgreSQL',
      'RabbitMQ',
      SQLITE_NAME,
    ]);
    expect((await marketplace(svc.orgId, '&filterByName=sql')).map((m) => m.name).sort()).toEqual([
      'PostgreSQL',
      SQLITE_NAME,
    ]);
    // CSV by name, PostgreSQL by its description ("COPY"): either matches.
    expect(
      (await marketplace(svc.orgId, '&filterByName=csv&filterByDescription=copy')).map((m) => m.name).sort(),
    ).toEqual(['CSV', 'PostgreSQL']);
    expect(await marketplace(svc.orgId, '&filterByName=nothing-like-it')).toEqual([]);
    const noOrg = await svc.request<MarketplaceEntry[]>('GET', '/v1/marketplace/connectors');
    expect(noOrg.status).toBe(200);
    expect(noOrg.body.every((m) => m.isPublic)).toBe(true);
    expect(noOrg.body.map((m) => m.name)).toContain('PostgreSQL');
    const outsider = await addUser(svc, undefined, 'Administrator');
    expect((await svc.request('GET', `/v1/marketplace/connectors?orgId=${svc.orgId}`, { auth: outsider })).status).toBe(
      404,
    );
    expect((await svc.request('GET', '/v1/marketplace/connectors', { auth: null })).status).toBe(401);
  });

  it('shows a Managed Connector only to its vendor and the customers it grants, and installs it there', async () => {
    const vendor = await childOrg('Acme (vendor)');
    const customer = await childOrg('Customer Co');
    expect((await marketplace(vendor)).map((m) => m.adapterTypeId)).not.toContain(PRIVATE);
    expect(
      (await svc.request<Problem>('GET', `/v1/orgs/${vendor}/managedconnectors/${PRIVATE}/customers`)).body.code,
    ).toBe('CON_NOT_MANAGED');
    await setManagedConnectorVendor(svc.service.store.db, PRIVATE, vendor, new Date().toISOString());
    expect((await marketplace(vendor)).find((m) => m.adapterTypeId === PRIVATE)).toMatchObject({
      isPublic: false,
      isAssociated: true,
      installed: false,
    });
    expect((await marketplace(customer)).map((m) => m.adapterTypeId)).not.toContain(PRIVATE);
    expect((await svc.request(`GET`, `/v1/orgs/${customer}/connectors/${PRIVATE}`)).status).toBe(404);

    const granted = await svc.request<Record<string, unknown>>(
      'POST',
      `/v1/orgs/${vendor}/managedconnectors/${PRIVATE}/customers/${customer}`,
    );
    expect(granted.status).toBe(200);
    expect(granted.body).toMatchObject({ orgId: customer, orgName: 'Customer Co', provisionedBy: svc.admin.email });
    const list = await svc.request<Array<{ orgId: number }>>(
      'GET',
      `/v1/orgs/${vendor}/managedconnectors/${PRIVATE}/customers`,
    );
    expect(list.body.map((c) => c.orgId)).toEqual([customer]);
    const managed = await svc.request<Array<{ id: string; customers?: Array<{ orgId: number }> }>>(
      'GET',
      `/v1/orgs/${vendor}/managedconnectors`,
    );
    expect(managed.body.map((m) => m.id)).toEqual([PRIVATE]);
    expect(managed.body[0]?.customers).toBeUndefined();
    const shown = await svc.request<Array<{ customers?: Array<{ orgId: number }> }>>(
      'GET',
      `/v1/orgs/${vendor}/managedconnectors?showCustomers=true&name=eRp`,
    );
    expect(shown.body.map((m) => m.customers?.map((c) => c.orgId))).toEqual([[customer]]);
    expect(
      (await svc.request<unknown[]>('GET', `/v1/orgs/${vendor}/managedconnectors?name=nothing-like-it`)).body,
    ).toEqual([]);
    expect((await svc.request<unknown[]>('GET', `/v1/orgs/${customer}/managedconnectors`)).body).toEqual([]);
    const one = await svc.request<{ id: string; customers?: Array<{ orgId: number }> }>(
      'GET',
      `/v1/orgs/${vendor}/managedconnectors/${PRIVATE}?showCustomers=true`,
    );
    expect(one.body).toMatchObject({ id: PRIVATE, customers: [{ orgId: customer }] });
    expect((await svc.request<Problem>('GET', `/v1/orgs/${customer}/managedconnectors/${PRIVATE}`)).body.code).toBe(
      'CON_NOT_MANAGED',
    );
    expect(list.headers['x-total-count'] ?? String(list.body.length)).toBe('1');
    expect((await marketplace(customer)).find((m) => m.adapterTypeId === PRIVATE)).toMatchObject({
      installed: true,
      isAssociated: true,
      version: { major: 2, minor: 1, build: 0 },
    });
    expect(
      (await svc.request<Array<{ id: string }>>('GET', `/v1/orgs/${customer}/connectors`)).body.map((c) => c.id),
    ).toContain(PRIVATE);
    // Only the vendor manages it.
    expect(
      (await svc.request<Problem>('POST', `/v1/orgs/${customer}/managedconnectors/${PRIVATE}/customers/${vendor}`)).body
        .code,
    ).toBe('CON_NOT_MANAGED');
    expect(
      (await svc.request<Problem>('POST', `/v1/orgs/${vendor}/managedconnectors/${PRIVATE}/customers/999999`)).status,
    ).toBe(404);

    expect(
      (await svc.request('DELETE', `/v1/orgs/${vendor}/managedconnectors/${PRIVATE}/customers/${customer}`)).status,
    ).toBe(204);
    expect((await marketplace(customer)).map((m) => m.adapterTypeId)).not.toContain(PRIVATE);
    expect(
      (await svc.request<Array<{ id: string }>>('GET', `/v1/orgs/${customer}/connectors`)).body.map((c) => c.id),
    ).not.toContain(PRIVATE);
    expect(
      (await svc.request('DELETE', `/v1/orgs/${vendor}/managedconnectors/${PRIVATE}/customers/${customer}`)).status,
    ).toBe(404);
  });

  it("follows the Subscription's Connection limit: connectionLimitReached, then 409 CON_LIMIT_REACHED", async () => {
    const org = await childOrg('Limited');
    const t = (await svc.request<{ apiCryptoToken: string }>('GET', `/v1/orgs/${org}/SecuritySettings`)).body
      .apiCryptoToken;
    await svc.service.store.db
      .updateTable('subscriptions')
      .set({ connectionsPerConnector: 1 })
      .where('orgId', '=', org)
      .execute();
    const reached = async () =>
      (await svc.request<{ connectionLimitReached: boolean }>('GET', `/v1/orgs/${org}/connectors/${CSV}`)).body
        .connectionLimitReached;
    expect(await reached()).toBe(false);
    const body = (name: string) => ({
      name,
      connectorId: CSV,
      color: '#FF000000',
      properties: [{ key: 'folder', value: encryptProperty('/tmp', t) }],
    });
    expect((await svc.request('POST', `/v1/orgs/${org}/connections`, { body: body('One') })).status).toBe(201);
    expect(await reached()).toBe(true);
    expect(
      (
        await svc.request<Array<{ id: string; connectionLimitReached: boolean }>>('GET', `/v1/orgs/${org}/connectors`)
      ).body.find((c) => c.id === CSV)?.connectionLimitReached,
    ).toBe(true);
    const second = await svc.request<Problem>('POST', `/v1/orgs/${org}/connections`, { body: body('Two') });
    expect(second.status).toBe(409);
    expect(second.body.code).toBe('CON_LIMIT_REACHED');
    // Other Connectors have their own count.
    expect(
      (await svc.request<{ connectionLimitReached: boolean }>('GET', `/v1/orgs/${org}/connectors/${POSTGRES}`)).body
        .connectionLimitReached,
    ).toBe(false);
  });

  it('runs a preconnect step on an Agent: Requested, then Completed with the reply and the properties it answered with', async () => {
    const agent = await registerTestAgent(svc, { name: 'OAuth' });
    const ch = await connect(agent, [
      { connectorId: CSV, version: '1.0.0' },
      { connectorId: POSTGRES, version: '1.0.0' },
    ]);
    let release: (() => void) | undefined;
    const gate = new Promise<void>((r) => (release = r));
    ch.autoReply = (cmd) => {
      if (cmd['type'] !== 'preconnect') return { re: cmd['id'], ok: true, result: { received: true } };
      void gate.then(() =>
        ch.send({
          re: cmd['id'],
          ok: true,
          result: {
            reply: 'SUCCESS',
            authorizationUrl: 'https://login.example.test/authorize',
            properties: { refreshToken: 'r-123' },
          },
        }),
      );
      return undefined;
    };
    const started = await svc.request<{ id: string; commandId: string; status: string; name: string }>(
      'POST',
      `${K}/${POSTGRES}/preconnect?agentId=${agent.agentId}&isOauth=true`,
      {
        body: {
          properties: [
            { key: 'host', value: encryptProperty('db.example.test', token) },
            { key: 'password', value: encryptProperty('s3cret', token) },
          ],
        },
      },
    );
    expect(started.status).toBe(200);
    expect(started.body).toMatchObject({ status: 'Requested', name: 'PostgreSQL' });
    const cmd = await ch.next((m) => m['type'] === 'preconnect');
    expect(cmd).toMatchObject({
      connectorId: POSTGRES,
      isOauth: true,
      properties: { host: 'db.example.test', password: 's3cret' },
    });
    release?.();
    const done = await until(async () => {
      const r = await svc.request<{ status: string; reply: string; replyData: Array<{ key: string; value: string }> }>(
        'GET',
        `${K}/${POSTGRES}/preconnect/${started.body.commandId}`,
      );
      return r.body.status === 'Completed' ? r.body : undefined;
    }, 'the preconnect result');
    expect(done.reply).toBe('SUCCESS');
    expect(Object.fromEntries(done.replyData.map((p) => [p.key, decryptProperty(p.value, token)]))).toEqual({
      refreshToken: 'r-123',
      authorizationUrl: 'https://login.example.test/authorize',
    });
    // A preconnect is not a Connection test, and the other way round.
    expect((await svc.request('GET', `${C}/test/${started.body.commandId}`)).status).toBe(404);
    const bad = await svc.request<Problem>('POST', `${K}/${POSTGRES}/preconnect?agentId=${agent.agentId}`, {
      body: { properties: [{ key: 'nope', value: '' }] },
    });
    expect(bad.status).toBe(400);
    expect(
      (await svc.request('POST', `${K}/${POSTGRES}/preconnect?agentId=${agent.agentId}`, { body: {} })).status,
    ).toBe(400);
    await ch.close();
  });
});
