import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoginThrottle } from '../../../../service/auth/login-throttle.js';
import { ADMIN, startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

/**
 * Every /v1 route of the OpenAPI document, fed malformed input: bad JSON, wrong types, huge strings,
 * unknown fields, deeply nested bodies, text that is not valid Unicode, bad and undecodable path
 * parameters, integer parameters that are not decimal digits, credentials with NUL bytes or bytes
 * that are not UTF-8. None may answer 5xx, and the plainly malformed ones must answer 4xx with a
 * problem document.
 */
interface Operation {
  parameters?: Array<{ in: string; name: string; schema?: { type?: string } }>;
  requestBody?: unknown;
}
type Paths = Record<string, Record<string, Operation>>;

const HUGE = 'x'.repeat(100_000);
const GUID = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';

/** Bodies nested far past the limit of 100 levels, at the top and inside a field. */
const nestedArrays = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const nestedObjects = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
const DEEP_BODIES: Array<[string, string]> = [
  ['arrays 5,000 deep', nestedArrays(5_000)],
  ['arrays 100,000 deep', nestedArrays(100_000)],
  ['objects 20,000 deep', nestedObjects(20_000)],
  ['objects 20,000 deep in a field', `{"name":"n","value1":${nestedObjects(20_000)}}`],
  ['arrays 5,000 deep in a field', `{"name":${nestedArrays(5_000)}}`],
  ['arrays 101 deep in a field', `{"securityRules":${nestedArrays(100)}}`],
];

/** Routes that answer without credentials. */
const PUBLIC = [/\/register$/];

const basic = (...parts: Array<string | number[]>): string =>
  `Basic ${Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p)))).toString('base64')}`;

/**
 * Authorization headers no store can match: Basic credentials with a NUL (PostgreSQL text cannot
 * hold one), with bytes that are not UTF-8 or over-long, raw Latin-1 bytes in the header, and bearer
 * tokens that are malformed or name no Agent. (Node's client refuses to send a NUL in a header, and
 * Node's server refuses such a request before any route.)
 */
const BAD_AUTHORIZATIONS: Array<[string, string]> = [
  ['Basic NUL:NUL', 'Basic ADoA'],
  ['Basic NUL in the login', basic('admin\u0000@ferry.test:x')],
  ["Basic NUL in a real login's password", basic(`${ADMIN.email}:\u0000${ADMIN.password}`)],
  ['Basic login not UTF-8', basic([0xff, 0xfe], ':x')],
  ['Basic password not UTF-8', basic(`${ADMIN.email}:`, [0xc3, 0x28])],
  ['Basic surrogate encoded in UTF-8', basic('a', [0xed, 0xa0, 0x80], ':x')],
  ['Basic over-long login', basic(`${'a'.repeat(400)}@ferry.test:x`)],
  ['Basic Latin-1 bytes in the header', 'Basic \u00ff\u00fe\u0080'],
  ['Bearer Latin-1 bytes', `Bearer ${GUID}.\u00ff\u00e9`],
  ['Bearer of no Agent', `Bearer ${GUID}.c2VjcmV0`],
];

function fill(path: string, orgId: number, other: string): string {
  return path.replace(/\{orgId\}/g, String(orgId)).replace(/\{[^}]+\}/g, encodeURIComponent(other));
}

describe.each(STORE_TARGETS)('fuzzing every route on $name', (target) => {
  let svc: TestService;
  let ops: Array<{ method: string; path: string; op: Operation }>;
  beforeAll(async () => {
    // Failed logins are not throttled here, so that every route sees the bad credentials themselves
    // (test/integration/service/auth/login-throttle.test.ts checks that they count).
    svc = await startService(target, {}, { loginThrottle: new LoginThrottle({ perPair: 1e9, perAddress: 1e9 }) });
    const doc = await svc.request<{ paths: Paths }>('GET', '/v1/openapi.json', { auth: null });
    ops = Object.entries(doc.body.paths).flatMap(([path, methods]) =>
      Object.entries(methods).map(([method, op]) => ({ method: method.toUpperCase(), path, op })),
    );
  }, 60_000);
  afterAll(async () => svc?.close());

  const expectNo5xx = (status: number, what: string) => expect(status, what).toBeLessThan(500);
  const expect4xx = (res: { status: number; headers: Record<string, unknown> }, what: string) => {
    expect(res.status, what).toBeGreaterThanOrEqual(400);
    expect(res.status, what).toBeLessThan(500);
    expect(String(res.headers['content-type']), what).toMatch(/application\/problem\+json/);
  };

  it('finds the routes to fuzz', () => {
    expect(ops.length).toBeGreaterThan(10);
  });

  it('refuses every route without credentials, but the public ones', async () => {
    for (const { method, path } of ops) {
      const res = await svc.request(method, fill(path, svc.orgId, GUID), {
        auth: null,
        body: method === 'GET' || method === 'DELETE' ? undefined : {},
      });
      if (PUBLIC.some((re) => re.test(path))) expectNo5xx(res.status, `${method} ${path}`);
      else expect(res.status, `${method} ${path}`).toBe(401);
    }
  });

  it('refuses credentials no store can hold (NUL, not UTF-8) on every route with a 401 problem, never a 5xx', async () => {
    for (const { method, path } of ops) {
      const url = fill(path, svc.orgId, GUID);
      for (const [shape, authorization] of BAD_AUTHORIZATIONS) {
        const res = await svc.request(method, url, {
          auth: null,
          headers: { authorization },
          body: method === 'GET' || method === 'DELETE' ? undefined : {},
        });
        const what = `${method} ${path} ${shape}`;
        if (PUBLIC.some((re) => re.test(path))) {
          expectNo5xx(res.status, what);
          continue;
        }
        expect4xx(res, what);
        expect(res.status, what).toBe(401);
      }
    }
  }, 120_000);

  it('answers bad path parameters with 4xx', async () => {
    for (const { method, path } of ops.filter((o) => o.path.includes('{'))) {
      for (const bad of ['abc', '-1', '99999999999999999999', HUGE.slice(0, 400), '..%2F..', '%00', "' OR 1=1 --"]) {
        const p = path.replace(/\{[^}]+\}/g, encodeURIComponent(bad));
        const res = await svc.request(method, p, { body: method === 'GET' || method === 'DELETE' ? undefined : {} });
        expect(res.status, `${method} ${p.slice(0, 120)}`).toBeGreaterThanOrEqual(400);
        expectNo5xx(res.status, `${method} ${p.slice(0, 120)}`);
      }
    }
  });

  it('answers malformed bodies with 4xx problems', async () => {
    for (const { method, path } of ops.filter((o) => o.op.requestBody !== undefined)) {
      const url = fill(path, svc.orgId, GUID);
      const what = `${method} ${path}`;
      for (const raw of ['{bad json', '[', '"unterminated', '{"a":1}{"b":2}', '\u0000']) {
        expect4xx(await svc.request(method, url, { body: raw }), `${what} ${JSON.stringify(raw)}`);
      }
      for (const wrong of [[], 42, 'text', null, true]) {
        const res = await svc.request(method, url, { body: JSON.stringify(wrong) });
        expect4xx(res, `${what} ${JSON.stringify(wrong)}`);
      }
      const unknown = await svc.request(method, url, { body: { definitelyNotAField: 1, nested: { deep: [1, 2] } } });
      expect4xx(unknown, `${what} unknown fields`);
      const huge = await svc.request(method, url, {
        body: { name: HUGE, email: HUGE, value1: HUGE, description: HUGE },
      });
      expectNo5xx(huge.status, `${what} huge strings`);
      const types = await svc.request(method, url, {
        body: { name: 42, email: [], securityRules: 'x', parentId: 'y', limit: {} },
      });
      expectNo5xx(types.status, `${what} wrong types`);
      const nul = await svc.request(method, url, {
        body: { name: 'a\u0000b', email: 'x\u0000@y.z', value1: '\u0000' },
      });
      expect4xx(nul, `${what} NUL characters`);
      const proto = await svc.request(method, url, {
        body: '{"__proto__": {"x": 1}, "constructor": {"prototype": {"y": 1}}}',
      });
      expect4xx(proto, `${what} prototype keys`);
      const xml = await svc.request(method, url, { body: '<a/>', headers: { 'content-type': 'application/xml' } });
      expect4xx(xml, `${what} xml`);
      for (const body of ['{"name":"sur\\ud800x","value1":"\\udc00"}', '{"\\ud800":1}', '["\\ud83d"]']) {
        expect4xx(await svc.request(method, url, { body }), `${what} lone surrogate ${body}`);
      }
    }
  });

  it('refuses deeply nested bodies with 400 API_BODY_TOO_DEEP on every JSON route', async () => {
    const routes = ops.filter((o) => o.op.requestBody !== undefined);
    let refusedForDepth = 0;
    for (const { method, path } of routes) {
      const url = fill(path, svc.orgId, GUID);
      for (const [shape, body] of DEEP_BODIES) {
        const res = await svc.request(method, url, { body, auth: /\/register$/.test(path) ? null : undefined });
        const what = `${method} ${path} ${shape}`;
        expect4xx(res, what);
        // Routes that refuse the caller before reading the body (an Agent's bearer route called
        // with a user's credentials) answer that refusal; every other one reads and refuses the body.
        if (res.status === 401 || res.status === 403) continue;
        expect(res.status, what).toBe(400);
        expect((res.body as { code?: string }).code, what).toBe('API_BODY_TOO_DEEP');
        refusedForDepth++;
      }
    }
    expect(refusedForDepth).toBeGreaterThan(routes.length * DEEP_BODIES.length * 0.8);
  }, 120_000);

  it('answers undecodable and over-long path parameters with problems', async () => {
    const shapes: Array<[string, number, string]> = [
      ['%ED%A0%80', 400, 'API_MALFORMED_URL'],
      ['%E2%82', 400, 'API_MALFORMED_URL'],
      ['%C0%AF', 400, 'API_MALFORMED_URL'],
      ['%FF', 400, 'API_MALFORMED_URL'],
      ['a'.repeat(501), 414, 'API_URI_TOO_LONG'],
    ];
    for (const { method, path } of ops.filter((o) => o.path.includes('{'))) {
      for (const [raw, status, code] of shapes) {
        const p = path.replace(/\{[^}]+\}/g, raw);
        const what = `${method} ${p.slice(0, 120)}`;
        const res = await svc.request(method, p, { body: method === 'GET' || method === 'DELETE' ? undefined : {} });
        expect4xx(res, what);
        expect(res.status, what).toBe(status);
        expect((res.body as { code?: string }).code, what).toBe(code);
      }
    }
  });

  it('answers bad integer (limit, offset, …) and boolean parameters with 4xx', async () => {
    // Integer parameters take decimal digits only: hex, exponents, fractions, signs, blanks, a
    // bracketed or repeated parameter are all refused.
    const BAD_INTEGERS = ['-1', '99999999999999', 'abc', '1.5', '0x2', '1e1', '+1', ' 1', '', '0b1', 'Infinity'];
    let integers = 0;
    for (const { method, path, op } of ops.filter((o) => o.method === 'GET')) {
      const params = (op.parameters ?? []).filter((p) => p.in === 'query');
      const url = fill(path, svc.orgId, GUID);
      for (const { name, schema } of params) {
        const type = schema?.type;
        const integer = type === 'integer' || name === 'limit' || name === 'offset';
        if (integer) integers++;
        const bads = integer ? BAD_INTEGERS : type === 'boolean' ? ['maybe'] : [HUGE.slice(0, 5000), 'a\u0000b'];
        for (const bad of bads) {
          const res = await svc.request(method, `${url}?${name}=${encodeURIComponent(bad)}`);
          if (integer || type === 'boolean') expect4xx(res, `${method} ${path}?${name}=${bad.slice(0, 20)}`);
          else expectNo5xx(res.status, `${method} ${path}?${name}=…`);
        }
        if (integer) {
          for (const query of [`${name}[]=1`, `${name}[0]=1`, `${name}=1&${name}=2`]) {
            expect4xx(await svc.request(method, `${url}?${query}`), `${method} ${path}?${query}`);
          }
        }
      }
    }
    expect(integers).toBeGreaterThan(10);
  });

  it('refuses a body over the size limit with 413', async () => {
    const small = await startService(target, { bodyLimit: 4096 });
    try {
      const res = await small.request('POST', '/v1/orgs', { body: { name: HUGE } });
      expect(res.status).toBe(413);
    } finally {
      await small.close();
    }
  });
});
