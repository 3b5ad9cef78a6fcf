import { sql } from 'kysely';
import { describe, expect, it } from 'vitest';
import { TestChannel, registerTestAgent, until, type Incoming, type TestAgent } from '../../../helpers/agent-client.js';
import type { TestService } from '../../../helpers/service.js';
import { serviceData, serviceReplicas, type ServiceData } from '../../../helpers/service-on-dir.js';
import { STORE_TARGETS, type StoreTarget } from '../../../helpers/stores.js';

/**
 * A metadata load whose answer can no longer come (the Service that sent it stopped or died, or
 * the Agent reconnected) is sent again by the next call at once, instead of the Connection
 * answering "loading" until the load's time-out.
 */
interface Problem {
  code: string;
}

const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
const action = {
  action: 'Query',
  operationName: 'Query',
  blockType: 'Starter',
  supportsBulk: true,
  supportsConstraints: true,
  supportsInput: false,
  supportsLookupConditions: false,
  supportsRelations: false,
  supportsMultipleRecordOperations: false,
  supportsSequences: false,
};
const METADATA = {
  actions: [action],
  entities: [
    {
      id: 'customers',
      name: 'customers',
      fullName: 'customers',
      originalName: 'customers',
      description: '',
      isHidden: false,
      actions: [action],
      relationships: [],
      fields: [],
    },
  ],
};

/** A simulated Agent on `svc`: records loadMetadata commands and answers them only when `answer` is set. */
async function agentOn(
  svc: TestService,
  agent: TestAgent,
  answer: boolean,
): Promise<{ ch: TestChannel; loads: Incoming[] }> {
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
  const conn = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/connections`, {
    body: { name: 'Lost', connectorId: SQLITE, color: '#FF000000' },
  });
  expect(conn.status).toBe(201);
  const base = `/v1/orgs/${svc.orgId}/connections/${conn.body.id}`;
  expect((await svc.request<Problem>('GET', `${base}/entitynames?agentId=${agent.agentId}`)).body.code).toBe(
    'API_METADATA_LOADING',
  );
  await until(async () => (loads.length === 1 ? true : undefined), 'the first loadMetadata command');
  return base;
}

/** The Agent comes back on `svc` (a new channel that answers); the next call (without agentId, as a polling client repeats it) sends the load again, and the poll then ends with the metadata. */
async function expectSentAgain(svc: TestService, agent: TestAgent, base: string): Promise<void> {
  const back = await agentOn(svc, agent, true);
  const next = await svc.request<Problem>('GET', `${base}/entitynames`);
  expect(next.status).toBe(404);
  expect(next.body.code).toBe('API_METADATA_LOADING');
  // Sent by that call itself, not by a time-out: the Agent has the command before any other call.
  await until(async () => (back.loads.length === 1 ? true : undefined), 'the load to be sent again', 5_000);
  expect(back.loads[0]).toMatchObject({ type: 'loadMetadata', connectionId: base.split('/').pop() });
  const names = await until(async () => {
    const r = await svc.request<string[]>('GET', `${base}/entitynames`);
    return r.status === 200 ? r.body : undefined;
  }, 'the metadata');
  expect(names).toEqual(['customers']);
  const reqs = await svc.request<Array<{ state: string }>>('GET', `${base}/metadatarequests`);
  expect(reqs.body.map((r) => r.state)).toEqual(['Completed', 'Failed']);
  await back.ch.close();
}

/** `expectSentAgain` on a next Service started on the same data. */
async function expectSentAgainByNext(data: ServiceData, agent: TestAgent, base: string): Promise<void> {
  const next = await data.start();
  try {
    await expectSentAgain(next, agent, base);
  } finally {
    await next.close();
  }
}

/** What a test of a lost load starts from. */
interface LostLoad {
  data: ServiceData;
  /** The Service the load went out on. */
  first: TestService;
  /** Closes `first` (once: the test may close it itself before the end). */
  closeFirst: () => Promise<void>;
  agent: TestAgent;
  /** The channel the load went out on, which never answers it. */
  channel: TestChannel;
  /** The Connection's path. */
  base: string;
}

/**
 * Runs `test` on a fresh data folder with a Service started on it, an Agent on that Service, and
 * a Connection whose first load went out to the Agent; then closes the channel and the Service
 * and removes the data.
 */
async function withLostLoad(target: StoreTarget, test: (lost: LostLoad) => Promise<void>): Promise<void> {
  const data = await serviceData(target, { cloudAgents: 'off' });
  try {
    const first = await data.start();
    let closing: Promise<void> | undefined;
    const closeFirst = (): Promise<void> => (closing ??= first.close());
    try {
      const agent = await registerTestAgent(first);
      const old = await agentOn(first, agent, false);
      const base = await startLoad(first, agent, old.loads);
      try {
        await test({ data, first, closeFirst, agent, channel: old.ch, base });
      } finally {
        await old.ch.close();
      }
    } finally {
      await closeFirst();
    }
  } finally {
    await data.dispose();
  }
}

describe.each(STORE_TARGETS)('a metadata load whose answer is lost, on $name', (target) => {
  it('is sent again at once after the Service restarted and the Agent reconnected', async () => {
    await withLostLoad(target, async ({ data, closeFirst, agent, channel, base }) => {
      await closeFirst();
      await channel.closed;
      await expectSentAgainByNext(data, agent, base);
    });
  }, 60_000);

  it('is sent again at once when the Service that sent it died without recording anything', async () => {
    // The first Service stops serving but never closes, as a killed process: its request stays
    // Requested in the store, and no process left holds the load. On PostgreSQL a killed replica's
    // liveness lease passes within 15 s; this one is still renewed in this process, so the request
    // is marked as sent by a replica long gone.
    await withLostLoad(target, async ({ data, first, agent, base }) => {
      if (target.name === 'postgres')
        await sql`UPDATE metadata_requests SET replica_id = 'gone'`.execute(first.service.store.db);
      await expectSentAgainByNext(data, agent, base);
    });
  }, 60_000);

  it('is sent again at once when the Agent reconnected to the same Service', async () => {
    // The Agent's new channel replaces the one the load went out on.
    await withLostLoad(target, ({ first, agent, base }) => expectSentAgain(first, agent, base));
  }, 60_000);
});

describe.skipIf(!STORE_TARGETS.some((t) => t.name === 'postgres'))('a metadata load on replicas', () => {
  it('sent by one replica is answered "loading" by another while it runs, not sent a second time', async () => {
    const replicas = await serviceReplicas({ cloudAgents: 'off' });
    const a = await replicas.start();
    const b = await replicas.start();
    try {
      const agent = await registerTestAgent(a);
      const onA = await agentOn(a, agent, false);
      // B sends the load (through A, which holds the channel); a poll lands on A.
      const base = await startLoad(b, agent, onA.loads);
      for (const svc of [a, b, a]) {
        const poll = await svc.request<Problem>('GET', `${base}/entitynames`);
        expect(poll.status).toBe(404);
        expect(poll.body.code).toBe('API_METADATA_LOADING');
      }
      await new Promise((r) => setTimeout(r, 300));
      expect(onA.loads).toHaveLength(1);
      // The Agent answers the one load: every replica serves the metadata.
      onA.ch.send({ re: onA.loads[0]?.['id'], ok: true, result: METADATA });
      for (const svc of [a, b]) {
        const names = await until(async () => {
          const r = await svc.request<string[]>('GET', `${base}/entitynames`);
          return r.status === 200 ? r.body : undefined;
        }, 'the metadata');
        expect(names).toEqual(['customers']);
      }
      const reqs = await a.request<Array<{ state: string }>>('GET', `${base}/metadatarequests`);
      expect(reqs.body.map((r) => r.state)).toEqual(['Completed']);
      await onA.ch.close();
    } finally {
      await b.close();
      await a.close();
      await replicas.dispose();
    }
  }, 60_000);
});
