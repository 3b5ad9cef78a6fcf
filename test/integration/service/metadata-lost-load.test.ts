import { describe, expect, it } from 'vitest';
import { TestChannel, registerTestAgent, until, type Incoming, type TestAgent } from '../../helpers/agent-client.js';
import type { TestService } from '../../helpers/service.js';
import { serviceData } from '../../helpers/service-on-dir.js';
import { STORE_TARGETS } from '../../helpers/stores.js';

/**
 * A metadata load whose answer can no longer come (the Service that sent it stopped or died, or
 * the Agent reconnected) is sent again by the next call at once, instead of the Connection
 * answering "loading" until the load's time-out.
 */
interface Problem {
  code: string;
}

const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
const action = { action: 'Query', operationName: 'Query', blockType: 'Starter', supportsBulk: true, supportsConstraints: true, supportsInput: false, supportsLookupConditions: false, supportsRelations: false, supportsMultipleRecordOperations: false, supportsSequences: false };
const METADATA = {
  actions: [action],
  entities: [{ id: 'customers', name: 'customers', fullName: 'customers', originalName: 'customers', description: '', isHidden: false, actions: [action], relationships: [], fields: [] }],
};

/** A simulated Agent on `svc`: records loadMetadata commands and answers them only when `answer` is set. */
async function agentOn(svc: TestService, agent: TestAgent, answer: boolean): Promise<{ ch: TestChannel; loads: Incoming[] }> {
  const ch = await TestChannel.connect(svc, agent);
  const loads: Incoming[] = [];
  ch.autoReply = (cmd) => {
    if (cmd['type'] !== 'loadMetadata') return undefined;
    loads.push(cmd);
    return answer ? { re: cmd['id'], ok: true, result: METADATA } : undefined;
  };
  await ch.hello(agent, { installedConnectors: [{ connectorId: SQLITE, version: '1.0.0' }] });
  return { ch, loads };
}

/** Creates a Connection and starts its first load with `agent`; resolves once the Agent has the command. */
async function startLoad(svc: TestService, agent: TestAgent, loads: Incoming[]): Promise<string> {
  const conn = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/connections`, { body: { name: 'Lost', connectorId: SQLITE, color: '#FF000000' } });
  expect(conn.status).toBe(201);
  const base = `/v1/orgs/${svc.orgId}/connections/${conn.body.id}`;
  expect((await svc.request<Problem>('GET', `${base}/entitynames?agentId=${agent.agentId}`)).body.code).toBe('API_METADATA_LOADING');
  await until(async () => (loads.length === 1 ? true : undefined), 'the first loadMetadata command');
  return base;
}

/** The next call (without agentId, as a polling client repeats it) sends the load again, and the poll then ends with the metadata. */
async function expectSentAgain(svc: TestService, base: string, loads: Incoming[]): Promise<void> {
  const next = await svc.request<Problem>('GET', `${base}/entitynames`);
  expect(next.status).toBe(404);
  expect(next.body.code).toBe('API_METADATA_LOADING');
  // Sent by that call itself, not by a time-out: the Agent has the command before any other call.
  await until(async () => (loads.length === 1 ? true : undefined), 'the load to be sent again', 5_000);
  expect(loads[0]).toMatchObject({ type: 'loadMetadata', connectionId: base.split('/').pop() });
  const names = await until(async () => {
    const r = await svc.request<string[]>('GET', `${base}/entitynames`);
    return r.status === 200 ? r.body : undefined;
  }, 'the metadata');
  expect(names).toEqual(['customers']);
  const reqs = await svc.request<Array<{ state: string }>>('GET', `${base}/metadatarequests`);
  expect(reqs.body.map((r) => r.state)).toEqual(['Completed', 'Failed']);
}

describe.each(STORE_TARGETS)('a metadata load whose answer is lost, on $name', (target) => {
  it('is sent again at once after the Service restarted and the Agent reconnected', async () => {
    const data = await serviceData(target, { cloudAgents: 'off' });
    try {
      const first = await data.start();
      const agent = await registerTestAgent(first);
      const old = await agentOn(first, agent, false);
      const base = await startLoad(first, agent, old.loads);
      await first.close();
      await old.ch.closed;

      const second = await data.start();
      try {
        const back = await agentOn(second, agent, true);
        await expectSentAgain(second, base, back.loads);
        await back.ch.close();
      } finally {
        await second.close();
      }
    } finally {
      await data.dispose();
    }
  }, 60_000);

  it('is sent again at once when the Service that sent it died without recording anything', async () => {
    const data = await serviceData(target, { cloudAgents: 'off' });
    try {
      // The first Service stops serving but never closes, as a killed process: its request stays
      // Requested in the store, and no process left holds the load.
      const dead = await data.start();
      const agent = await registerTestAgent(dead);
      const old = await agentOn(dead, agent, false);
      const base = await startLoad(dead, agent, old.loads);

      const second = await data.start();
      try {
        const back = await agentOn(second, agent, true);
        await expectSentAgain(second, base, back.loads);
        await back.ch.close();
      } finally {
        await second.close();
        await old.ch.close();
        await dead.close();
      }
    } finally {
      await data.dispose();
    }
  }, 60_000);

  it('is sent again at once when the Agent reconnected to the same Service', async () => {
    const data = await serviceData(target, { cloudAgents: 'off' });
    try {
      const svc = await data.start();
      try {
        const agent = await registerTestAgent(svc);
        const old = await agentOn(svc, agent, false);
        const base = await startLoad(svc, agent, old.loads);
        // The Agent's new channel replaces the one the load went out on.
        const back = await agentOn(svc, agent, true);
        await expectSentAgain(svc, base, back.loads);
        await back.ch.close();
        await old.ch.close();
      } finally {
        await svc.close();
      }
    } finally {
      await data.dispose();
    }
  }, 60_000);
});
