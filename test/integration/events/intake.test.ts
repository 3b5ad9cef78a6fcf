import http from 'node:http';
import type { Kysely } from 'kysely';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MessageIntake, type IntakeGroup } from '../../../service/events/intake.js';
import { MAX_MESSAGE_BYTES } from '../../../service/events/message-body.js';
import type { Database } from '../../../service/store/schema.js';
import { registerTestAgent } from '../../helpers/agent-client.js';
import { startService, type ApiResponse, type TestService } from '../../helpers/service.js';
import { STORE_TARGETS } from '../../helpers/stores.js';
import { eventEndpoint, type TestEndpoint } from './endpoint-rows.js';

interface Problem {
  code: string;
  detail: string;
  status: number;
}
interface Accepted {
  accepted: number;
  endpointId: number;
  duplicate?: boolean;
}

/** The queue limit of the test Services: small enough to reach, above what the other tests queue on one endpoint. */
const QUEUE_LIMIT = 100;

describe.each(STORE_TARGETS)('the message intake of Event Solutions on $name', (target) => {
  let svc: TestService;
  let agentId: string;
  let token: string;
  let nextMapId = 900_000;
  const db = () => svc.service.store.db;

  /** An Event Solution and its Message Endpoint (as prepare makes it): the Map ID of its URL and the endpoint's ID. */
  const endpoint = (name: string): Promise<TestEndpoint> => eventEndpoint(svc, agentId, name, ++nextMapId);

  const url = (mapId: number, query = `?accesstoken=${token}`) => `/v1/orgs/${svc.orgId}/messages/${mapId}${query}`;
  const post = <T = Accepted>(
    mapId: number,
    body: unknown,
    opts: { query?: string; headers?: Record<string, string>; from?: string } = {},
  ): Promise<ApiResponse<T>> =>
    svc.request<T>('POST', url(mapId, opts.query), { auth: null, body, headers: opts.headers, from: opts.from });

  const stored = async (endpointId: number): Promise<unknown[]> => {
    const rows = await db()
      .selectFrom('eventMessages')
      .select('body')
      .where('endpointId', '=', endpointId)
      .orderBy('id')
      .execute();
    return rows.map((r) => JSON.parse(r.body) as unknown);
  };
  const counters = async (endpointId: number) => {
    const row = await db()
      .selectFrom('messageEndpoints')
      .select(['messageCount', 'queued'])
      .where('id', '=', endpointId)
      .executeTakeFirstOrThrow();
    return { messageCount: Number(row.messageCount), queued: Number(row.queued) };
  };
  const expectProblem = (res: ApiResponse, status: number, code: string) => {
    expect(res.status, res.text).toBe(status);
    expect(String(res.headers['content-type'])).toMatch(/application\/problem\+json/);
    expect((res.body as Problem).code).toBe(code);
  };

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off', eventQueueLimit: QUEUE_LIMIT });
    agentId = (await registerTestAgent(svc, { name: 'Events agent' })).agentId;
    const settings = await svc.request<{ eventSolutionAccessToken: string }>(
      'GET',
      `/v1/orgs/${svc.orgId}/SecuritySettings`,
    );
    token = settings.body.eventSolutionAccessToken;
  }, 60_000);
  afterAll(async () => svc?.close());

  it('stores an object as one message, an array as several in order, and XML converted to an object', async () => {
    const ep = await endpoint('Stores');
    const one = await post(ep.mapId, { orderId: 1, customer: { name: 'Ann' }, lines: [{ sku: 'A' }] });
    expect(one.status, one.text).toBe(200);
    expect(one.body).toEqual({ accepted: 1, endpointId: ep.id });

    const many = await post(ep.mapId, [{ orderId: 2 }, { orderId: 3, note: 'ünïcødé 😀' }, { orderId: 4 }]);
    expect(many.body).toEqual({ accepted: 3, endpointId: ep.id });

    const xml = await post(ep.mapId, '<Order id="5"><Customer>Bob</Customer><Line>x</Line><Line>y</Line></Order>', {
      headers: { 'content-type': 'application/xml' },
    });
    expect(xml.status, xml.text).toBe(200);
    expect(xml.body).toEqual({ accepted: 1, endpointId: ep.id });

    expect(await stored(ep.id)).toEqual([
      { orderId: 1, customer: { name: 'Ann' }, lines: [{ sku: 'A' }] },
      { orderId: 2 },
      { orderId: 3, note: 'ünïcødé 😀' },
      { orderId: 4 },
      { id: '5', Customer: 'Bob', Line: ['x', 'y'] },
    ]);
    expect(await counters(ep.id)).toEqual({ messageCount: 5, queued: 5 });
  });

  it('reads a body without a content type by its first character', async () => {
    const ep = await endpoint('Sniffed');
    const send = (body: string) =>
      new Promise<number>((resolve, reject) => {
        const req = http.request(new URL(url(ep.mapId), svc.url), { method: 'POST' }, (res) => {
          res.resume();
          res.on('end', () => resolve(res.statusCode ?? 0));
        });
        req.on('error', reject);
        req.end(body);
      });
    expect(await send('{"a":1}')).toBe(200);
    expect(await send('[{"a":2}]')).toBe(200);
    expect(await send('<m><a>3</a></m>')).toBe(200);
    expect(await stored(ep.id)).toEqual([{ a: 1 }, { a: 2 }, { a: '3' }]);
  });

  it('refuses a missing or wrong token with 401 and stores nothing; Basic credentials are no substitute', async () => {
    const ep = await endpoint('Tokens');
    expectProblem(await post(ep.mapId, { a: 1 }, { query: '' }), 401, 'EVT_TOKEN_INVALID');
    expectProblem(
      await post(ep.mapId, { a: 1 }, { query: '?accesstoken=3f2504e0-4f89-41d3-9a0c-0305e82c3301' }),
      401,
      'EVT_TOKEN_INVALID',
    );
    expectProblem(await post(ep.mapId, { a: 1 }, { query: '?accesstoken=x' }), 401, 'EVT_TOKEN_INVALID');
    const basic = await svc.request('POST', url(ep.mapId, ''), { body: { a: 1 } });
    expectProblem(basic, 401, 'EVT_TOKEN_INVALID');
    expect((basic.body as Problem).detail).toMatch(/not a user's email and password/);
    expect(await stored(ep.id)).toEqual([]);
    expect(await counters(ep.id)).toEqual({ messageCount: 0, queued: 0 });
  });

  it('takes the token in the query in any case, in X-Access-Token and as a Bearer token', async () => {
    const ep = await endpoint('Token places');
    expect((await post(ep.mapId, { via: 'AccessToken' }, { query: `?AccessToken=${token}` })).status).toBe(200);
    expect(
      (await post(ep.mapId, { via: 'ACCESSTOKEN' }, { query: `?ACCESSTOKEN=${token.toUpperCase()}` })).status,
    ).toBe(200);
    expect((await post(ep.mapId, { via: 'header' }, { query: '', headers: { 'X-Access-Token': token } })).status).toBe(
      200,
    );
    const bearer = await post(
      ep.mapId,
      { via: 'bearer' },
      { query: '', headers: { authorization: `Bearer ${token}` } },
    );
    expect(bearer.status, bearer.text).toBe(200);
    expect(await stored(ep.id)).toEqual([
      { via: 'AccessToken' },
      { via: 'ACCESSTOKEN' },
      { via: 'header' },
      { via: 'bearer' },
    ]);
  });

  it('refuses the old token at once after resetaccesstoken', async () => {
    const ep = await endpoint('Reset');
    expect((await post(ep.mapId, { n: 1 })).status).toBe(200);
    const old = token;
    const reset = await svc.request<{ eventSolutionAccessToken: string }>(
      'PUT',
      `/v1/orgs/${svc.orgId}/SecuritySettings/resetaccesstoken`,
    );
    expect(reset.status).toBe(200);
    token = reset.body.eventSolutionAccessToken;
    expect(token).not.toBe(old);
    expectProblem(await post(ep.mapId, { n: 2 }, { query: `?accesstoken=${old}` }), 401, 'EVT_TOKEN_INVALID');
    expect((await post(ep.mapId, { n: 3 })).status).toBe(200);
    expect(await stored(ep.id)).toEqual([{ n: 1 }, { n: 3 }]);
  });

  it('needs a Security Rule with eventSolutionAccessEnabled that covers the caller (403 otherwise)', async () => {
    const ep = await endpoint('Rules');
    // Admitted once first: what the admission read is cached, and the change below must end that.
    expect((await post(ep.mapId, { n: 0 })).status).toBe(200);
    // The bootstrap rule (loopback) opens Event Solutions: closed for this test.
    await db()
      .updateTable('securityRules')
      .set({ eventSolutionAccessEnabled: 0 })
      .where('orgId', '=', svc.orgId)
      .execute();
    try {
      const none = await post<Problem>(ep.mapId, { n: 1 });
      expectProblem(none, 403, 'EVT_NO_EVENT_RULE');
      expect(none.body.detail).toMatch(/eventSolutionAccessEnabled/);

      const rule = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/securityrules`, {
        body: {
          name: 'Event senders',
          allowedIpRangeStartAddress: '127.0.0.9',
          allowedIpRangeEndAddress: '127.0.0.10',
          apiAccessEnabled: false,
          eventSolutionAccessEnabled: true,
        },
      });
      expect(rule.status, rule.text).toBe(201);
      expectProblem(await post(ep.mapId, { n: 2 }), 403, 'EVT_FORBIDDEN_IP');
      expectProblem(await post(ep.mapId, { n: 3 }, { from: '127.0.0.11' }), 403, 'EVT_FORBIDDEN_IP');
      const inside = await post(ep.mapId, { n: 4 }, { from: '127.0.0.9' });
      expect(inside.status, inside.text).toBe(200);
      expect(await stored(ep.id)).toEqual([{ n: 0 }, { n: 4 }]);
      // The API itself stays closed to that address: the rule opens Event Solutions only.
      expect((await svc.request('GET', `/v1/orgs/${svc.orgId}`, { from: '127.0.0.9' })).status).toBe(403);
    } finally {
      await db()
        .updateTable('securityRules')
        .set({ eventSolutionAccessEnabled: 1 })
        .where('orgId', '=', svc.orgId)
        .execute();
    }
  });

  it('answers 404 for an unknown Organization or Map ID, and 409 for a disabled Solution, storing nothing', async () => {
    const ep = await endpoint('Disabled');
    expectProblem(await post(999_999, { n: 1 }), 404, 'API_NOT_FOUND');
    expectProblem(
      await svc.request('POST', `/v1/orgs/424242/messages/${ep.mapId}?accesstoken=${token}`, {
        auth: null,
        body: { n: 1 },
      }),
      404,
      'API_NOT_FOUND',
    );
    expectProblem(await post(Number.NaN, { n: 1 }), 404, 'API_NOT_FOUND');

    expect((await post(ep.mapId, { n: 0 })).status).toBe(200);
    await db().updateTable('solutions').set({ isDisabled: 1 }).where('id', '=', ep.solutionId).execute();
    const disabled = await post<Problem>(ep.mapId, { n: 2 });
    expectProblem(disabled, 409, 'EVT_SOLUTION_DISABLED');
    expect(disabled.body.detail).toMatch(/"Disabled" of this Message Endpoint is disabled/);
    await db().updateTable('solutions').set({ isDisabled: 0 }).where('id', '=', ep.solutionId).execute();
    expect((await post(ep.mapId, { n: 3 })).status).toBe(200);
    expect(await stored(ep.id)).toEqual([{ n: 0 }, { n: 3 }]);
  });

  it(`refuses a message of ${MAX_MESSAGE_BYTES} + 1 bytes with 413 and takes one of exactly ${MAX_MESSAGE_BYTES}`, async () => {
    const ep = await endpoint('Large');
    // {"d":"xxx…"}: 8 characters around the text.
    const message = (bytes: number) => `{"d":"${'x'.repeat(bytes - 8)}"}`;
    const over = await post(ep.mapId, message(MAX_MESSAGE_BYTES + 1));
    expectProblem(over, 413, 'EVT_MESSAGE_TOO_LARGE');
    expect(await counters(ep.id)).toEqual({ messageCount: 0, queued: 0 });
    const exact = await post(ep.mapId, message(MAX_MESSAGE_BYTES));
    expect(exact.status, exact.text.slice(0, 300)).toBe(200);
    const row = await db()
      .selectFrom('eventMessages')
      .select((eb) => eb.fn('length', [eb.ref('body')]).as('n'))
      .where('endpointId', '=', ep.id)
      .executeTakeFirstOrThrow();
    expect(Number(row.n)).toBe(MAX_MESSAGE_BYTES);
  }, 60_000);

  it('answers 429 with Retry-After at the queue limit and stores nothing of the refused POST', async () => {
    const ep = await endpoint('Full');
    const batch = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ n: from + i }));
    expect((await post(ep.mapId, batch(0, QUEUE_LIMIT - 2))).status).toBe(200);
    const over = await post(ep.mapId, batch(1000, 3));
    expectProblem(over, 429, 'EVT_QUEUE_FULL');
    expect(over.headers['retry-after']).toBe('5');
    expect(await counters(ep.id)).toEqual({ messageCount: QUEUE_LIMIT - 2, queued: QUEUE_LIMIT - 2 });
    expect((await post(ep.mapId, batch(2000, 2))).status).toBe(200);
    expectProblem(await post(ep.mapId, { n: 3000 }), 429, 'EVT_QUEUE_FULL');
    const rows = await stored(ep.id);
    expect(rows).toHaveLength(QUEUE_LIMIT);
    expect(rows.at(-1)).toEqual({ n: 2001 });
    expect(await counters(ep.id)).toEqual({ messageCount: QUEUE_LIMIT, queued: QUEUE_LIMIT });
    // More messages in one POST than a queue holds can never fit: 413, not "retry".
    expectProblem(await post(ep.mapId, batch(0, QUEUE_LIMIT + 1)), 413, 'EVT_MESSAGE_TOO_LARGE');
  });

  it('stores a POST once per Idempotency-Key and answers its replays the same, marked duplicate', async () => {
    const ep = await endpoint('Idempotent');
    const headers = { 'Idempotency-Key': 'order-77-attempt' };
    const first = await post(ep.mapId, [{ n: 1 }, { n: 2 }], { headers });
    expect(first.body).toEqual({ accepted: 2, endpointId: ep.id });
    const again = await post(ep.mapId, [{ n: 1 }, { n: 2 }], { headers });
    expect(again.status).toBe(200);
    expect(again.body).toEqual({ accepted: 2, endpointId: ep.id, duplicate: true });
    const concurrent = await Promise.all(
      Array.from({ length: 8 }, () => post(ep.mapId, { n: 3 }, { headers: { 'Idempotency-Key': 'burst' } })),
    );
    expect(concurrent.map((r) => r.status)).toEqual(Array(8).fill(200));
    expect(concurrent.filter((r) => !r.body.duplicate)).toHaveLength(1);
    expect(await stored(ep.id)).toEqual([{ n: 1 }, { n: 2 }, { n: 3 }]);
    expect(await counters(ep.id)).toEqual({ messageCount: 3, queued: 3 });
    const long = await post(ep.mapId, { n: 4 }, { headers: { 'Idempotency-Key': 'k'.repeat(201) } });
    expectProblem(long, 400, 'API_VALIDATION');
    expect((await post(ep.mapId, { n: 5 }, { headers: { 'Idempotency-Key': 'k'.repeat(200) } })).status).toBe(200);
  });

  it('stores 64 concurrent POSTs exactly once each', async () => {
    const ep = await endpoint('Concurrent');
    const results = await Promise.all(Array.from({ length: 64 }, (_, i) => post(ep.mapId, { seq: i, pad: 'p' })));
    expect(results.map((r) => r.status)).toEqual(Array(64).fill(200));
    const row = await db()
      .selectFrom('eventMessages')
      .select((eb) => [eb.fn.countAll().as('n'), eb.fn.count(eb.ref('body')).distinct().as('distinct')])
      .where('endpointId', '=', ep.id)
      .executeTakeFirstOrThrow();
    expect({ n: Number(row.n), distinct: Number(row.distinct) }).toEqual({ n: 64, distinct: 64 });
    const seqs = (await stored(ep.id)).map((m) => (m as { seq: number }).seq).sort((a, b) => a - b);
    expect(seqs).toEqual(Array.from({ length: 64 }, (_, i) => i));
    expect(await counters(ep.id)).toEqual({ messageCount: 64, queued: 64 });
  });

  it('refuses bad bodies with 400 problems and stores nothing', async () => {
    const ep = await endpoint('Bad bodies');
    for (const body of ['{bad json', '[]', '[{"a":1}, 2]', '"text"', '42', 'null', '<a><b></a>', '<!DOCTYPE a><a/>'])
      expectProblem(await post(ep.mapId, body), 400, 'EVT_MESSAGE_INVALID');
    expectProblem(
      await post(ep.mapId, 'a=1', { headers: { 'content-type': 'application/x-www-form-urlencoded' } }),
      415,
      'API_UNSUPPORTED_MEDIA_TYPE',
    );
    expect(await counters(ep.id)).toEqual({ messageCount: 0, queued: 0 });
  });

  it('is not held back by the API rate limit of the Organization', async () => {
    const limited = await startService(target, { cloudAgents: 'off', rateLimitPerMinute: 2 });
    try {
      const settings = await limited.request<{ eventSolutionAccessToken: string }>(
        'GET',
        `/v1/orgs/${limited.orgId}/SecuritySettings`,
      );
      // The rest of the minute's API calls, then messages beyond the limit.
      await limited.request('GET', `/v1/orgs/${limited.orgId}`);
      expect((await limited.request('GET', `/v1/orgs/${limited.orgId}`)).status).toBe(429);
      const res = await limited.request(
        'POST',
        `/v1/orgs/${limited.orgId}/messages/1?accesstoken=${settings.body.eventSolutionAccessToken}`,
        { auth: null, body: { n: 1 } },
      );
      expectProblem(res, 404, 'API_NOT_FOUND');
    } finally {
      await limited.close();
    }
  }, 60_000);

  describe('the group commit', () => {
    /** The Service's store, with its transactions counted. */
    const counted = (): { db: Kysely<Database>; commits: () => number } => {
      let n = 0;
      const real = db();
      const proxy = new Proxy(real, {
        get(target, prop, receiver) {
          if (prop === 'transaction') {
            n += 1;
            return () => real.transaction();
          }
          return Reflect.get(target, prop, receiver) as unknown;
        },
      });
      return { db: proxy, commits: () => n };
    };
    const log = pino({ level: 'silent' });

    it('stores 32 concurrent groups in about one commit, waking each endpoint once per flush', async () => {
      const a = await endpoint('Group commit A');
      const b = await endpoint('Group commit B');
      const { db: store, commits } = counted();
      const woken: number[] = [];
      const intake = new MessageIntake({
        db: store,
        events: { stored: (on) => woken.push(on.endpointId) },
        queueLimit: QUEUE_LIMIT,
        log,
      });
      const group = (i: number): IntakeGroup => {
        const ep = i % 2 === 0 ? a : b;
        return { endpointId: ep.id, orgId: svc.orgId, solutionId: ep.solutionId, bodies: [JSON.stringify({ i })] };
      };
      const outcomes = await Promise.all(Array.from({ length: 32 }, (_, i) => intake.accept(group(i))));
      await intake.close();
      expect(outcomes.every((o) => o.status === 'stored')).toBe(true);
      expect(commits()).toBeLessThanOrEqual(2);
      expect(woken.sort()).toEqual([a.id, b.id].sort());
      expect((await stored(a.id)).map((m) => (m as { i: number }).i)).toEqual(
        Array.from({ length: 16 }, (_, k) => 2 * k),
      );
      await expect(intake.accept(group(0))).rejects.toMatchObject({ code: 'SVC_UNAVAILABLE' });
    });

    it('lets two intakes (replicas) flush at once: one store per Idempotency-Key, no deadlock, no failed flush', async () => {
      const a = await endpoint('Replicas A');
      const b = await endpoint('Replicas B');
      const replicas = [0, 1].map(
        () => new MessageIntake({ db: db(), events: { stored: () => undefined }, queueLimit: QUEUE_LIMIT, log }),
      );
      const on = (ep: typeof a, i: number, key?: string): IntakeGroup => ({
        endpointId: ep.id,
        orgId: svc.orgId,
        solutionId: ep.solutionId,
        bodies: [JSON.stringify({ i })],
        idempotencyKey: key,
      });
      const calls: Array<Promise<{ status: string }>> = [];
      for (let round = 0; round < 10; round++) {
        // The same keys reach both replicas, and their groups name the endpoints in opposite orders.
        const [r0, r1] = replicas as [MessageIntake, MessageIntake];
        calls.push(r0.accept(on(a, round, `k${round}`)), r0.accept(on(b, round, `k${round}`)));
        calls.push(r1.accept(on(b, round, `k${round}`)), r1.accept(on(a, round, `k${round}`)));
      }
      const outcomes = await Promise.all(calls);
      await Promise.all(replicas.map((r) => r.close()));
      expect(outcomes.filter((o) => o.status === 'stored')).toHaveLength(20);
      expect(outcomes.filter((o) => o.status === 'duplicate')).toHaveLength(20);
      for (const ep of [a, b]) {
        expect((await stored(ep.id)).map((m) => (m as { i: number }).i).sort((x, y) => x - y)).toEqual(
          Array.from({ length: 10 }, (_, i) => i),
        );
        expect(await counters(ep.id)).toEqual({ messageCount: 10, queued: 10 });
      }
    });

    it('rejects every caller of a failing flush, and stores nothing of it', async () => {
      const ep = await endpoint('Failing flush');
      const broken = new Proxy(db(), {
        get(target, prop, receiver) {
          if (prop === 'transaction') throw new Error('the disk is gone');
          return Reflect.get(target, prop, receiver) as unknown;
        },
      });
      const intake = new MessageIntake({
        db: broken,
        events: { stored: () => undefined },
        queueLimit: QUEUE_LIMIT,
        log,
      });
      const calls = Array.from({ length: 4 }, (_, i) =>
        intake.accept({ endpointId: ep.id, orgId: svc.orgId, solutionId: ep.solutionId, bodies: [`{"i":${i}}`] }),
      );
      for (const call of calls) await expect(call).rejects.toMatchObject({ code: 'SVC_STORE' });
      await intake.close();
      expect(await stored(ep.id)).toEqual([]);
    });
  });
});
