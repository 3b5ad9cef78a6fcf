import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OpenChannels, registerTestAgent, until, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface AgentModel {
  id: string;
  status: string;
  isConnected: boolean;
  lastContactTime: string | null;
}

describe.each(STORE_TARGETS)('whether an Agent is connected, on $name', (target) => {
  let svc: TestService;
  const channels = new OpenChannels();
  beforeAll(async () => {
    // A short channel timeout, so that a frozen Agent is noticed in seconds rather than a minute.
    svc = await startService(target, {
      cloudAgents: 'off',
      agentChannelTimeout: 2,
      heartbeatLateAfter: 5,
      heartbeatFailedAfter: 600,
    });
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  const getAgent = async (id: string) =>
    (await svc.request<AgentModel>('GET', `/v1/orgs/${svc.orgId}/agents/${id}`)).body;
  const connect = async (agent: TestAgent) => {
    // A TestChannel answers the Service's pings, as a live Agent does.
    const ch = await channels.connect(svc, agent);
    await ch.hello(agent);
    return ch;
  };

  it('shows a connected Agent Running and isConnected, in the list too', async () => {
    const agent = await registerTestAgent(svc);
    expect(await getAgent(agent.agentId)).toMatchObject({ status: 'Unknown', isConnected: false });
    await connect(agent);
    expect(await getAgent(agent.agentId)).toMatchObject({ status: 'Running', isConnected: true });
    const list = await svc.request<AgentModel[]>('GET', `/v1/orgs/${svc.orgId}/agents`);
    expect(list.body.find((a) => a.id === agent.agentId)).toMatchObject({ status: 'Running', isConnected: true });
  });

  it('shows an Agent whose socket dropped without a close Unknown and not connected, as its commands answer', async () => {
    const agent = await registerTestAgent(svc);
    const ch = await connect(agent);
    expect(await getAgent(agent.agentId)).toMatchObject({ status: 'Running', isConnected: true });
    ch.ws.terminate(); // no close frame: the cable is pulled, the process killed
    const shown = await until(
      async () => {
        const model = await getAgent(agent.agentId);
        return model.isConnected ? undefined : model;
      },
      'the Agent shown not connected',
      5_000,
    );
    expect(shown.status).toBe('Unknown');
    const restart = await svc.request<{ code: string }>(
      'POST',
      `/v1/orgs/${svc.orgId}/agents/${agent.agentId}/restart`,
    );
    expect(restart.status).toBe(409);
    expect(restart.body.code).toBe('AGT_NOT_CONNECTED');

    // Back again: Running, since the stored status was never changed.
    await connect(agent);
    expect(await getAgent(agent.agentId)).toMatchObject({ status: 'Running', isConnected: true });
  });

  it('drops a frozen Agent within the channel timeout, then HeartbeatLate applies as before; a live one stays', async () => {
    const frozen = await registerTestAgent(svc);
    const live = await registerTestAgent(svc);
    const liveCh = await connect(live);
    const frozenCh = await connect(frozen);
    const beat = setInterval(() => void liveCh.heartbeat().catch(() => undefined), 500);
    try {
      // The process stops: it reads nothing and answers no ping, but its TCP connection stays open.
      frozenCh.ws.pause();
      const frozenAt = Date.now();
      expect(await getAgent(frozen.agentId)).toMatchObject({ status: 'Running', isConnected: true });
      await until(
        async () => ((await getAgent(frozen.agentId)).isConnected ? undefined : true),
        'the frozen Agent dropped',
        2_000 + 5_000,
      );
      const after = Date.now() - frozenAt;
      // Dropped by the channel timeout (2 s of silence, checked every 1/12 of it), not earlier.
      expect(after).toBeGreaterThanOrEqual(1_500);
      expect((await getAgent(frozen.agentId)).status).toBe('Unknown');
      frozenCh.ws.terminate(); // a paused socket would not see the Service's end of it

      // The live Agent answered the pings meanwhile, for more than two channel timeouts.
      await until(async () => (Date.now() - frozenAt >= 5_000 ? true : undefined), 'two channel timeouts', 10_000);
      expect(await getAgent(live.agentId)).toMatchObject({ status: 'Running', isConnected: true });

      // No contact for FERRY_HEARTBEAT_LATE_AFTER: the sweeper's status wins over Unknown.
      const late = await until(
        async () => {
          const model = await getAgent(frozen.agentId);
          return model.status === 'HeartbeatLate' ? model : undefined;
        },
        'HeartbeatLate',
        20_000,
      );
      expect(late.isConnected).toBe(false);
    } finally {
      clearInterval(beat);
    }
  });
});
