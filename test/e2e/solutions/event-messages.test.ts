import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until, type ServiceUnderTest } from '../agent/harness.js';
import { messageSolution } from '../../bench/solutions/service.js';
import {
  createConnection,
  prepared,
  SQLITE,
  sqliteTarget,
  startWithAgent,
  stopAll,
  type Execution,
  type RunningAgent,
  type SqliteTarget,
} from './harness.js';
import { runAgent, untilReady } from './faults-helpers.js';

/**
 * An Event Solution end to end: callers POST messages to its Map's endpoint, a real Agent process
 * takes them in batches and upserts them into a SQLite table; a kill -9 of the Agent while it
 * drains a queue loses no message, and a message the target refuses becomes a History record
 * error and leaves the queue.
 */
describe('an Event Solution on a real Agent: messages → Upsert into SQLite', () => {
  let sut: ServiceUnderTest;
  let agent: RunningAgent;
  let target: SqliteTarget;
  let S: string;
  let url: string;
  let dbId: string;
  let token: string;
  let lastRun: number | undefined;

  const post = async (body: unknown): Promise<{ status: number; text: string }> => {
    const res = await fetch(sut.url + url, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    return { status: res.status, text: await res.text() };
  };
  const rows = (): Array<{ id: number; name: string }> => {
    const db = new Database(target.file, { readonly: true });
    try {
      return db.prepare('SELECT id, name FROM orders ORDER BY id').all() as Array<{ id: number; name: string }>;
    } finally {
      db.close();
    }
  };
  const queued = (): number => sut.query<{ n: number }>('SELECT count(*) AS n FROM event_messages')[0]?.n ?? Number.NaN;
  const history = async (): Promise<Execution[]> =>
    (await sut.request<Execution[]>('GET', `${S}/history?limit=1000`)).body;

  beforeAll(async () => {
    ({ sut, agent } = await startWithAgent({ csv: {} }));
    target = sqliteTarget(path.join(sut.dataDir, 'orders.db'), ['orders'], { primaryKey: true });
    dbId = await createConnection(sut, 'Orders DB', SQLITE, { file: target.file });
    const made = await messageSolution(sut, {
      name: 'Webshop orders',
      agentId: agent.agentId,
      connectionId: dbId,
      entity: 'orders',
      fields: ['id', 'name'],
    });
    S = made.path;
    token = made.token;
    url = made.messagePath;
  }, 240_000);

  afterAll(async () => {
    await stopAll(sut);
  });

  it('a message posted arrives in the target, with an execution in History', { timeout: 60_000 }, async () => {
    const res = await post({ id: 1, name: 'first order' });
    expect(res.status, res.text).toBe(200);
    await until('the first order in the target', async () => (rows().length === 1 ? true : undefined), 30_000);
    expect(rows()).toEqual([{ id: 1, name: 'first order' }]);
    const runs = await until(
      'its execution',
      async () => {
        const h = await history();
        return h.length > 0 && h.every((e) => e.result !== 'InProgress') ? h : undefined;
      },
      30_000,
    );
    expect(runs.reduce((n, e) => n + e.recordsProcessed, 0)).toBe(1);
    expect(runs[0]).toMatchObject({ result: 'CompletedSuccessfully', recordsFailed: 0 });
    expect(queued()).toBe(0);
  });

  it('many callers at once: every message arrives once, in one or a few executions', { timeout: 90_000 }, async () => {
    // 40 callers post 25 arrays of 20 and 500 single messages: 1,000 orders, ids 1001…2000.
    const posts: unknown[] = [];
    for (let k = 0; k < 25; k++)
      posts.push(Array.from({ length: 20 }, (_, i) => ({ id: 1001 + k * 20 + i, name: `o${k}-${i}` })));
    for (let i = 500; i < 1000; i++) posts.push({ id: 1001 + i, name: `single ${i}` });
    let next = 0;
    await Promise.all(
      Array.from({ length: 40 }, async () => {
        while (next < posts.length) {
          const res = await post(posts[next++]);
          expect(res.status, res.text).toBe(200);
        }
      }),
    );
    await until('1,001 orders in the target', async () => (rows().length === 1001 ? true : undefined), 60_000);
    const ids = rows().map((r) => r.id);
    expect(new Set(ids).size).toBe(1001);
    expect(ids.filter((id) => id > 1000)).toHaveLength(1000);
    await until('the queue empty', async () => (queued() === 0 ? true : undefined), 20_000);
  });

  it(
    'kill -9 of the Agent while it drains 5,000 queued messages: each arrives, the queue empties',
    { timeout: 180_000 },
    async () => {
      process.kill(-agent.proc.pid, 'SIGKILL');
      await agent.proc.exited;
      // Queued while the Agent is down; taken when it is back.
      for (let k = 0; k < 50; k++) {
        const res = await post(
          Array.from({ length: 100 }, (_, i) => ({ id: 10_000 + k * 100 + i, name: `q${k}-${i}` })),
        );
        expect(res.status, res.text).toBe(200);
      }
      expect(queued()).toBe(5000);
      const since = new Date().toISOString();
      agent.proc = runAgent(agent.home, 1);
      await untilReady(sut, agent.agentId, since);
      await until('some of them written', async () => (rows().length > 1001 + 200 ? true : undefined), 60_000);
      process.kill(-agent.proc.pid, 'SIGKILL');
      await agent.proc.exited;
      const written = rows().length - 1001;
      expect(written).toBeLessThan(5000);
      const since2 = new Date().toISOString();
      agent.proc = runAgent(agent.home, 1);
      await untilReady(sut, agent.agentId, since2);
      await until('all 5,000 in the target', async () => (rows().length === 6001 ? true : undefined), 120_000);
      const ids = rows().map((r) => r.id);
      expect(new Set(ids).size).toBe(6001);
      expect(rows().find((r) => r.id === 14_999)).toEqual({ id: 14_999, name: 'q49-99' });
      await until('the queue empty', async () => (queued() === 0 ? true : undefined), 30_000);
      // The run the kill ended says so in History.
      const h = await history();
      expect(h.some((e) => (e.details ?? '').includes('RUN_AGENT_ENDED'))).toBe(true);
    },
  );

  it(
    'a message the target refuses is a record error in History and leaves the queue',
    { timeout: 60_000 },
    async () => {
      // orders.name is NOT NULL.
      const res = await post([{ id: 20_001, name: 'good' }, { id: 20_002 }, { id: 20_003, name: 'also good' }]);
      expect(res.status, res.text).toBe(200);
      await until('the two good ones', async () => (rows().some((r) => r.id === 20_003) ? true : undefined), 30_000);
      expect(rows().some((r) => r.id === 20_002)).toBe(false);
      const failed = await until(
        'the execution with the error',
        async () => (await history()).find((e) => e.recordsFailed > 0 && e.result !== 'InProgress'),
        30_000,
      );
      expect(failed.result).toBe('CompletedWithErrors');
      await until('the queue empty', async () => (queued() === 0 ? true : undefined), 20_000);
    },
  );
  it(
    'a message the target refused is reprocessed from its stored copy once the cause is fixed',
    { timeout: 90_000 },
    async () => {
      const O = `/v1/orgs/${sut.orgId}`;
      const capture = await sut.request('PUT', `${O}/SecuritySettings`, {
        body: {
          captureOnFailedRecordsForReprocessing: true,
          captureDuringCloudAppRuns: true,
          captureDuringLocalAgentAppRuns: true,
          isSourceDataLocal: true,
        },
      });
      expect(capture.status, JSON.stringify(capture.body)).toBe(200);
      const db = new Database(target.file);
      db.exec('CREATE UNIQUE INDEX orders_name ON orders (name)');
      db.close();
      type RecordError = { id: string; canReprocess: boolean; code: string };
      // The name of order 1 is taken: the target refuses the message. Sent again until the Agent
      // has the capture switch (its copy of the Solution follows the change within moments).
      let n = 0;
      const refused = await until(
        'a refused message with a stored copy',
        async () => {
          const id = 40_000 + ++n;
          expect((await post({ id, name: 'first order' })).status).toBe(200);
          const run = await until('its execution', async () => {
            const h = await history();
            return h.find(
              (e) =>
                e.recordsFailed > 0 && e.result !== 'InProgress' && e.recordsProcessed === 1 && e.id > (lastRun ?? 0),
            );
          });
          lastRun = run.id;
          const errors = (await sut.request<RecordError[]>('GET', `${S}/history/${run.id}/errors`)).body;
          return errors[0]?.canReprocess ? { run, error: errors[0], id } : undefined;
        },
        30_000,
      );
      const fix = new Database(target.file);
      fix.prepare('DELETE FROM orders WHERE id = 1').run();
      fix.close();
      const mark = await sut.request('POST', `${S}/history/${refused.run.id}/errors/${refused.error.id}/mark`);
      expect(mark.status, JSON.stringify(mark.body)).toBe(200);
      const again = await sut.request<{ started: boolean }>('POST', `${S}/history/${refused.run.id}/reprocess`);
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(again.body.started).toBe(true);
      await until(
        'the reprocessed message in the target',
        async () => (rows().some((r) => r.id === refused.id && r.name === 'first order') ? true : undefined),
        30_000,
      );
      const undo = new Database(target.file);
      undo.exec('DROP INDEX orders_name');
      undo.close();
    },
  );

  it(
    'a request/reply Map answers each request with its reply, writes it, and says why when it cannot',
    { timeout: 120_000 },
    async () => {
      const block = (n: number) => `99999999-1111-4111-8111-${String(n).padStart(12, '0')}`;
      const map = await sut.request<{ id: number }>('POST', `${S}/maps/advanced`, {
        body: {
          version: '3.0',
          name: 'Order lookup',
          mapType: 'IntegrationServicesAdvancedRequestResponseMap',
          blocks: [
            { blockId: block(1), name: 'Req', blockType: 'WaitForRequest', action: 'None', fields: ['id', 'name'] },
            {
              blockId: block(2),
              name: 'Put',
              blockType: 'Upsert',
              action: 'InsertUpdate',
              connectionId: dbId,
              entity: 'orders',
              fieldMappings: [
                { targetField: 'id', targetFormula: 'Req.id' },
                { targetField: 'name', targetFormula: 'Req.name' },
              ],
            },
            {
              blockId: block(3),
              name: 'Answer',
              blockType: 'BuildReply',
              action: 'None',
              fieldMappings: [
                { targetField: 'statusCode', targetFormula: '201' },
                { targetField: 'id', targetFormula: 'Req.id' },
                { targetField: 'greeting', targetFormula: 'CONCATENATE("hello ", UPPER(Req.name))' },
              ],
            },
            { blockId: block(4), name: 'Send', blockType: 'SendReply', action: 'None', source: 'Answer' },
          ],
        },
      });
      expect(map.status, JSON.stringify(map.body)).toBe(201);
      const job = await prepared(sut, S.split('/').at(-1) as string);
      expect(job, job.message).toMatchObject({ hasError: false, mapErrorModels: [] });
      const info = await sut.request<{ eventUrl: string }>('GET', `${S}/maps/${map.body.id}/eventinfo`);
      const at = `${sut.url}${new URL(info.body.eventUrl).pathname}?accesstoken=${token}`;
      expect(at).toContain(`/requests/${map.body.id}?`);
      const ask = async (body: unknown) => {
        const res = await fetch(at, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify(body),
        });
        return {
          status: res.status,
          type: res.headers.get('content-type'),
          body: (await res.json()) as Record<string, unknown>,
        };
      };
      // Eight callers at once, each answered with its own reply.
      const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => ask({ id: 30_000 + i, name: `n${i}` })));
      answers.forEach((a, i) => {
        expect(a.status, JSON.stringify(a.body)).toBe(201);
        expect(a.body).toEqual({ id: 30_000 + i, greeting: `hello N${i}` });
      });
      expect(rows().filter((r) => r.id >= 30_000 && r.id < 30_008)).toHaveLength(8);
      // The target refuses a request without a name (NOT NULL): the caller is told why, as a problem.
      const refused = await ask({ id: 30_100 });
      expect(refused.status).toBe(422);
      expect(refused.type).toContain('application/problem+json');
      expect(refused.body['code']).toBe('EVT_REQUEST_FAILED');
      // An array is not a request.
      expect((await ask([{ id: 1 }])).status).toBe(400);
      // Prefer: respond-async — 202 with a Location to poll, then the reply there (with the token).
      const later = await fetch(at, {
        method: 'POST',
        headers: { 'content-type': 'application/json', prefer: 'respond-async' },
        body: JSON.stringify({ id: 30_200, name: 'later' }),
      });
      expect(later.status).toBe(202);
      const location = later.headers.get('location') as string;
      expect(location).toMatch(new RegExp(`^/v1/orgs/${sut.orgId}/requests/${map.body.id}/replies/[0-9a-f-]{36}$`));
      const polled = await until(
        'the reply at its Location',
        async () => {
          const res = await fetch(`${sut.url}${location}?accesstoken=${token}`);
          return res.status === 202 ? undefined : { status: res.status, body: await res.json() };
        },
        30_000,
      );
      expect(polled).toEqual({ status: 201, body: { id: 30_200, greeting: 'hello LATER' } });
      expect((await fetch(`${sut.url}${location}`)).status).toBe(401);
      expect(
        (await fetch(`${sut.url}${location.replace(/[0-9a-f]{12}$/, '000000000000')}?accesstoken=${token}`)).status,
      ).toBe(404);
      // Its OpenAPI document: the request's fields, the reply's (not its status), at the endpoint's path.
      type Doc = { openapi: string; paths: Record<string, { post: Record<string, unknown> }> };
      const path = `/v1/orgs/${sut.orgId}/requests/${map.body.id}`;
      const doc = await sut.request<Doc>('GET', `${S}/maps/${map.body.id}/openapi`);
      expect(doc.status, JSON.stringify(doc.body)).toBe(200);
      expect(doc.body.openapi).toBe('3.0.3');
      expect(doc.body.paths[path]?.post).toMatchObject({
        requestBody: { content: { 'application/json': { schema: { properties: { id: {}, name: {} } } } } },
        responses: { '200': { content: { 'application/json': { schema: { properties: { id: {}, greeting: {} } } } } } },
      });
      for (const whole of [`${S}/openapi`, `/v1/orgs/${sut.orgId}/openapi`])
        expect(Object.keys((await sut.request<Doc>('GET', whole)).body.paths)).toEqual([path]);
      // A message Map has none.
      const messageMapId = Number(new URL(sut.url + url).pathname.split('/').at(-1));
      expect((await sut.request('GET', `${S}/maps/${messageMapId}/openapi`)).status).toBe(400);
      // Each request is an execution in History.
      const runs = await until(
        'the requests in History',
        async () => {
          const h = (await history()).filter((e) => e.recordsProcessed === 1 && e.result !== 'InProgress');
          return h.length >= 9 ? h : undefined;
        },
        30_000,
      );
      expect(runs.some((e) => e.result === 'CompletedWithErrors')).toBe(true);
    },
  );
});
