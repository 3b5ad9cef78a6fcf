/**
 * Three Service replicas on one PostgreSQL behind HAProxy with the shipped configuration
 * (installer/haproxy/haproxy.cfg; docs/deploy.md): a rolling restart of every replica under a
 * client loop fails no call and moves each Agent at once, and a replica killed with SIGKILL loses
 * its Agents' channels to the others within the lease bound. Real processes, a real HAProxy, real
 * WebSocket channels through it (the Agent's own channel client), a real PostgreSQL database.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChannelClient } from '../../../src/channel/client.js';
import { Outbox } from '../../../src/channel/outbox.js';
import { helloOf, registerTestAgent, type TestAgent } from '../../helpers/agent-client.js';
import { request, type TestService } from '../../helpers/service.js';
import { STORE_TARGETS } from '../../helpers/stores.js';
import { until } from '../agent/harness.js';
import { HAS_HAPROXY, startCluster, type Cluster } from './cluster.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');
const REASON = !HAS_PG
  ? 'no PostgreSQL (FERRY_TEST_DATABASE_URL)'
  : 'HAProxy is not installed (apt-get install haproxy)';

if (process.env['CI'] === 'true' && (!HAS_PG || !HAS_HAPROXY)) {
  describe('replicas behind HAProxy', () => {
    it('has what it needs', () => {
      throw new Error(`CI must run the replica tests: ${REASON}`);
    });
  });
} else if (!HAS_PG || !HAS_HAPROXY) {
  describe.skip(`replicas behind HAProxy (skipped: ${REASON})`, () => undefined);
}

/** An Agent on the Agent's own channel client, connected through the load balancer. */
interface LbAgent {
  readonly agent: TestAgent;
  readonly client: ChannelClient;
  /** When each of its channels was greeted (ms since the epoch). */
  readonly connects: number[];
  readonly outboxDir: string;
}

describe.runIf(HAS_PG && HAS_HAPROXY)(
  'three Service replicas behind HAProxy on one PostgreSQL',
  () => {
    let cluster: Cluster;
    const agents: LbAgent[] = [];
    /** The load balancer as a test Service, for the helpers that register Agents. */
    let lb: TestService;

    const connectAgent = async (): Promise<LbAgent> => {
      const agent = await registerTestAgent(lb);
      const outboxDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-lb-agent-'));
      const connects: number[] = [];
      const client = new ChannelClient({
        serviceUrl: cluster.url,
        agentId: agent.agentId,
        agentSecret: agent.agentSecret,
        log: pino({ level: 'silent' }),
        outbox: new Outbox(path.join(outboxDir, 'outbox.db')),
        hello: () => helloOf(agent),
        heartbeat: () => ({ status: 'Running', rssBytes: 1, runningWork: 0 }),
        onCommand: async (c) => ({ accepted: true, type: c.type }),
        onFatal: () => undefined,
        onConnected: () => connects.push(Date.now()),
        pingMs: 1_000,
        requestTimeoutMs: 5_000,
        // A back-off this long would show: a restart close (1012) must not wait for it.
        backoffBaseMs: 10_000,
        backoffMaxMs: 30_000,
      });
      client.start();
      const a: LbAgent = { agent, client, connects, outboxDir };
      agents.push(a);
      await until('the Agent connected through the load balancer', () => (connects.length > 0 ? true : undefined));
      return a;
    };

    /** The index of the replica with ID `replicaId` (its liveness lease names it; its log says its port). */
    const replicaIndexOf = async (replicaId: string): Promise<number> => {
      for (const [i, r] of cluster.replicas.entries()) if (r.proc?.output().includes(replicaId)) return i;
      throw new Error(`no replica logged the ID ${replicaId}`);
    };

    /** Which replica holds each Agent's channel, from the lease table. */
    const holders = async (): Promise<Map<string, string>> => {
      const res = await cluster.query<{ agent_id: string; replica_id: string }>(
        'SELECT agent_id, replica_id FROM agent_channels',
      );
      return new Map(res.map((r) => [r.agent_id, r.replica_id]));
    };

    beforeAll(async () => {
      cluster = await startCluster(3);
      lb = {
        url: cluster.url,
        orgId: cluster.orgId,
        request: (method, pathAndQuery, opts) => request(cluster.url, undefined, method, pathAndQuery, opts),
      } as TestService;
      for (let i = 0; i < 6; i++) await connectAgent();
    }, 240_000);

    afterAll(async () => {
      await Promise.all(agents.map((a) => a.client.stop()));
      await cluster?.dispose();
      for (const a of agents) fs.rmSync(a.outboxDir, { recursive: true, force: true });
    });

    /** The replica (index) whose ID holds the Agent's channel, by the port it was started on. */
    const replicaOf = async (agentId: string): Promise<string | undefined> => (await holders()).get(agentId);

    it('spreads the Agents over the replicas, and a command reaches each from a replica that does not hold it', async () => {
      const held = await holders();
      expect(held.size).toBe(6);
      expect(new Set(held.values()).size).toBeGreaterThan(1);
      for (const { agent } of agents) {
        const holder = await replicaOf(agent.agentId);
        // Every replica sees the channel; the restart command crosses from whichever the loop picks.
        for (const r of cluster.replicas) {
          const view = await request<{ isConnected: boolean }>(
            `http://127.0.0.1:${r.port}`,
            undefined,
            'GET',
            `/v1/orgs/${cluster.orgId}/agents/${agent.agentId}`,
          );
          expect(view.body.isConnected).toBe(true);
        }
        const res = await request<{ status: string }>(
          `http://127.0.0.1:${cluster.replicas[0]?.port}`,
          undefined,
          'POST',
          `/v1/orgs/${cluster.orgId}/agents/${agent.agentId}/restart`,
        );
        expect(res.status, `Agent ${agent.agentId} held by ${holder}`).toBe(200);
      }
    });

    it('a rolling restart of every replica under a client loop fails no call, and each Agent moves at once', async () => {
      const before = agents.map((a) => a.connects.length);
      let stop = false;
      const calls = { ok: 0, failed: [] as string[] };
      const loop = async () => {
        const paths = [`/v1/orgs/${cluster.orgId}`, `/v1/orgs/${cluster.orgId}/agents`];
        for (let n = 0; !stop; n++) {
          const write = n % 3 === 2;
          const res = await request(
            cluster.url,
            undefined,
            write ? 'POST' : 'GET',
            write ? `/v1/orgs/${cluster.orgId}/agents/provision_onpremise_agent` : (paths[n % 2] as string),
          ).catch((err: Error) => ({ status: 0, text: err.message }));
          if (res.status === 200) calls.ok += 1;
          else calls.failed.push(`${res.status} ${res.text.slice(0, 200)}`);
        }
      };
      const loops = Array.from({ length: 4 }, () => loop());
      for (let i = 0; i < cluster.replicas.length; i++) {
        expect(await cluster.stop(i)).toBe(0);
        await cluster.start(i);
        await cluster.inRotation(i);
      }
      stop = true;
      await Promise.all(loops);
      expect(calls.failed).toEqual([]);
      expect(calls.ok).toBeGreaterThan(100);
      // Every Agent is connected again, each after at least one move and never after a back-off.
      await until('every Agent connected', async () => ((await holders()).size === agents.length ? true : undefined));
      for (const [i, a] of agents.entries()) {
        const moves = a.connects.length - (before[i] as number);
        expect(moves).toBeGreaterThanOrEqual(1);
        expect(moves).toBeLessThanOrEqual(cluster.replicas.length);
      }
    });

    it('kill -9 of a replica: its Agents are back through the others within the lease bound', async () => {
      const held = await holders();
      const ports = await cluster.query<{ replica_id: string }>('SELECT DISTINCT replica_id FROM agent_channels');
      expect(ports.length).toBeGreaterThan(0);
      // The replica that holds the first Agent's channel: find it by asking each replica which it holds.
      const target = agents[0] as LbAgent;
      const victimId = held.get(target.agent.agentId) as string;
      const victims = [...held].filter(([, r]) => r === victimId).map(([id]) => id);
      const index = await replicaIndexOf(victimId);
      const killedAt = Date.now();
      await cluster.kill(index);
      await until(
        "the killed replica's Agents held by the others",
        async () => {
          const now = await holders();
          return victims.every((id) => now.get(id) !== undefined && now.get(id) !== victimId) ? true : undefined;
        },
        20_000,
      );
      const backMs = Date.now() - killedAt;
      expect(backMs).toBeLessThan(15_000);
      for (const id of victims) {
        const view = await request<{ isConnected: boolean; status: string }>(
          cluster.url,
          undefined,
          'GET',
          `/v1/orgs/${cluster.orgId}/agents/${id}`,
        );
        expect(view.body).toMatchObject({ isConnected: true, status: 'Running' });
      }
      await cluster.start(index);
      await cluster.inRotation(index);
    });
  },
  300_000,
);
