/**
 * Two Service replicas on one PostgreSQL (service/gateway/replica-bus.ts): an Agent whose channel
 * one replica holds is reached from the other — its commands, their answers and refusals, its
 * connectivity, a disconnect — and a replica that stops gives its Agents' channels up at once.
 * Real Services on loopback ports, a real PostgreSQL database, a real WebSocket channel.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DB_NOW_MS } from '../../../../service/store/sql.js';
import { CLOSE } from '../../../../src/protocol/channel.js';
import { registerTestAgent, TestChannel } from '../../../helpers/agent-client.js';
import type { TestService } from '../../../helpers/service.js';
import { serviceReplicas, type ServiceReplicas } from '../../../helpers/service-on-dir.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface AgentView {
  status: string;
  isConnected: boolean;
}

/** Polls `read` until `done` holds of it (the replicas learn of a channel by a wake-up, within ms). */
async function until<T>(read: () => Promise<T>, done: (v: T) => boolean, ms = 5_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await read();
    if (done(v) || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 25));
  }
}

describe.skipIf(!STORE_TARGETS.some((t) => t.name === 'postgres'))('two Service replicas on one PostgreSQL', () => {
  // One database and one master key for every replica; each replica its own data folder.
  let replicas: ServiceReplicas;
  let a: TestService;
  let b: TestService;
  const channels: TestChannel[] = [];
  const startReplica = (overrides: { replicaLease?: number } = {}): Promise<TestService> => replicas.start(overrides);

  beforeAll(async () => {
    replicas = await serviceReplicas();
    a = await startReplica();
    b = await startReplica();
  });
  afterAll(async () => {
    await Promise.all(channels.map((c) => c.close()));
    await b?.close();
    await a?.close();
    await replicas?.dispose();
  });

  /** An Agent registered through replica A whose channel A holds. */
  const onA = async (): Promise<{ agentId: string; ch: TestChannel }> => {
    const agent = await registerTestAgent(a);
    const ch = await TestChannel.connect(a, agent);
    channels.push(ch);
    expect(await ch.hello(agent)).toMatchObject({ ok: true });
    return { agentId: agent.agentId, ch };
  };
  const view = async (svc: TestService, agentId: string): Promise<AgentView> =>
    (await svc.request<AgentView>('GET', `/v1/orgs/${svc.orgId}/agents/${agentId}`)).body;

  it('a command called on replica B reaches the Agent whose channel A holds, and its answer comes back', async () => {
    const { agentId, ch } = await onA();
    // B sees the channel A holds as soon as A recorded it: the hello is answered after that.
    expect(await view(b, agentId)).toMatchObject({ isConnected: true, status: 'Running' });
    ch.autoReply = (cmd) => (cmd['type'] === 'restart' ? { re: cmd['id'], ok: true } : undefined);
    const res = await b.request<AgentView>('POST', `/v1/orgs/${b.orgId}/agents/${agentId}/restart?restartNow=true`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('WaitingToRestartAgentUserRequest');
    const restarts = ch.received.filter((m) => m['type'] === 'restart');
    expect(restarts.map((m) => m['restartNow'])).toEqual([true]);
  });

  it("an Agent's refusal crosses replicas as it is: B answers 502 with the Agent's message", async () => {
    const { agentId, ch } = await onA();
    ch.autoReply = (cmd) => ({
      re: cmd['id'],
      ok: false,
      error: { code: 'AGT_DRAINING', kind: 'transient', message: 'already restarting' },
    });
    const refused = await b.request<{ code: string; detail: string }>(
      'POST',
      `/v1/orgs/${b.orgId}/agents/${agentId}/restart`,
    );
    expect(refused.status).toBe(502);
    expect(refused.body.code).toBe('AGT_COMMAND_FAILED');
    expect(refused.body.detail).toContain('already restarting');
  });

  it('a reply too long for a wake-up crosses by its row, whole', async () => {
    const { agentId, ch } = await onA();
    // A NOTIFY carries under 8,000 bytes: this refusal's message alone is longer.
    const message = `refused: ${'é'.repeat(5_000)} end`;
    ch.autoReply = (cmd) => ({ re: cmd['id'], ok: false, error: { code: 'AGT_DRAINING', kind: 'transient', message } });
    const refused = await b.request<{ code: string; detail: string }>(
      'POST',
      `/v1/orgs/${b.orgId}/agents/${agentId}/restart`,
    );
    expect(refused.status).toBe(502);
    expect(refused.body.detail).toContain(message);
  });

  it("an Agent held by a replica that died counts as disconnected once that replica's own lease passes", async () => {
    // A replica that died leaves its rows: its channel's lease still runs here (a minute), its
    // liveness lease passes in 1.5 s, and no wake-up tells of it.
    const agent = await registerTestAgent(a);
    const ghost = `ghost${Date.now()}`;
    const { db } = b.service.store;
    await sql`INSERT INTO service_leases (name, holder, until_ms)
      VALUES (${`replica:${ghost}`}, ${ghost}, ${DB_NOW_MS} + 1500)`.execute(db);
    await sql`INSERT INTO agent_channels (agent_id, replica_id, channel_id, lease_until_ms)
      VALUES (${agent.agentId}, ${ghost}, 'c1', ${DB_NOW_MS} + 60000)`.execute(db);
    await sql`SELECT pg_notify('ferry_channels', ${`${agent.agentId} ${ghost}`})`.execute(db);
    const seen = await until(
      () => view(b, agent.agentId),
      (v) => v.isConnected,
    );
    expect(seen.isConnected).toBe(true);
    const gone = await until(
      () => view(b, agent.agentId),
      (v) => !v.isConnected,
    );
    expect(gone.isConnected).toBe(false);
    // Nothing is sent to the dead replica to wait on: refused at once.
    const res = await b.request<{ code: string }>('POST', `/v1/orgs/${b.orgId}/agents/${agent.agentId}/restart`);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('AGT_NOT_CONNECTED');
    await sql`DELETE FROM agent_channels WHERE agent_id = ${agent.agentId}`.execute(db);
    await sql`DELETE FROM service_leases WHERE holder = ${ghost}`.execute(db);
  });

  it('a channel that closes on A is disconnected on B at once: B answers 409 AGT_NOT_CONNECTED', async () => {
    const { agentId, ch } = await onA();
    await ch.close();
    const seen = await until(
      () => view(b, agentId),
      (v) => !v.isConnected,
    );
    expect(seen.isConnected).toBe(false);
    const res = await b.request<{ code: string }>('POST', `/v1/orgs/${b.orgId}/agents/${agentId}/restart`);
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('AGT_NOT_CONNECTED');
  });

  it('deleting on B an Agent whose channel A holds closes that channel with 4404', async () => {
    const { agentId, ch } = await onA();
    const del = await b.request('DELETE', `/v1/orgs/${b.orgId}/agents/${agentId}`);
    expect(del.status).toBe(204);
    expect((await ch.closed).code).toBe(CLOSE.agentDeleted);
  });

  it('a replica that stops gives its channels up: the other shows its Agents disconnected at once', async () => {
    const c = await startReplica();
    try {
      const agent = await registerTestAgent(c);
      const ch = await TestChannel.connect(c, agent);
      channels.push(ch);
      await ch.hello(agent);
      expect((await view(b, agent.agentId)).isConnected).toBe(true);
      await c.close();
      const seen = await until(
        () => view(b, agent.agentId),
        (v) => !v.isConnected,
      );
      expect(seen.isConnected).toBe(false);
    } finally {
      await c.close().catch(() => undefined);
    }
  });

  it('keeps the lease of every Agent that connects while its replica renews its leases', async () => {
    // Leases of 0.3 s are renewed every 100 ms: many renewals fall between a hello and its lease.
    const c = await startReplica({ replicaLease: 0.3 });
    try {
      // One login first: a burst of first logins of one account would count as guesses.
      expect((await c.request('GET', `/v1/orgs/${c.orgId}`)).status).toBe(200);
      const agents = await Promise.all(Array.from({ length: 40 }, () => registerTestAgent(c)));
      const opened = await Promise.all(
        agents.map(async (agent) => {
          const ch = await TestChannel.connect(c, agent);
          channels.push(ch);
          expect(await ch.hello(agent)).toMatchObject({ ok: true });
          return agent.agentId;
        }),
      );
      // Several renewals later every channel still has its lease, held by C.
      await new Promise((r) => setTimeout(r, 600));
      const leases = await c.service.store.db
        .selectFrom('agentChannels')
        .select(['agentId', 'replicaId'])
        .where('agentId', 'in', opened)
        .execute();
      expect(leases.map((l) => l.agentId).sort()).toEqual([...opened].sort());
      expect(new Set(leases.map((l) => l.replicaId))).toEqual(new Set([c.service.replicaId]));
    } finally {
      await c.close();
    }
  });
});
