import { createHash } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  OpenChannels,
  registerTestAgent,
  until,
  type Incoming,
  type TestAgent,
  type TestChannel,
} from '../../../helpers/agent-client.js';
import { writeAgentPackage } from '../../../helpers/agent-packages.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface AgentModel {
  status: string;
  version: string | null;
  isUpdating: boolean;
  versionHold: boolean;
  updateVersion: string | null;
  updateError: string | null;
}

/**
 * The Service's half of Agent updates with Agents the test plays over a real channel: which
 * Agents are offered which version, the package they download, Obsolete, holds, failures, and bad
 * input that changes nothing (docs/agents.md "Updates").
 */
describe.each(STORE_TARGETS)('Agent updates on $name', (target) => {
  let svc: TestService;
  const channels = new OpenChannels();
  const packages = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-agent-packages-'));
  let file: string;

  beforeAll(async () => {
    file = writeAgentPackage(packages, '2.0.0');
    svc = await startService(target, { cloudAgents: 'off', agentPackagesDir: packages, agentObsoleteBelow: '1.0.0' });
  }, 120_000);
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  const A = (agent: TestAgent) => `/v1/orgs/${svc.orgId}/agents/${agent.agentId}`;
  const view = async (agent: TestAgent) => (await svc.request<AgentModel>('GET', A(agent))).body;
  /** Connects `agent` as a process of `version`, answering every command as accepted. */
  const connect = async (agent: TestAgent, version: string): Promise<TestChannel> => {
    const ch = await channels.connect(svc, agent);
    ch.autoReply = (cmd: Incoming) => ({ re: cmd['id'], ok: true, result: { accepted: true, need: [] } });
    expect(await ch.hello(agent, { version })).toMatchObject({ ok: true });
    return ch;
  };

  it('an older Agent is sent the newest version on its hello; the package it downloads is the one the command names', async () => {
    const agent = await registerTestAgent(svc, { name: `older-${target.name}` });
    const ch = await connect(agent, '1.2.3');
    const cmd = await ch.next((m) => m['type'] === 'updateAgent');
    const bytes = fs.readFileSync(file);
    expect(cmd).toMatchObject({
      version: '2.0.0',
      size: bytes.length,
      sha256: createHash('sha256').update(bytes).digest('hex'),
    });
    await until(async () => ((await view(agent)).isUpdating ? true : undefined), 'isUpdating');
    expect(await view(agent)).toMatchObject({ updateVersion: '2.0.0', version: '1.2.3' });

    const url = String(cmd['packageUrl']);
    const withBearer = await fetch(url, { headers: { authorization: `Bearer ${agent.agentId}.${agent.agentSecret}` } });
    expect(withBearer.status).toBe(200);
    expect(Buffer.from(await withBearer.arrayBuffer()).equals(bytes)).toBe(true);
    expect((await fetch(url)).status).toBe(401);
    const missing = await fetch(url.replace('2.0.0', '9.9.9'), {
      headers: { authorization: `Bearer ${agent.agentId}.${agent.agentSecret}` },
    });
    expect(missing.status).toBe(404);

    // The new process says hello on 2.0.0: the update is done, and nothing more is offered.
    await ch.close();
    const again = await connect(agent, '2.0.0');
    await until(async () => ((await view(agent)).isUpdating ? undefined : true), 'the update done');
    expect(await view(agent)).toMatchObject({ version: '2.0.0', updateVersion: null, updateError: null });
    await new Promise((r) => setTimeout(r, 300));
    expect(again.received.some((m) => m['type'] === 'updateAgent')).toBe(false);
  });

  it('a failed update is shown and that version is not offered again until an operator asks', async () => {
    const agent = await registerTestAgent(svc, { name: `failing-${target.name}` });
    const ch = await connect(agent, '1.2.3');
    await ch.next((m) => m['type'] === 'updateAgent');
    const error = { code: 'AGT_UPDATE_FAILED', kind: 'transient', message: 'npm ci failed' } as const;
    const ack = await ch.report({
      kind: 'agentUpdate',
      version: '2.0.0',
      status: 'Failed',
      at: new Date().toISOString(),
      error,
    });
    expect(ack, JSON.stringify(ack)).toMatchObject({ ok: true });
    await until(async () => ((await view(agent)).updateError ? true : undefined), 'the failure');
    expect(await view(agent)).toMatchObject({
      isUpdating: false,
      updateVersion: null,
      updateError: 'Failed: npm ci failed',
    });
    await ch.close();
    const again = await connect(agent, '1.2.3');
    await new Promise((r) => setTimeout(r, 300));
    expect(again.received.some((m) => m['type'] === 'updateAgent')).toBe(false);
    // An operator asks: sent again.
    const asked = await svc.request<AgentModel>('POST', `${A(agent)}/update`, { body: { version: '2.0.0' } });
    expect(asked.status, asked.text).toBe(200);
    expect(asked.body).toMatchObject({ isUpdating: true, updateVersion: '2.0.0', updateError: null });
    await again.next((m) => m['type'] === 'updateAgent');
  });

  it('an Agent too old to update itself is Obsolete, stays so while it runs, and is not sent an update', async () => {
    const agent = await registerTestAgent(svc, { name: `ancient-${target.name}`, version: '0.9.0' });
    const ch = await connect(agent, '0.9.0');
    await until(
      async () => ((await view(agent)).status === 'Obsolete, install new Agent' ? true : undefined),
      'Obsolete',
    );
    await ch.heartbeat('Running');
    expect((await view(agent)).status).toBe('Obsolete, install new Agent');
    const refused = await svc.request<{ code: string }>('POST', `${A(agent)}/update`, { body: {} });
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe('AGT_OBSOLETE');
    expect(refused.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(ch.received.some((m) => m['type'] === 'updateAgent')).toBe(false);
  });

  it('a held Agent is offered nothing; bad input is refused and changes nothing', async () => {
    const agent = await registerTestAgent(svc, { name: `held-${target.name}` });
    const hold = await svc.request<AgentModel>('PUT', A(agent), { body: { versionHold: true } });
    expect(hold.status, hold.text).toBe(200);
    expect(hold.body.versionHold).toBe(true);
    const ch = await connect(agent, '1.2.3');
    await new Promise((r) => setTimeout(r, 300));
    expect(ch.received.some((m) => m['type'] === 'updateAgent')).toBe(false);
    const before = await view(agent);
    for (const body of [{ version: '' }, { version: 2 }, { version: '2.0.0', extra: true }, '[]']) {
      const res = await svc.request<{ code: string }>('POST', `${A(agent)}/update`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    }
    const badHold = await svc.request<{ code: string }>('PUT', A(agent), { body: { versionHold: 'yes' } });
    expect(badHold.status).toBe(400);
    const held = await svc.request<{ code: string }>('POST', `${A(agent)}/update`, { body: {} });
    expect(held.status).toBe(409);
    expect(held.body.code).toBe('AGT_VERSION_HELD');
    expect(await view(agent)).toEqual(before);
    expect(ch.received.some((m) => m['type'] === 'updateAgent')).toBe(false);
    const offered = await svc.request<{ versions: Array<{ version: string }> }>(
      'GET',
      `/v1/orgs/${svc.orgId}/agentversions`,
    );
    expect(offered.body.versions.map((v) => v.version)).toEqual(['2.0.0']);
  });
});
