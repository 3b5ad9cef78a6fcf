/**
 * Authentication of the HTTP / JSON API connector against loopback servers that check it: Basic,
 * Bearer, an API key in a header or in the query, OAuth 2.0 client credentials (one token fetch,
 * reused, fetched again after expiry or a 401). Secrets never appear in a thrown message or a log
 * line, neither as the plugin throws it nor as the host passes it on.
 */
import type http from 'node:http';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, afterEach, describe, expect, it } from 'vitest';
import type { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection } from '../../src/connectors/connection.js';
import type { CallContext, ConnectorSession } from '../../src/connectors/sdk.js';
import plugin from '../../connectors/http/index.js';
import { collect } from './conformance.js';
import { json, openHttp, serve, type SeenRequest, type Served } from './http-api.js';

const PASSWORD = 'pw-Secret-123';
const TOKEN = 'tok-Secret-456';
const API_KEY = 'key-Secret-789';
const CLIENT_SECRET = 'client-Secret-abc';
const SECRETS = [PASSWORD, TOKEN, API_KEY, CLIENT_SECRET];

const ITEMS = [
  { id: 1, name: 'a' },
  { id: 2, name: 'b' },
  { id: 3, name: 'c' },
];
const definition = (extra: Record<string, unknown> = {}): string =>
  JSON.stringify({
    entities: [
      {
        name: 'items',
        path: '/items',
        fields: [
          { name: 'id', type: 'integer' },
          { name: 'name', type: 'string' },
        ],
        key: 'id',
        create: { method: 'POST' },
        ...extra,
      },
    ],
  });

/** Every log line of every Connection these tests open. */
const logLines: string[] = [];
const sink = new Writable({
  write(chunk: Buffer, _enc, cb) {
    logLines.push(chunk.toString());
    cb();
  },
});
const log = pino({ level: 'trace' }, sink);

let cleanups: Array<() => Promise<void>> = [];
afterEach(async () => {
  for (const c of cleanups) await c();
  cleanups = [];
});
afterAll(() => {
  const all = logLines.join('');
  expect(all.length).toBeGreaterThan(0);
  for (const s of SECRETS) expect(all).not.toContain(s);
});

/** A server whose `allowed(req)` says whether the request carries the right credentials. */
async function setup(
  allowed: (req: SeenRequest) => boolean,
  props: Record<string, string>,
  more?: (req: SeenRequest, res: http.ServerResponse) => boolean,
): Promise<{ served: Served; conn: HostConnection; host: ConnectorHost }> {
  const served = await serve((req, res) => {
    if (more?.(req, res)) return;
    if (!allowed(req)) return json(res, 401, { message: 'bad credentials' });
    if (req.method === 'POST') return json(res, 201, { id: 9 });
    json(res, 200, ITEMS);
  });
  const { host, conn } = await openHttp(
    { baseUrl: served.url, definition: definition(), retryDelayMs: '1', ...props },
    log,
  );
  cleanups.push(async () => {
    await host.close();
    await served.close();
  });
  return { served, conn, host };
}

const basic = (user: string, pw: string): string => `Basic ${Buffer.from(`${user}:${pw}`).toString('base64')}`;

/** The plugin itself, without the host (whose scrubbing would hide a leak): the raw messages. */
async function rawSession(props: Record<string, string>): Promise<{ session: ConnectorSession; ctx: CallContext }> {
  const ctx: CallContext = { log, signal: new AbortController().signal, progress: () => undefined };
  return { session: await plugin.connect(props, ctx), ctx };
}

async function rawFailure(p: Promise<unknown>): Promise<Error> {
  try {
    await p;
  } catch (err) {
    return err as Error;
  }
  throw new Error('expected a failure');
}

describe('http connector authentication', () => {
  it('basic: the Authorization header; a wrong password is CON_AUTH_FAILED without the password', async () => {
    const ok = await setup((r) => r.headers.authorization === basic('ann', PASSWORD), {
      authType: 'basic',
      username: 'ann',
      password: PASSWORD,
    });
    expect((await collect(ok.conn.query('items'))).records).toHaveLength(3);
    const bad = await setup((r) => r.headers.authorization === basic('ann', PASSWORD), {
      authType: 'basic',
      username: 'ann',
      password: `${PASSWORD}x`,
    });
    const err = await rawFailure(collect(bad.conn.query('items')));
    expect(err).toMatchObject({ code: 'CON_AUTH_FAILED' });
    expect(err.message).toContain('HTTP 401 (bad credentials)');
  });

  it('bearer: the token in the Authorization header', async () => {
    const { conn, served } = await setup((r) => r.headers.authorization === `Bearer ${TOKEN}`, {
      authType: 'bearer',
      token: TOKEN,
    });
    await expect(conn.test()).resolves.toBeUndefined();
    expect((await conn.write('Create', 'items', [{ id: 9, name: 'new' }])).map((r) => r.ok)).toEqual([true]);
    expect(served.requests.every((r) => r.headers.authorization === `Bearer ${TOKEN}`)).toBe(true);
  });

  it('apiKey in a header of the given name', async () => {
    const { conn } = await setup((r) => r.headers['x-api-token'] === API_KEY, {
      authType: 'apiKey',
      apiKeyName: 'X-Api-Token',
      apiKey: API_KEY,
    });
    expect((await collect(conn.query('items'))).records).toHaveLength(3);
  });

  it('apiKey in the query: sent once per request, never in a message', async () => {
    // The API echoes the key in its next links, as many do; the connector sets it, never doubles it.
    const served = await serve((req, res) => {
      if (req.query.getAll('api_key').join() !== API_KEY) return json(res, 401, { message: 'no key' });
      const page = Number(req.query.get('page') ?? 1);
      if (page === 3) return json(res, 500, { message: 'page 3 broke' });
      json(res, 200, ITEMS, { link: `</items?page=${page + 1}&api_key=${API_KEY}>; rel="next"` });
    });
    cleanups.push(() => served.close());
    const props = {
      baseUrl: served.url,
      definition: definition({ pagination: { type: 'link' } }),
      authType: 'apiKey',
      apiKeyIn: 'query',
      apiKeyName: 'api_key',
      apiKey: API_KEY,
      maxRetries: '0',
    };
    const { session, ctx } = await rawSession(props);
    const err = await rawFailure(collect(session.query('items', undefined, { batchSize: 100 }, ctx)));
    expect(err.message).toBe('GET /items?page=3: the API answered HTTP 500 (page 3 broke).');
    expect(served.requests.map((r) => r.query.get('page'))).toEqual([null, '2', '3']);
  });

  it('oauth2: one token fetch reused, fetched again after it expires and after a 401', async () => {
    let issued = 0;
    let valid = new Set<string>();
    const tokenCalls: SeenRequest[] = [];
    const served = await serve((req, res) => {
      if (req.path === '/oauth/token') {
        tokenCalls.push(req);
        const form = new URLSearchParams(req.body);
        if (form.get('grant_type') !== 'client_credentials' || form.get('client_secret') !== CLIENT_SECRET)
          return json(res, 401, { error: 'invalid_client', error_description: `secret ${form.get('client_secret')}` });
        const token = `access-${++issued}`;
        valid.add(token);
        return json(res, 200, { access_token: token, token_type: 'Bearer', expires_in: 1 });
      }
      const token = /^Bearer (.*)$/.exec(req.headers.authorization ?? '')?.[1] ?? '';
      if (!valid.has(token)) return json(res, 401, { message: 'token expired' });
      json(res, 200, ITEMS);
    });
    cleanups.push(() => served.close());
    const props = {
      baseUrl: served.url,
      definition: definition(),
      authType: 'oauth2',
      tokenUrl: `${served.url}/oauth/token`,
      clientId: 'ferry',
      clientSecret: CLIENT_SECRET,
      scope: 'read write',
    };
    const { host, conn } = await openHttp(props, log);
    cleanups.push(() => host.close());
    await collect(conn.query('items'));
    await collect(conn.query('items'));
    await conn.test();
    expect(tokenCalls).toHaveLength(1);
    expect(new URLSearchParams(tokenCalls[0]?.body).get('scope')).toBe('read write');
    // expires_in 1: fetched again 0.9 s later.
    await new Promise((r) => setTimeout(r, 1000));
    await collect(conn.query('items'));
    expect(tokenCalls).toHaveLength(2);
    // The API revokes the token: the next request gets 401, a new token, and goes through.
    valid = new Set();
    expect((await collect(conn.query('items'))).records).toHaveLength(3);
    expect(tokenCalls).toHaveLength(3);
    const apiCalls = served.requests.filter((r) => r.path === '/items');
    expect(apiCalls.filter((r) => r.headers.authorization === 'Bearer access-2')).toHaveLength(2);

    // A wrong client secret: CON_AUTH_FAILED naming the endpoint's error code, never the secret it echoed.
    const { session, ctx } = await rawSession({ ...props, clientSecret: 'wrong-secret' });
    const err = await rawFailure(session.test(ctx));
    expect(err).toMatchObject({ name: 'ConnectorError', reason: 'AuthFailed' });
    expect(err.message).toContain('HTTP 401 (invalid_client)');
    expect(err.message).not.toContain('wrong-secret');
  });

  it('oauth2 with the client credentials as HTTP Basic; a 403 that stays is CON_AUTH_FAILED after one new token', async () => {
    let issued = 0;
    const served = await serve((req, res) => {
      if (req.path === '/token') {
        if (req.headers.authorization !== basic('ferry', CLIENT_SECRET))
          return json(res, 401, { error: 'invalid_client' });
        return json(res, 200, { access_token: `t${++issued}` });
      }
      json(res, 403, { title: 'Forbidden', detail: 'the client lacks the items scope' });
    });
    cleanups.push(() => served.close());
    const { host, conn } = await openHttp(
      {
        baseUrl: served.url,
        definition: definition(),
        authType: 'oauth2',
        tokenUrl: `${served.url}/token`,
        clientId: 'ferry',
        clientSecret: CLIENT_SECRET,
        clientAuth: 'basic',
      },
      log,
    );
    cleanups.push(() => host.close());
    await expect(collect(conn.query('items'))).rejects.toMatchObject({
      code: 'CON_AUTH_FAILED',
      message: expect.stringContaining('HTTP 403 (the client lacks the items scope)') as string,
    });
    expect(issued).toBe(2);
  });

  it('never puts a protected property into a thrown message, raw or through the host', async () => {
    const served = await serve((req, res) => {
      // An API that echoes what it was sent in its error answers.
      json(res, 400, { message: `rejected ${req.headers.authorization ?? ''} ${req.query.toString()}` });
    });
    cleanups.push(() => served.close());
    const kinds: Array<Record<string, string>> = [
      { authType: 'bearer', token: TOKEN },
      { authType: 'basic', username: 'u', password: PASSWORD },
      { authType: 'apiKey', apiKeyIn: 'query', apiKey: API_KEY },
    ];
    for (const props of kinds) {
      const all = { baseUrl: served.url, definition: definition(), ...props };
      const { session, ctx } = await rawSession(all);
      const raw = await rawFailure(collect(session.query('items', undefined, { batchSize: 10 }, ctx)));
      const { host, conn } = await openHttp(all, log);
      const hosted = await rawFailure(collect(conn.query('items')));
      await host.close();
      expect(hosted).toMatchObject({ code: 'CON_QUERY_INVALID' });
      // The API's message echoes the secret: the plugin takes it out before the host would.
      expect(raw.message).toMatch(
        /^The page 1 of items \(GET \/items\) failed: the API answered HTTP 400 \(rejected .*\[redacted\]/,
      );
      for (const s of SECRETS) {
        expect(raw.message).not.toContain(s);
        expect(hosted.message).not.toContain(s);
      }
    }
  });
});
