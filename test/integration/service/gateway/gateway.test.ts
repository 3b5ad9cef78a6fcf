import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { countReports } from '../../../../service/store/repos/agents.repo.js';
import { CLOSE, MAX_MESSAGE_BYTES } from '../../../../src/protocol/channel.js';
import { OpenChannels, TestChannel, registerTestAgent, until, type TestAgent } from '../../../helpers/agent-client.js';
import { ADMIN, startService, type TestService } from '../../../helpers/service.js';
import { serviceData } from '../../../helpers/service-on-dir.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface AgentModel {
  id: string;
  name: string;
  status: string;
  version: string | null;
  machineName: string;
  lastContactTime: string | null;
  lastStartTime: string | null;
  lastShutdownTime: string | null;
  installedConnectors: Array<{ connectorId: string; version: string }>;
}

describe.each(STORE_TARGETS)('the Agent channel on $name', (target) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(target);
  });
  afterAll(async () => svc?.close());

  const getAgent = async (id: string) =>
    (await svc.request<AgentModel>('GET', `/v1/orgs/${svc.orgId}/agents/${id}`)).body;
  const channels = new OpenChannels();
  const connect = (agent: TestAgent) => channels.connect(svc, agent);
  afterAll(() => channels.closeAll());

  it('refuses an upgrade without credentials, with a wrong secret, or for an unknown agent with 401', async () => {
    const agent = await registerTestAgent(svc);
    for (const auth of [
      undefined,
      `Bearer ${agent.agentId}.wrong-secret`,
      `Bearer ${agent.agentId}`,
      `Basic ${Buffer.from(`${ADMIN.email}:${ADMIN.password}`).toString('base64')}`,
      `Bearer 3f2504e0-4f89-41d3-9a0c-0305e82c3301.${agent.agentSecret}`,
    ]) {
      await expect(TestChannel.open(svc, auth)).rejects.toMatchObject({ status: 401 });
    }
    const health = await svc.request('GET', '/healthz', { auth: null });
    expect(health.status).toBe(200);
  });

  it('records the hello: Running, version, machine, connectors, start time; the reply carries the heartbeat interval', async () => {
    const agent = await registerTestAgent(svc);
    expect((await getAgent(agent.agentId)).status).toBe('Unknown');
    const ch = await connect(agent);
    const startedAt = new Date(Date.now() - 5000).toISOString();
    const reply = await ch.hello(agent, {
      version: '2.0.0',
      startedAt,
      installedConnectors: [{ connectorId: 'csv', version: '1.0' }],
    });
    expect(reply).toMatchObject({ ok: true, result: { heartbeatMs: 30_000, agentName: agent.name, orgId: svc.orgId } });
    const model = await getAgent(agent.agentId);
    expect(model).toMatchObject({
      status: 'Running',
      version: '2.0.0',
      machineName: agent.machineName,
      lastStartTime: startedAt,
      installedConnectors: [{ connectorId: 'csv', version: '1.0' }],
    });
    expect(model.lastContactTime).not.toBeNull();
    const byConnector = await svc.request<AgentModel[]>('GET', `/v1/orgs/${svc.orgId}/agents?connectorId=CSV`);
    expect(byConnector.body.map((a) => a.id)).toContain(agent.agentId);
  });

  it('refuses requests before the hello, and moves lastContactTime with each heartbeat', async () => {
    const agent = await registerTestAgent(svc);
    const ch = await connect(agent);
    const early = await ch.heartbeat();
    expect(early).toMatchObject({ ok: false, error: { code: 'CHN_HELLO_REQUIRED' } });
    await ch.hello(agent);
    const first = (await getAgent(agent.agentId)).lastContactTime as string;
    await new Promise((r) => setTimeout(r, 5));
    const beat = await ch.heartbeat('Running');
    expect(beat).toMatchObject({ ok: true });
    const second = (await getAgent(agent.agentId)).lastContactTime as string;
    expect(second > first).toBe(true);
  });

  it('stores a report once when it is sent twice, and acknowledges both', async () => {
    const agent = await registerTestAgent(svc);
    const ch = await connect(agent);
    await ch.hello(agent);
    const at = new Date(Date.now() + 1000).toISOString();
    const report = { kind: 'shutdown' as const, at, status: 'Shutdown' as const };
    const first = await ch.report(report, 'report-1');
    const again = await ch.report(report, 'report-1');
    expect(first).toMatchObject({ re: 'report-1', ok: true });
    expect(again).toMatchObject({ re: 'report-1', ok: true });
    expect(await countReports(svc.service.store.db, agent.agentId, 'report-1')).toBe(1);
    expect(await getAgent(agent.agentId)).toMatchObject({ status: 'Shutdown', lastShutdownTime: at });
  });

  it('ignores the status of a report from a previous run, delivered late from the outbox', async () => {
    const agent = await registerTestAgent(svc);
    const ch = await connect(agent);
    await ch.hello(agent, { startedAt: new Date().toISOString() });
    const old = new Date(Date.now() - 60_000).toISOString();
    expect(await ch.report({ kind: 'shutdown', at: old, status: 'Shutdown' })).toMatchObject({ ok: true });
    expect(await getAgent(agent.agentId)).toMatchObject({ status: 'Running', lastShutdownTime: old });
  });

  it('answers malformed, invalid and unknown messages without crashing, and closes oversized ones with 1009', async () => {
    const agent = await registerTestAgent(svc);
    const ch = await connect(agent);
    await ch.hello(agent);
    ch.send('{not json');
    ch.send('[1,2,3]');
    const invalid = await ch.request({ id: 'bad-1', type: 'heartbeat', status: 'Dancing' });
    expect(invalid).toMatchObject({ re: 'bad-1', ok: false, error: { code: 'CHN_INVALID_MESSAGE', kind: 'config' } });
    const unknown = await ch.request({ id: 'bad-2', type: 'launchRocket' });
    expect(unknown).toMatchObject({ re: 'bad-2', ok: false, error: { code: 'CHN_INVALID_MESSAGE' } });
    // The socket still works after bad frames.
    expect(await ch.heartbeat()).toMatchObject({ ok: true });
    ch.send(JSON.stringify({ id: 'big', type: 'heartbeat', pad: 'x'.repeat(MAX_MESSAGE_BYTES + 10) }));
    expect((await ch.closed).code).toBe(1009);
    expect((await svc.request('GET', '/healthz', { auth: null })).status).toBe(200);
    // The Agent can come back.
    const again = await connect(agent);
    expect(await again.hello(agent)).toMatchObject({ ok: true });
  });

  it('answers pings with pongs and closes the socket with 4400 after 20 bad messages in a minute', async () => {
    const agent = await registerTestAgent(svc);
    const ch = await connect(agent);
    await ch.hello(agent);
    ch.send({ type: 'ping', at: new Date().toISOString() });
    await ch.next((m) => m['type'] === 'pong');
    for (let i = 0; i < 20; i++) ch.send(`garbage ${i}`);
    expect((await ch.closed).code).toBe(CLOSE.protocolError);
  });

  it('refuses a cloned installation (another fingerprint) with 4409 and keeps the original connected', async () => {
    const agent = await registerTestAgent(svc);
    const original = await connect(agent);
    await original.hello(agent);
    const clone = await connect(agent);
    const reply = await clone.hello({ ...agent, fingerprint: 'fp-of-a-copy' });
    expect(reply).toMatchObject({ ok: false, error: { code: 'AGT_CLONED_INSTALL' } });
    expect((await clone.closed).code).toBe(CLOSE.clonedInstall);
    expect(await original.heartbeat()).toMatchObject({ ok: true });
  });

  it('replaces the first connection of an Agent by a second one (4000 on the old)', async () => {
    const agent = await registerTestAgent(svc);
    const first = await connect(agent);
    await first.hello(agent);
    const second = await connect(agent);
    await second.hello(agent);
    expect((await first.closed).code).toBe(CLOSE.replaced);
    expect(await second.heartbeat()).toMatchObject({ ok: true });
  });

  it('sends restart to the connected Agent and answers the REST call with WaitingToRestartAgentUserRequest', async () => {
    const agent = await registerTestAgent(svc);
    const ch = await connect(agent);
    await ch.hello(agent);
    ch.autoReply = (cmd) => (cmd['type'] === 'restart' ? { re: cmd['id'], ok: true } : undefined);
    const later = await svc.request<AgentModel>('POST', `/v1/orgs/${svc.orgId}/agents/${agent.agentId}/restart`);
    expect(later.status).toBe(200);
    expect(later.body.status).toBe('WaitingToRestartAgentUserRequest');
    const now = await svc.request<AgentModel>(
      'POST',
      `/v1/orgs/${svc.orgId}/agents/${agent.agentId}/restart?restartNow=true`,
    );
    expect(now.status).toBe(200);
    const body = await svc.request<AgentModel>('POST', `/v1/orgs/${svc.orgId}/agents/${agent.agentId}/restart`, {
      body: { RestartNow: true },
    });
    expect(body.status).toBe(200);
    const restarts = ch.received.filter((m) => m['type'] === 'restart');
    expect(restarts.map((m) => m['restartNow'])).toEqual([false, true, true]);
    expect(new Set(restarts.map((m) => m['id'])).size).toBe(3);
  });

  it('answers restart of an Agent that is not connected with 409, and one that refuses with 502', async () => {
    const agent = await registerTestAgent(svc);
    const offline = await svc.request<{ code: string; detail: string }>(
      'POST',
      `/v1/orgs/${svc.orgId}/agents/${agent.agentId}/restart`,
    );
    expect(offline.status).toBe(409);
    expect(offline.body.code).toBe('AGT_NOT_CONNECTED');
    expect(offline.body.detail).toContain(`Agent ${agent.agentId} is not connected`);
    const ch = await connect(agent);
    await ch.hello(agent);
    ch.autoReply = (cmd) => ({
      re: cmd['id'],
      ok: false,
      error: { code: 'AGT_DRAINING', kind: 'transient', message: 'already restarting' },
    });
    const refused = await svc.request<{ code: string; detail: string }>(
      'POST',
      `/v1/orgs/${svc.orgId}/agents/${agent.agentId}/restart`,
    );
    expect(refused.status).toBe(502);
    expect(refused.body).toMatchObject({ code: 'AGT_COMMAND_FAILED' });
    expect(refused.body.detail).toContain('already restarting');
    expect((await getAgent(agent.agentId)).status).toBe('Running');
  });

  it('closes the channel of a deleted Agent with 4404', async () => {
    const agent = await registerTestAgent(svc);
    const ch = await connect(agent);
    await ch.hello(agent);
    const del = await svc.request('DELETE', `/v1/orgs/${svc.orgId}/agents/${agent.agentId}`);
    expect(del.status).toBe(204);
    expect((await ch.closed).code).toBe(CLOSE.agentDeleted);
    await expect(TestChannel.connect(svc, agent)).rejects.toMatchObject({ status: 401 });
  });
});

describe.each(STORE_TARGETS)('the heartbeat sweeper on $name', (target) => {
  let svc: TestService;
  const channels = new OpenChannels();
  beforeAll(async () => {
    svc = await startService(target, { heartbeatLateAfter: 1, heartbeatFailedAfter: 2 });
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });
  const getAgent = async (id: string) =>
    (await svc.request<AgentModel>('GET', `/v1/orgs/${svc.orgId}/agents/${id}`)).body;
  const connect = (agent: TestAgent) => channels.connect(svc, agent);

  it('sweeps a silent Agent to HeartbeatLate, then HeartbeatFailed, and leaves a stopped one alone', async () => {
    const silent = await registerTestAgent(svc);
    const ch = await connect(silent);
    await ch.hello(silent);
    const stopped = await registerTestAgent(svc);
    const ch2 = await connect(stopped);
    await ch2.hello(stopped);
    await ch2.report({ kind: 'shutdown', at: new Date(Date.now() + 1000).toISOString(), status: 'Shutdown' });
    await until(
      async () => ((await getAgent(silent.agentId)).status === 'HeartbeatLate' ? true : undefined),
      'HeartbeatLate',
      10_000,
    );
    await until(
      async () => ((await getAgent(silent.agentId)).status === 'HeartbeatFailed' ? true : undefined),
      'HeartbeatFailed',
      10_000,
    );
    expect((await getAgent(stopped.agentId)).status).toBe('Shutdown');
    // A heartbeat brings it back.
    await ch.heartbeat('Running');
    expect((await getAgent(silent.agentId)).status).toBe('Running');
  });
});

describe.each(STORE_TARGETS)('a Service restart on $name', (target) => {
  it('keeps Agents, their credentials and the report deduplication', async () => {
    const data = await serviceData(target, { cloudAgents: 'off' });
    try {
      const first = await data.start();
      const agent = await registerTestAgent(first);
      const ch = await TestChannel.connect(first, agent);
      await ch.hello(agent);
      expect(
        await ch.report({ kind: 'status', at: new Date().toISOString(), status: 'Running' }, 'durable-1'),
      ).toMatchObject({ ok: true });
      const closedDuring = ch.closed;
      await first.close();
      expect((await closedDuring).code).toBe(1012);

      const second = await data.start();
      try {
        const again = await TestChannel.connect(second, agent);
        expect(await again.hello(agent)).toMatchObject({ ok: true });
        // The outbox sends what it never saw acknowledged: stored once all the same.
        expect(
          await again.report({ kind: 'status', at: new Date().toISOString(), status: 'Running' }, 'durable-1'),
        ).toMatchObject({ ok: true });
        expect(await countReports(second.service.store.db, agent.agentId)).toBe(1);
        const got = await second.request<AgentModel>('GET', `/v1/orgs/${second.orgId}/agents/${agent.agentId}`);
        expect(got.body).toMatchObject({ id: agent.agentId, status: 'Running' });
        await again.close();
      } finally {
        await second.close();
      }
    } finally {
      await data.dispose();
    }
  });
});
