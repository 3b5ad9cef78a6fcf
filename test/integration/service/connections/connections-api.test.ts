import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decryptProperty, encryptProperty } from '../../../../service/connections/properties-crypto.js';
import { SecretBox } from '../../../../service/crypto/master-key.js';
import { NO_GENERIC_UI } from '../../../../service/marketplace/catalogue.js';
import { TestChannel, registerTestAgent, until, type Incoming } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Connector {
  id: string;
  name: string;
  isCloudSupported: boolean;
  uiName: string;
  solutionRoles: string[];
}
interface Connection {
  id: string;
  connectionId: string;
  name: string;
  alias: string;
  connectorId: string;
  connectorType: string;
  color: string;
  properties: Array<{ key: string; value: string }>;
  createDateTime: string;
  lastModificationDateTime: string;
  modificationBy: string | null;
  usedInSolutions: string;
  lastTestedAgentId: string | null;
}
interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}

const POSTGRES = '18cc2a91-e317-4972-9c24-be9fc63775ab';
const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const UNKNOWN = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';

describe.each(STORE_TARGETS)('the Connectors and Connections API on $name', (target) => {
  let svc: TestService;
  let C: string;
  let K: string;
  let token: string;
  const channels: TestChannel[] = [];
  const enc = (v: string) => encryptProperty(v, token);
  const plain = (c: Connection) =>
    Object.fromEntries(c.properties.map((p) => [p.key, p.value === '' ? '' : decryptProperty(p.value, token)]));

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    C = `/v1/orgs/${svc.orgId}/connections`;
    K = `/v1/orgs/${svc.orgId}/connectors`;
    token = (await svc.request<{ apiCryptoToken: string }>('GET', `/v1/orgs/${svc.orgId}/SecuritySettings`)).body
      .apiCryptoToken;
  });
  afterAll(async () => {
    await Promise.all(channels.map((c) => c.close()));
    await svc?.close();
  });

  it('lists the built-in Connectors from their manifests, filtered by name and by Agent, paged', async () => {
    const all = await svc.request<Connector[]>('GET', K);
    expect(all.status).toBe(200);
    expect(all.body.map((c) => c.name)).toEqual([
      'CSV',
      'HTTP / JSON API',
      'MariaDB',
      'NATS JetStream',
      'PostgreSQL',
      'RabbitMQ',
      'SQLite',
    ]);
    expect(all.headers['total-count']).toBe('7');
    expect(all.body[4]).toMatchObject({
      id: POSTGRES,
      isCloudSupported: true,
      uiName: 'SvcOnline.GenericConnectionUI',
      vendorName: 'Ferry',
      connectionLimitReached: false,
    });
    expect((await svc.request<Connector[]>('GET', `${K}?name=postgresql`)).body.map((c) => c.id)).toEqual([POSTGRES]);
    const page = await svc.request<Connector[]>('GET', `${K}?limit=1&offset=6`);
    expect(page.body.map((c) => c.name)).toEqual(['SQLite']);
    expect(page.headers['total-count']).toBe('7');

    const agent = await registerTestAgent(svc, { name: 'Connectors agent' });
    const ch = await TestChannel.connect(svc, agent);
    channels.push(ch);
    await ch.hello(agent, { installedConnectors: [{ connectorId: CSV, version: '1.0.0' }] });
    expect((await svc.request<Connector[]>('GET', `${K}?AgentId=${agent.agentId}`)).body.map((c) => c.id)).toEqual([
      CSV,
    ]);
    expect((await svc.request<Problem>('GET', `${K}?agentId=${UNKNOWN}`)).status).toBe(404);
  });

  it('returns one Connector, its uioptions, and 404 for an unknown one', async () => {
    expect((await svc.request<Connector>('GET', `${K}/${CSV}`)).body.name).toBe('CSV');
    expect((await svc.request<Problem>('GET', `${K}/${UNKNOWN}`)).status).toBe(404);
    const ui = await svc.request<{
      uiDecorations: Array<{ propertyName: string; inputType: string; order: number; isRequired: boolean }>;
    }>('GET', `${K}/${POSTGRES}/uioptions`);
    expect(ui.status).toBe(200);
    expect(ui.body.uiDecorations.find((d) => d.propertyName === 'password')).toMatchObject({
      inputType: 'Password',
      order: 4,
      isRequired: false,
    });
    expect((await svc.request<Problem>('GET', `${K}/${UNKNOWN}/uioptions`)).status).toBe(404);
    expect(NO_GENERIC_UI).toBe('The connector type does not support getting generic UI Elements.');
  });

  it('creates a Connection: alias from the name, properties decrypted and stored sealed, omitted ones blank, protected never returned', async () => {
    const res = await svc.request<Connection>('POST', C, {
      body: {
        Name: 'Sales DB #1 (prod)',
        ConnectorId: POSTGRES,
        Color: '#FF336699',
        Properties: [
          { Key: 'Host', Value: enc('db.local') },
          { key: 'password', value: enc('s3cret!') },
          { key: 'port', value: enc('5433') },
        ],
      },
    });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`${C}/${res.body.id}`);
    expect(res.body).toMatchObject({
      name: 'Sales DB #1 (prod)',
      alias: 'SalesDB1prod',
      connectorId: POSTGRES,
      connectorType: 'PostgreSQL',
      color: '#FF336699',
      connectionId: res.body.id,
      usedInSolutions: '',
      modificationBy: expect.any(String) as string,
      lastTestedAgentId: null,
    });
    const props = plain(res.body);
    expect(props).toMatchObject({
      host: 'db.local',
      port: '5433',
      password: '',
      connectionString: '',
      database: '',
      user: '',
    });
    expect(res.body.properties.map((p) => p.key)).toHaveLength(12);
    // Protected properties: blank, not even encrypted.
    expect(res.body.properties.find((p) => p.key === 'password')?.value).toBe('');
    // Non-protected: encrypted with the crypto token, random IV.
    expect(res.body.properties.find((p) => p.key === 'host')?.value).toMatch(/^[A-Za-z0-9+/]{22}==[A-Za-z0-9+/=]+$/);

    // Never stored in plain text.
    const raw = await svc.service.store.db
      .selectFrom('connections')
      .select('properties')
      .where('id', '=', res.body.id)
      .executeTakeFirstOrThrow();
    expect(raw.properties).not.toContain('s3cret');
    expect(raw.properties).not.toContain('db.local');
    expect(raw.properties.startsWith('v1.')).toBe(true);

    const got = await svc.request<Connection>('GET', `${C}/${res.body.id.toUpperCase()}`);
    expect(got.status).toBe(200);
    expect(plain(got.body)).toEqual(props);
  });

  it('updates: omitted protected properties keep their value, omitted others become blank, an encrypted empty string clears a password', async () => {
    const created = await svc.request<Connection>('POST', C, {
      body: {
        name: 'Upd',
        connectorId: POSTGRES,
        color: 'FF000000',
        properties: [
          { key: 'host', value: enc('h1') },
          { key: 'user', value: enc('u1') },
          { key: 'password', value: enc('pw1') },
        ],
      },
    });
    const id = created.body.id;
    const stored = async () => {
      const row = await svc.service.store.db
        .selectFrom('connections')
        .select('properties')
        .where('id', '=', id)
        .executeTakeFirstOrThrow();
      return JSON.parse(SecretBox.fromDataDir(svc.dataDir).open(row.properties)) as Record<string, string>;
    };
    // A model read with GET and sent back unchanged keeps everything, the password included.
    const back = await svc.request<Connection>('PUT', `${C}/${id}`, { body: { ...created.body, alias: 'NewAlias' } });
    expect(back.status).toBe(200);
    expect(back.body.alias).toBe('NewAlias');
    expect(await stored()).toMatchObject({ host: 'h1', user: 'u1', password: 'pw1' });

    const upd = await svc.request<Connection>('PUT', `${C}/${id}`, {
      body: {
        name: 'Upd 2',
        connectorId: POSTGRES,
        color: '#80FFFFFF',
        properties: [{ key: 'host', value: enc('h2') }],
      },
    });
    expect(upd.status).toBe(200);
    expect(upd.body).toMatchObject({ name: 'Upd 2', color: '#80FFFFFF', alias: 'NewAlias' });
    expect(upd.body.lastModificationDateTime >= created.body.lastModificationDateTime).toBe(true);
    expect(await stored()).toMatchObject({ host: 'h2', user: '', password: 'pw1' });

    await svc.request('PUT', `${C}/${id}`, {
      body: {
        name: 'Upd 2',
        connectorId: POSTGRES,
        color: '#80FFFFFF',
        properties: [{ key: 'password', value: enc('') }],
      },
    });
    expect(await stored()).toMatchObject({ host: '', password: '' });

    const other = await svc.request<Problem>('PUT', `${C}/${id}`, {
      body: { id: UNKNOWN, name: 'x', connectorId: POSTGRES, color: '#80FFFFFF' },
    });
    expect(other.status).toBe(400);
    expect(
      (
        await svc.request<Problem>('PUT', `${C}/${UNKNOWN}`, {
          body: { name: 'x', connectorId: POSTGRES, color: '#80FFFFFF' },
        })
      ).status,
    ).toBe(404);
  });

  it('lists, pages, filters by name and by the Agent that has the Connector, and deletes', async () => {
    const a = await svc.request<Connection>('POST', C, {
      body: {
        name: 'List CSV',
        connectorId: CSV,
        color: '#FF00FF00',
        properties: [{ key: 'folder', value: enc('/data') }],
      },
    });
    const all = await svc.request<Connection[]>('GET', C);
    expect(all.status).toBe(200);
    expect(Number(all.headers['total-count'])).toBe(all.body.length);
    expect((await svc.request<Connection[]>('GET', `${C}?name=list%20csv`)).body.map((c) => c.id)).toEqual([a.body.id]);
    expect((await svc.request<Connection[]>('GET', `${C}?limit=1`)).body).toHaveLength(1);

    const agent = await registerTestAgent(svc, { name: 'Csv only' });
    const ch = await TestChannel.connect(svc, agent);
    channels.push(ch);
    await ch.hello(agent, { installedConnectors: [{ connectorId: CSV, version: '1.0.0' }] });
    const usable = await svc.request<Connection[]>('GET', `${C}?agentId=${agent.agentId}`);
    expect(usable.body.map((c) => c.connectorId)).toEqual([CSV]);

    expect((await svc.request('DELETE', `${C}/${a.body.id}`)).status).toBe(204);
    expect((await svc.request('GET', `${C}/${a.body.id}`)).status).toBe(404);
    expect((await svc.request('DELETE', `${C}/${a.body.id}`)).status).toBe(404);
  });

  it('refuses bad input: bad ciphertext, wrong token, unknown Connector or property, bad color, missing fields', async () => {
    const base = { name: 'Bad', connectorId: POSTGRES, color: '#FF000000' };
    const cases: Array<[unknown, number, string]> = [
      [{ ...base, properties: [{ key: 'password', value: 'plain-text-password' }] }, 400, 'API_PROPERTY_ENCRYPTION'],
      [
        { ...base, properties: [{ key: 'host', value: encryptProperty('h', 'another-token') + 'AAAA' }] },
        400,
        'API_PROPERTY_ENCRYPTION',
      ],
      [{ ...base, connectorId: UNKNOWN }, 400, 'API_VALIDATION'],
      [{ ...base, properties: [{ key: 'nosuch', value: enc('x') }] }, 400, 'API_VALIDATION'],
      [
        {
          ...base,
          properties: [
            { key: 'host', value: enc('x') },
            { key: 'HOST', value: enc('y') },
          ],
        },
        400,
        'API_VALIDATION',
      ],
      [{ ...base, color: 'red' }, 400, 'API_VALIDATION'],
      [{ ...base, color: '#FFF' }, 400, 'API_VALIDATION'],
      [{ ...base, color: '#FF00000' }, 400, 'API_VALIDATION'],
      [{ connectorId: POSTGRES, color: '#FF000000' }, 400, 'API_VALIDATION'],
      [{ name: 'x', color: '#FF000000' }, 400, 'API_VALIDATION'],
      [{ name: 'x', connectorId: POSTGRES }, 400, 'API_VALIDATION'],
      [{ ...base, alias: 'has space' }, 400, 'API_VALIDATION'],
    ];
    for (const [body, status, code] of cases) {
      const res = await svc.request<Problem>('POST', C, { body });
      expect(res.status, JSON.stringify(body)).toBe(status);
      expect(res.body.code, JSON.stringify(body)).toBe(code);
    }
    const res = await svc.request<Problem>('POST', C, {
      body: { ...base, properties: [{ key: 'password', value: 'plain-text-password' }] },
    });
    expect(res.text).not.toContain('plain-text-password');
  });

  it('lets every role read and only Administrators and Users change', async () => {
    const ro = await addUser(svc, svc.orgId, 'ReadOnly');
    const user = await addUser(svc, svc.orgId, 'User');
    const body = { name: 'Roles', connectorId: CSV, color: '#FF000000' };
    expect((await svc.request('GET', C, { auth: ro })).status).toBe(200);
    expect((await svc.request('GET', K, { auth: ro })).status).toBe(200);
    const denied = await svc.request<Problem>('POST', C, { auth: ro, body });
    expect(denied.status).toBe(403);
    expect(denied.body.code).toBe('API_FORBIDDEN_ROLE');
    const made = await svc.request<Connection>('POST', C, { auth: user, body });
    expect(made.status).toBe(201);
    expect((await svc.request('GET', `${C}/${made.body.id}`, { auth: ro })).status).toBe(200);
    expect((await svc.request('PUT', `${C}/${made.body.id}`, { auth: ro, body })).status).toBe(403);
    expect((await svc.request('DELETE', `${C}/${made.body.id}`, { auth: ro })).status).toBe(403);
    expect((await svc.request('PUT', `${C}/${made.body.id}`, { auth: user, body })).status).toBe(200);
    expect((await svc.request('DELETE', `${C}/${made.body.id}`, { auth: user })).status).toBe(204);
    expect((await svc.request('GET', C, { auth: null })).status).toBe(401);
    const outsider = await addUser(svc, undefined, 'Administrator');
    expect((await svc.request('GET', C, { auth: outsider })).status).toBe(404);
  });

  it('tests a saved and an unsaved Connection through an Agent: Requested, then Completed with SUCCESS or the error', async () => {
    const agent = await registerTestAgent(svc, { name: 'Tester' });
    const ch = await TestChannel.connect(svc, agent);
    channels.push(ch);
    await ch.hello(agent, { installedConnectors: [{ connectorId: POSTGRES, version: '1.0.0' }] });
    const conn = await svc.request<Connection>('POST', C, {
      body: {
        name: 'To test',
        connectorId: POSTGRES,
        color: '#FF000000',
        properties: [
          { key: 'host', value: enc('pg') },
          { key: 'password', value: enc('pw') },
        ],
      },
    });
    expect(conn.body.lastTestedAgentId).toBeNull();

    let release: (() => void) | undefined;
    const gate = new Promise<void>((r) => (release = r));
    const commands: Incoming[] = [];
    ch.autoReply = (cmd) => {
      if (cmd['type'] !== 'testConnection') return undefined;
      commands.push(cmd);
      const props = cmd['properties'] as Record<string, string>;
      void gate.then(() =>
        ch.send(
          props['host'] === 'pg'
            ? { re: cmd['id'], ok: true, result: { ok: true } }
            : {
                re: cmd['id'],
                ok: false,
                error: { code: 'CON_UNREACHABLE', kind: 'transient', message: 'connect ECONNREFUSED bad:5432' },
              },
        ),
      );
      return undefined;
    };

    const started = await svc.request<{ commandId: string }>(
      'POST',
      `${C}/${conn.body.id}/test?agentId=${agent.agentId}`,
    );
    expect(started.status).toBe(200);
    // Clients of the original service read the test's ID as `id`.
    expect(started.body).toEqual({ id: started.body.commandId, commandId: expect.any(String) as string });
    const status = `${C}/test/${started.body.commandId}`;
    await until(async () => (commands.length > 0 ? true : undefined), 'the command');
    expect(commands[0]).toMatchObject({
      type: 'testConnection',
      connectorId: POSTGRES,
      properties: { host: 'pg', password: 'pw', port: '' },
    });
    expect((await svc.request<{ status: string }>('GET', status)).body).toEqual({
      id: started.body.commandId,
      commandId: started.body.commandId,
      name: 'To test',
      status: 'Requested',
      reply: null,
      replyData: [],
    });

    const unsaved = await svc.request<{ commandId: string }>('POST', `${C}/test?AgentId=${agent.agentId}`, {
      body: {
        name: 'Unsaved',
        connectorId: POSTGRES,
        color: '#FF000000',
        properties: [{ key: 'host', value: enc('bad') }],
      },
    });
    expect(unsaved.status).toBe(200);
    release?.();
    const done = await until(async () => {
      const r = await svc.request<{ status: string; reply: string }>('GET', status);
      return r.body.status === 'Completed' ? r.body : undefined;
    }, 'the test result');
    expect(done.reply).toBe('SUCCESS');
    // The Agent that answered SUCCESS is the Connection's lastTestedAgentId; the model sent back with it is accepted.
    const tested = await svc.request<Connection>('GET', `${C}/${conn.body.id}`);
    expect(tested.body.lastTestedAgentId).toBe(agent.agentId);
    const echoed = await svc.request<Connection>('PUT', `${C}/${conn.body.id}`, {
      body: { ...tested.body, properties: [] },
    });
    expect(echoed.status).toBe(200);
    expect(echoed.body.lastTestedAgentId).toBe(agent.agentId);
    const failed = await until(async () => {
      const r = await svc.request<{ name: string; status: string; reply: string }>(
        'GET',
        `${C}/test/${unsaved.body.commandId}`,
      );
      return r.body.status === 'Completed' ? r.body : undefined;
    }, 'the failed test result');
    expect(failed).toMatchObject({ name: 'Unsaved', reply: 'connect ECONNREFUSED bad:5432' });

    expect((await svc.request<Problem>('GET', `${C}/test/${UNKNOWN}`)).status).toBe(404);
    expect((await svc.request<Problem>('POST', `${C}/${conn.body.id}/test`)).status).toBe(400);
    expect((await svc.request<Problem>('POST', `${C}/${conn.body.id}/test?agentId=${UNKNOWN}`)).status).toBe(404);
    const offline = await registerTestAgent(svc, { name: 'Offline' });
    expect((await svc.request<Problem>('POST', `${C}/${conn.body.id}/test?agentId=${offline.agentId}`)).body.code).toBe(
      'AGT_NOT_CONNECTED',
    );
    // A failed test leaves the last Agent that succeeded; a deleted Agent is no longer named.
    expect((await svc.request<Connection>('GET', `${C}/${conn.body.id}`)).body.lastTestedAgentId).toBe(agent.agentId);
    await ch.close();
    expect((await svc.request('DELETE', `/v1/orgs/${svc.orgId}/agents/${agent.agentId}`)).status).toBe(204);
    expect((await svc.request<Connection>('GET', `${C}/${conn.body.id}`)).body.lastTestedAgentId).toBeNull();
  });
});
