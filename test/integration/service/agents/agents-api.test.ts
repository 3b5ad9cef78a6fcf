import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AGENT_STATUSES } from '../../../../src/protocol/agent-status.js';
import { insertAgent } from '../../../../service/store/repos/agents.repo.js';
import { newId, nowIso } from '../../../../service/util/values.js';
import { TestChannel, registerTestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface AgentModel {
  id: string;
  name: string;
  machineName: string;
  serviceName: string;
  isCloudAgent: boolean;
  isUpdating: boolean;
  status: string;
  isConnected: boolean;
  lastContactTime: string | null;
  lastShutdownTime: string | null;
  lastStartTime: string | null;
  version: string | null;
  installedConnectors: Array<{ connectorId: string; version: string }>;
  usedInSolutions: string;
}
interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}

const GUID = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';

describe.each(STORE_TARGETS)('the Agents API on $name', (target) => {
  let svc: TestService;
  let A: string;
  const channels: TestChannel[] = [];
  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    A = `/v1/orgs/${svc.orgId}/agents`;
  });
  afterAll(async () => {
    await Promise.all(channels.map((c) => c.close()));
    await svc?.close();
  });

  it('lists no Agents at first, as a bare array with Total-Count', async () => {
    const res = await svc.request<AgentModel[]>('GET', A);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(res.headers['total-count']).toBe('0');
  });

  it('lists, pages and filters Agents by name and by installed Connector', async () => {
    const alpha = await registerTestAgent(svc, { name: 'Alpha' });
    const beta = await registerTestAgent(svc, { name: 'Beta' });
    await registerTestAgent(svc, { name: 'Gamma' });
    const all = await svc.request<AgentModel[]>('GET', A);
    expect(all.body.map((a) => a.name)).toEqual(['Alpha', 'Beta', 'Gamma']);
    expect(all.headers['total-count']).toBe('3');
    const page = await svc.request<AgentModel[]>('GET', `${A}?limit=1&offset=1`);
    expect(page.body.map((a) => a.name)).toEqual(['Beta']);
    expect(page.headers['total-count']).toBe('3');
    const named = await svc.request<AgentModel[]>('GET', `${A}?name=ALPHA`);
    expect(named.body.map((a) => a.id)).toEqual([alpha.agentId]);
    expect((await svc.request<AgentModel[]>('GET', `${A}?name=Alph`)).body).toEqual([]);

    const ch = await TestChannel.connect(svc, beta);
    channels.push(ch);
    await ch.hello(beta, { installedConnectors: [{ connectorId: 'postgres', version: '2.1' }] });
    const withPg = await svc.request<AgentModel[]>('GET', `${A}?connectorId=postgres`);
    expect(withPg.body.map((a) => a.id)).toEqual([beta.agentId]);
    expect(withPg.body[0]?.installedConnectors).toEqual([{ connectorId: 'postgres', version: '2.1' }]);
    expect((await svc.request<AgentModel[]>('GET', `${A}?connectorId=csv`)).headers['total-count']).toBe('0');
  });

  it('returns one Agent with every field of the model and never its secret', async () => {
    const agent = await registerTestAgent(svc, { machineName: 'model-host' });
    const res = await svc.request<AgentModel>('GET', `${A}/${agent.agentId}`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual({
      id: agent.agentId,
      name: 'model-host',
      machineName: 'model-host',
      serviceName: 'ferry-agent-1',
      isCloudAgent: false,
      isUpdating: false,
      status: 'Unknown',
      isConnected: false,
      lastContactTime: null,
      lastShutdownTime: null,
      lastStartTime: null,
      version: '1.2.3',
      installedConnectors: [],
      usedInSolutions: '',
      versionHold: false,
      updateVersion: null,
      updateError: null,
    });
    expect(res.text).not.toContain(agent.agentSecret);
    expect(res.text).not.toContain(agent.fingerprint);
  });

  it('numbers the default name when the machine name is taken, and keeps Cloud Agent for the Cloud Agent', async () => {
    const first = await registerTestAgent(svc, { machineName: 'twin' });
    const second = await registerTestAgent(svc, { machineName: 'twin' });
    expect([first.name, second.name]).toEqual(['twin', 'twin 2']);
    const sneaky = await registerTestAgent(svc, { name: 'cloud agent' });
    expect(sneaky.name).toBe('cloud agent 2');
  });

  it('answers unknown and malformed IDs with 404 and 400', async () => {
    expect((await svc.request<Problem>('GET', `${A}/${GUID}`)).body.code).toBe('API_NOT_FOUND');
    const bad = await svc.request<Problem>('GET', `${A}/not-a-guid`);
    expect(bad.status).toBe(400);
    expect(bad.body.errors?.[0]?.path).toBe('path.agentId');
    for (const q of ['limit=-1', 'limit=1001', 'offset=abc', `name=${'x'.repeat(300)}`]) {
      expect((await svc.request('GET', `${A}?${q}`)).status, q).toBe(400);
    }
  });

  it('renames an Agent (PascalCase body too), takes back its own GET model, and refuses duplicate, reserved and unknown fields', async () => {
    const agent = await registerTestAgent(svc, { name: 'Rename Me' });
    const renamed = await svc.request<AgentModel>('PUT', `${A}/${agent.agentId}`, { body: { Name: 'Renamed' } });
    expect(renamed.status).toBe(200);
    expect(renamed.body.name).toBe('Renamed');
    const got = await svc.request<AgentModel>('GET', `${A}/${agent.agentId}`);
    const same = await svc.request<AgentModel>('PUT', `${A}/${agent.agentId}`, {
      body: { ...got.body, status: 'Running', isCloudAgent: true },
    });
    expect(same.status).toBe(200);
    expect(same.body).toMatchObject({ name: 'Renamed', status: 'Unknown', isCloudAgent: false });

    await registerTestAgent(svc, { name: 'Taken' });
    const dup = await svc.request<Problem>('PUT', `${A}/${agent.agentId}`, { body: { name: 'TAKEN' } });
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('API_DUPLICATE_NAME');
    const reserved = await svc.request<Problem>('PUT', `${A}/${agent.agentId}`, { body: { name: 'Cloud Agent' } });
    expect(reserved.status).toBe(400);
    const unknown = await svc.request<Problem>('PUT', `${A}/${agent.agentId}`, { body: { name: 'x', color: 'red' } });
    expect(unknown.status).toBe(400);
    expect(unknown.body.errors?.map((e) => e.path)).toContain('body.color');
    for (const body of [{ name: '' }, { name: 'x'.repeat(300) }, { name: 42 }, '{bad', '[]']) {
      const res = await svc.request('PUT', `${A}/${agent.agentId}`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
    }
    expect((await svc.request('PUT', `${A}/${GUID}`, { body: { name: 'y' } })).status).toBe(404);
  });

  it('keeps the Cloud Agent named Cloud Agent', async () => {
    const now = nowIso();
    const id = newId();
    await insertAgent(svc.service.store.db, {
      id,
      orgId: svc.orgId,
      name: 'Cloud Agent',
      nameKey: 'cloud agent',
      machineName: 'svc',
      serviceName: '',
      isCloudAgent: 1,
      isUpdating: 0,
      status: 'ShutdownCloud',
      lastContactTime: null,
      lastShutdownTime: null,
      lastStartTime: null,
      version: null,
      installedConnectors: '[]',
      secretHash: null,
      fingerprint: null,
      createdAt: now,
      modifiedAt: now,
    });
    const res = await svc.request<Problem>('PUT', `${A}/${id}`, { body: { name: 'My Cloud' } });
    expect(res.status).toBe(400);
    expect((await svc.request<AgentModel>('PUT', `${A}/${id}`, { body: { name: 'Cloud Agent' } })).body).toMatchObject({
      isCloudAgent: true,
      status: 'ShutdownCloud',
    });
    const logs = await svc.request<Problem>('POST', `${A}/${id}/logs`);
    expect(logs.status).toBe(400);
    expect(logs.body.code).toBe('API_UNSUPPORTED');
  });

  it('deletes an Agent (204, then 404) and refuses a Cloud Agent where this Service runs none', async () => {
    const agent = await registerTestAgent(svc);
    expect((await svc.request('DELETE', `${A}/${agent.agentId}`)).status).toBe(204);
    expect((await svc.request('GET', `${A}/${agent.agentId}`)).status).toBe(404);
    expect((await svc.request('DELETE', `${A}/${agent.agentId}`)).status).toBe(404);
    const cloud = await svc.request<Problem>('POST', `${A}/provision_cloud_agent`);
    expect(cloud.status).toBe(409);
    expect(cloud.body.code).toBe('AGT_CLOUD_AGENTS_OFF');
  });

  it('enforces roles: Read-only reads, User writes, Administrator deletes', async () => {
    const agent = await registerTestAgent(svc);
    const reader = await addUser(svc, svc.orgId, 'ReadOnly');
    const user = await addUser(svc, svc.orgId, 'User');
    expect((await svc.request('GET', A, { auth: reader })).status).toBe(200);
    expect((await svc.request('GET', `${A}/${agent.agentId}`, { auth: reader })).status).toBe(200);
    for (const [method, path, body] of [
      ['PUT', `${A}/${agent.agentId}`, { name: 'r' }],
      ['POST', `${A}/${agent.agentId}/restart`, undefined],
      ['POST', `${A}/provision_onpremise_agent`, undefined],
      ['POST', `${A}/${agent.agentId}/logs`, undefined],
      ['DELETE', `${A}/${agent.agentId}`, undefined],
    ] as const) {
      const res = await svc.request<Problem>(method, path, { auth: reader, body });
      expect(res.status, `${method} ${path}`).toBe(403);
      expect(res.body.code).toBe('API_FORBIDDEN_ROLE');
    }
    expect((await svc.request('PUT', `${A}/${agent.agentId}`, { auth: user, body: { name: 'By User' } })).status).toBe(
      200,
    );
    expect((await svc.request('POST', `${A}/provision_onpremise_agent`, { auth: user })).status).toBe(200);
    expect((await svc.request<Problem>('POST', `${A}/${agent.agentId}/restart`, { auth: user })).body.code).toBe(
      'AGT_NOT_CONNECTED',
    );
    expect((await svc.request('DELETE', `${A}/${agent.agentId}`, { auth: user })).status).toBe(403);
    expect((await svc.request('POST', `${A}/provision_cloud_agent`, { auth: user })).status).toBe(403);
    expect((await svc.request('GET', A, { auth: null })).status).toBe(401);
    const outsider = await addUser(svc, undefined, 'User');
    expect((await svc.request('GET', A, { auth: outsider })).status).toBe(404);
  });

  it('refuses calls from an address no Security Rule opens', async () => {
    const res = await svc.request<Problem>('GET', A, { from: '127.0.0.2' });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('API_FORBIDDEN_IP');
    expect((await svc.request('POST', `${A}/provision_onpremise_agent`, { from: '127.0.0.2' })).status).toBe(403);
  });

  it('documents every Agent status of SPEC.md in the schema', async () => {
    const doc = await svc.request<{
      components?: unknown;
      paths: Record<
        string,
        Record<
          string,
          {
            responses?: Record<
              string,
              { content?: Record<string, { schema?: { items?: { properties?: { status?: { enum?: string[] } } } } }> }
            >;
          }
        >
      >;
    }>('GET', '/v1/openapi.json', { auth: null });
    const list =
      doc.body.paths['/v1/orgs/{orgId}/agents']?.['get']?.responses?.['200']?.content?.['application/json']?.schema
        ?.items?.properties?.status?.enum;
    expect(list).toEqual([...AGENT_STATUSES]);
    expect(list).toHaveLength(15);
  });
});
