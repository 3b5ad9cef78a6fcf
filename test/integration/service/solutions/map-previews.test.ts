import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerTestAgent, TestChannel, type Incoming, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
const B = (n: number): string => `44444444-4444-4444-8444-${String(n).padStart(12, '0')}`;

/**
 * Previews and native query tests kept in the store, on both stores: the POLL answers 404 while
 * the Agent has not answered (here a channel the test answers by hand), then the records or the
 * Agent's error; the command carries the Block's entity, filter and the Connection's properties.
 */
describe.each(STORE_TARGETS)('Map previews in the $name store', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let channel: TestChannel;
  let S: string;
  let mapId: number;

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    agent = await registerTestAgent(svc, { name: 'Preview agent' });
    channel = await TestChannel.connect(svc, agent);
    await channel.hello(agent);
    const conn = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/connections`, {
      body: { name: 'Items', connectorId: SQLITE, color: '#FF00FF00' },
    });
    expect(conn.status, conn.text).toBe(201);
    const sol = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/solutions`, {
      body: { name: 'Previews', solutionType: 'Integration', agentId: agent.agentId },
    });
    S = `/v1/orgs/${svc.orgId}/solutions/${sol.body.id}`;
    const map = await svc.request<{ id: number }>('POST', `${S}/maps/advanced`, {
      body: {
        version: '3.0',
        name: 'M',
        blocks: [
          {
            blockId: B(1),
            name: 'Q',
            blockType: 'Query',
            action: 'Query',
            connectionId: conn.body.id,
            entity: 'items',
            filter: { op: '>', field: 'id', value: 3 },
          },
          {
            blockId: B(2),
            name: 'N',
            blockType: 'NativeQuery',
            action: 'NativeQuery',
            connectionId: conn.body.id,
            statement: 'SELECT 1 AS one',
            fields: ['one'],
          },
        ],
      },
    });
    expect(map.status, map.text).toBe(201);
    mapId = map.body.id;
  });
  afterAll(async () => svc?.close());

  it('answers 404 until the Agent answered, then its records', async () => {
    const start = await svc.request<{ previewId: string; limit: number }>('POST', `${S}/maps/${mapId}/previewquery`);
    expect(start.status, start.text).toBe(200);
    expect(start.body.limit).toBe(100);
    const cmd = await channel.next((m) => m['type'] === 'previewQuery');
    expect(cmd).toMatchObject({
      entity: 'items',
      filter: { op: '>', field: 'id', value: 3 },
      limit: 100,
      connectorId: SQLITE,
    });
    const poll = await svc.request<{ code: string }>('GET', `${S}/maps/${mapId}/previewquery/${start.body.previewId}`);
    expect(poll.status).toBe(404);
    expect(poll.body.code).toBe('API_NOT_FOUND');
    channel.send({
      re: cmd['id'],
      ok: true,
      result: { records: [{ id: 4, label: 'four' }], fields: ['id', 'label'], truncated: false },
    });
    const ready = await waitFor(async () => {
      const res = await svc.request<{ hasError: boolean; records: unknown[]; recordCount: number }>(
        'GET',
        `${S}/maps/${mapId}/previewquery/${start.body.previewId}`,
      );
      return res.status === 200 ? res.body : undefined;
    });
    expect(ready).toMatchObject({
      hasError: false,
      recordCount: 1,
      records: [{ id: 4, label: 'four' }],
      truncated: false,
      blockName: 'Q',
    });
  });

  it("keeps the Agent's error as the result of a native query test", async () => {
    const start = await svc.request<{ tests: Array<{ id: string; nativeQueryBlockID: string }> }>(
      'POST',
      `${S}/maps/${mapId}/nativequerytest`,
    );
    expect(start.status, start.text).toBe(200);
    expect(start.body.tests).toEqual([{ id: expect.any(String), nativeQueryBlockID: B(2), blockName: 'N' }]);
    const cmd: Incoming = await channel.next((m) => m['type'] === 'nativeQueryTest');
    expect(cmd).toMatchObject({ statement: 'SELECT 1 AS one', limit: 100 });
    expect((await svc.request('GET', `${S}/maps/${mapId}/nativequerytest?nativeQueryBlockID=${B(2)}`)).status).toBe(
      404,
    );
    channel.send({
      re: cmd['id'],
      ok: false,
      error: { code: 'CON_QUERY_FAILED', kind: 'config', message: 'no such table: items' },
    });
    const failed = await waitFor(async () => {
      const res = await svc.request<{ previewId: string; hasError: boolean; errorCode: string; message: string }>(
        'GET',
        `${S}/maps/${mapId}/nativequerytest?nativeQueryBlockID=${B(2)}`,
      );
      return res.status === 200 ? res.body : undefined;
    });
    expect(failed).toMatchObject({
      previewId: start.body.tests[0]?.id,
      status: 'Failed',
      hasError: true,
      errorCode: 'CON_QUERY_FAILED',
      message: 'no such table: items',
      records: [],
    });
  });
});

async function waitFor<T>(probe: () => Promise<T | undefined>, ms = 10_000): Promise<T> {
  const deadline = Date.now() + ms;
  for (;;) {
    const v = await probe();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 25));
  }
}
