import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type ApiResponse, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

/**
 * What the HTTP layer refuses before any route runs: bodies nested deeper than 100 levels, text
 * that is not valid Unicode, integer parameters that are not plain decimal digits, and paths the
 * router cannot read. Each answer is a problem document with a code of the error table, never a 5xx.
 */
const nestedArrays = (depth: number): string => `${'['.repeat(depth)}${']'.repeat(depth)}`;
const nestedObjects = (depth: number): string => `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;

interface Problem {
  code: string;
  status: number;
  errors?: Array<{ path: string; message: string }>;
}

function expectProblem(res: ApiResponse, status: number, code: string, what = ''): Problem {
  expect(res.status, `${what} ${res.text.slice(0, 300)}`).toBe(status);
  expect(String(res.headers['content-type']), what).toMatch(/^application\/problem\+json/);
  const problem = res.body as Problem;
  expect(problem.code, what).toBe(code);
  expect(problem.status, what).toBe(status);
  return problem;
}

/** Sends raw bytes and reads the answer until the Service closes the connection. */
function rawRequest(
  url: string,
  bytes: string,
): Promise<{ status: number; contentType: string; body: { code?: string } }> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = net.connect(Number(port), hostname, () => socket.write(bytes));
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const text = Buffer.concat(chunks).toString('utf8');
      const [head = '', body = ''] = text.split('\r\n\r\n');
      const status = Number(/^HTTP\/1\.1 (\d+)/.exec(head)?.[1]);
      const contentType = /^content-type: (.*)$/im.exec(head)?.[1] ?? '';
      resolve({ status, contentType, body: body ? (JSON.parse(body) as { code?: string }) : {} });
    });
  });
}

describe.each(STORE_TARGETS)('HTTP input limits on $name', (target) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(target);
  }, 60_000);
  afterAll(async () => svc?.close());

  describe('nesting depth', () => {
    const deepBodies: Array<[string, string]> = [
      ['an array 5,000 deep', nestedArrays(5_000)],
      ['an array 100,000 deep', nestedArrays(100_000)],
      ['an object 20,000 deep inside a field', `{"name":"deep","allowedIpRangeStartAddress":${nestedObjects(20_000)}}`],
      ['an array 101 deep inside a field', `{"name":${nestedArrays(101)}}`],
    ];

    it.each(deepBodies)(
      'refuses %s with 400 API_BODY_TOO_DEEP on routes with and without credentials',
      async (what, body) => {
        expectProblem(
          await svc.request('POST', '/v1/orgs', { body }),
          400,
          'API_BODY_TOO_DEEP',
          `POST /v1/orgs ${what}`,
        );
        expectProblem(
          await svc.request('PUT', `/v1/orgs/${svc.orgId}/SecuritySettings`, { body }),
          400,
          'API_BODY_TOO_DEEP',
          `PUT SecuritySettings ${what}`,
        );
        expectProblem(
          await svc.request('POST', '/v1/agent/register', { body, auth: null }),
          400,
          'API_BODY_TOO_DEEP',
          `POST /v1/agent/register ${what}`,
        );
      },
    );

    it('reads a body nested exactly 100 levels (brackets inside strings do not count)', async () => {
      // 99 levels of arrays inside the body object: 100 in all. The field is not valid, but the
      // body is read and validated, so the answer is API_VALIDATION, not API_BODY_TOO_DEEP.
      const body = `{"name":${nestedArrays(99)},"description":"${'[{'.repeat(500)}"}`;
      const res = await svc.request('POST', '/v1/orgs', { body });
      expectProblem(res, 400, 'API_VALIDATION');
    });
  });

  describe('Unicode', () => {
    it('refuses a lone surrogate in a string value, naming the field', async () => {
      const res = await svc.request('POST', '/v1/orgs', { body: '{"name":"sur\\ud800x"}' });
      const problem = expectProblem(res, 400, 'API_VALIDATION');
      expect(problem.errors?.[0]?.path).toBe('body.name');
      expect(problem.errors?.[0]?.message).toMatch(/Unicode/);
    });

    it('refuses a lone low surrogate deep in an array and in a key', async () => {
      const inArray = await svc.request('PUT', `/v1/orgs/${svc.orgId}/SecuritySettings`, {
        body: '{"securityRules":[{"name":"ok"},{"name":"x\\udc00"}]}',
      });
      expect(expectProblem(inArray, 400, 'API_VALIDATION').errors?.[0]?.path).toBe('body.securityRules.1.name');
      const inKey = await svc.request('POST', '/v1/orgs', { body: '{"name":"ok","k\\ud800":1}' });
      expect(expectProblem(inKey, 400, 'API_VALIDATION').errors?.[0]?.path).toBe('body.k\uFFFD');
    });

    it('accepts well-formed text beyond the Basic Multilingual Plane and stores it unchanged', async () => {
      const name = `emoji \u{1F600} ${Date.now()}`;
      const created = await svc.request<{ id: number; name: string }>('POST', '/v1/orgs', {
        body: {
          name,
          parentId: svc.orgId,
          securityRules: [
            {
              name: 'loopback',
              allowedIpRangeStartAddress: '127.0.0.1',
              allowedIpRangeEndAddress: '127.0.0.1',
              apiAccessEnabled: true,
            },
          ],
        },
      });
      expect(created.status, created.text).toBe(201);
      expect(created.body.name).toBe(name);
      const read = await svc.request<{ name: string }>('GET', `/v1/orgs/${created.body.id}`);
      expect(read.body.name).toBe(name);
    });
  });

  describe('integer parameters', () => {
    it.each(['0x2', '1e1', '1.0', '+2', ' 2', '', '2a', '0b1', 'Infinity'])(
      'refuses limit=%j with 400 API_VALIDATION',
      async (bad) => {
        for (const list of ['/v1/orgs', `/v1/orgs/${svc.orgId}/securityrules`, `/v1/orgs/${svc.orgId}/users`]) {
          const res = await svc.request('GET', `${list}?limit=${encodeURIComponent(bad)}`);
          const problem = expectProblem(res, 400, 'API_VALIDATION', `${list}?limit=${bad}`);
          expect(problem.errors?.[0]?.path).toBe('query.limit');
        }
      },
    );

    it('refuses offset and other integer parameters given as hex or exponent', async () => {
      expectProblem(await svc.request('GET', `/v1/orgs?offset=0x1`), 400, 'API_VALIDATION');
      expectProblem(await svc.request('GET', `/v1/orgs?parentId=1e0`), 400, 'API_VALIDATION');
      expectProblem(await svc.request('GET', `/v1/orgs/0x${svc.orgId.toString(16)}`), 400, 'API_VALIDATION');
      expectProblem(await svc.request('GET', `/v1/orgs/${svc.orgId}e0`), 400, 'API_VALIDATION');
    });

    it('refuses limit[]=1, limit[x]=1 and a limit given twice', async () => {
      for (const query of ['limit[]=1', 'limit[0]=1', 'LIMIT[]=1', 'limit=1&limit=2', 'offset[]=0']) {
        const res = await svc.request('GET', `/v1/orgs?${query}`);
        expectProblem(res, 400, 'API_VALIDATION', query);
      }
    });

    it('reads decimal integers, leading zeros included', async () => {
      const res = await svc.request<unknown[]>('GET', '/v1/orgs?limit=01&offset=0');
      expect(res.status, res.text).toBe(200);
      expect(res.body).toHaveLength(1);
      expect((await svc.request('GET', `/v1/orgs/${svc.orgId}?unknownParameter[]=1`)).status).toBe(200);
    });
  });

  describe('malformed paths', () => {
    const orgs = (): string => `/v1/orgs/${svc.orgId}`;
    it.each([
      ['a percent-encoded lone surrogate', (): string => '/v1/orgs/%ED%A0%80', 400, 'API_MALFORMED_URL'],
      ['a truncated UTF-8 sequence', (): string => `${orgs()}/agents/%E2%82`, 400, 'API_MALFORMED_URL'],
      ['an overlong encoding', (): string => `${orgs()}/lookuptables/%C0%AF`, 400, 'API_MALFORMED_URL'],
      ['a stray continuation byte', (): string => `${orgs()}/connections/%80abc`, 400, 'API_MALFORMED_URL'],
      ['a 501-character path parameter', (): string => `${orgs()}/agents/${'a'.repeat(501)}`, 414, 'API_URI_TOO_LONG'],
      ['a 10,000-character Organization ID', (): string => `/v1/orgs/${'1'.repeat(10_000)}`, 414, 'API_URI_TOO_LONG'],
    ] as const)('answers %s with a problem', async (_what, path, status, code) => {
      expectProblem(await svc.request('GET', path()), status, code, path().slice(0, 80));
      expectProblem(
        await svc.request('GET', path(), { auth: null }),
        status,
        code,
        `${path().slice(0, 80)} without credentials`,
      );
    });

    it.each([
      [
        'a header line without a colon',
        'GET /v1/orgs HTTP/1.1\r\nHost: x\r\nnot a header\r\n\r\n',
        400,
        'API_MALFORMED_REQUEST',
      ],
      ['a request line that is not HTTP', 'HELLO\r\n\r\n', 400, 'API_MALFORMED_REQUEST'],
      [
        'headers over 16 KiB',
        `GET /v1/orgs HTTP/1.1\r\nHost: x\r\nX-Big: ${'a'.repeat(20_000)}\r\n\r\n`,
        431,
        'API_HEADERS_TOO_LARGE',
      ],
    ] as const)('answers %s, refused by the HTTP parser, with a problem', async (_what, bytes, status, code) => {
      const res = await rawRequest(svc.url, bytes);
      expect(res.status).toBe(status);
      expect(res.contentType).toMatch(/^application\/problem\+json/);
      expect(res.body.code).toBe(code);
    });
  });
});
