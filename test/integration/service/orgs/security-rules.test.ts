import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Rule {
  id: string;
  name: string;
  allowedIpRangeStartAddress: string;
  allowedIpRangeEndAddress: string;
  apiAccessEnabled: boolean;
  eventSolutionAccessEnabled: boolean;
}

const rule = (name: string, start: string, end: string, api = true) => ({
  name,
  allowedIpRangeStartAddress: start,
  allowedIpRangeEndAddress: end,
  apiAccessEnabled: api,
});

describe.each(STORE_TARGETS)('Security Rules on $name', (target) => {
  let svc: TestService;
  let orgId: number;
  beforeAll(async () => {
    svc = await startService(target);
    const child = await svc.request<{ id: number }>('POST', '/v1/orgs', {
      body: { name: 'Rules org', parentId: svc.orgId, securityRules: [rule('lo', '127.0.0.1', '127.0.0.1')] },
    });
    orgId = child.body.id;
  });
  afterAll(async () => svc?.close());

  it('creates, reads, modifies and deletes a rule', async () => {
    const created = await svc.request<Rule>('POST', `/v1/orgs/${orgId}/securityrules`, {
      body: rule('office', '10.0.0.0', '10.0.0.255'),
    });
    expect(created.status).toBe(201);
    expect(created.headers['location']).toBe(`/v1/orgs/${orgId}/securityrules/${created.body.id}`);
    expect(created.body).toMatchObject({ name: 'office', eventSolutionAccessEnabled: false });

    const list = await svc.request<Rule[]>('GET', `/v1/orgs/${orgId}/securityrules`);
    expect(list.headers['total-count']).toBe('2');
    expect(list.body.map((r) => r.name)).toEqual(['lo', 'office']);
    const paged = await svc.request<Rule[]>('GET', `/v1/orgs/${orgId}/securityrules?limit=1&offset=1`);
    expect(paged.body.map((r) => r.name)).toEqual(['office']);

    const one = await svc.request<Rule>('GET', `/v1/orgs/${orgId}/securityrules/${created.body.id}`);
    expect(one.body).toEqual(created.body);

    const put = await svc.request<Rule>('PUT', `/v1/orgs/${orgId}/securityrules/${created.body.id}`, {
      body: { ...rule('office v6', '2001:db8::', '2001:db8::ffff'), eventSolutionAccessEnabled: true },
    });
    expect(put.status).toBe(200);
    expect(put.body).toMatchObject({
      id: created.body.id,
      name: 'office v6',
      allowedIpRangeStartAddress: '2001:db8::',
      eventSolutionAccessEnabled: true,
    });

    const del = await svc.request('DELETE', `/v1/orgs/${orgId}/securityrules?ruleId=${created.body.id}`);
    expect(del.status).toBe(204);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/securityrules/${created.body.id}`)).status).toBe(404);
    expect((await svc.request('DELETE', `/v1/orgs/${orgId}/securityrules?ruleId=${created.body.id}`)).status).toBe(404);
    expect((await svc.request('DELETE', `/v1/orgs/${orgId}/securityrules`)).status).toBe(400);
  });

  it('deletes a rule by DELETE …/securityrules/{ruleId} too', async () => {
    const created = await svc.request<Rule>('POST', `/v1/orgs/${orgId}/securityrules`, {
      body: rule('path form', '10.9.0.0', '10.9.0.9'),
    });
    expect(created.status).toBe(201);
    expect((await svc.request('DELETE', `/v1/orgs/${orgId}/securityrules/${created.body.id}`)).status).toBe(204);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/securityrules/${created.body.id}`)).status).toBe(404);
    expect((await svc.request('DELETE', `/v1/orgs/${orgId}/securityrules/${created.body.id}`)).status).toBe(404);
  });

  it('rejects invalid ranges with 400 and stores nothing', async () => {
    const before = await svc.request<Rule[]>('GET', `/v1/orgs/${orgId}/securityrules`);
    for (const [start, end] of [
      ['10.0.0.9', '10.0.0.1'],
      ['333.0.0.0', '333.0.0.1'],
      ['10.0.0.1', '::1'],
      ['not an ip', '10.0.0.1'],
      ['127.1', '127.0.0.2'],
      ['::2', '::1'],
    ] as const) {
      const res = await svc.request<{ code: string }>('POST', `/v1/orgs/${orgId}/securityrules`, {
        body: rule('bad', start, end),
      });
      expect(res.status, `${start}-${end}`).toBe(400);
      expect(res.body.code).toBe('API_INVALID_IP_RANGE');
    }
    const after = await svc.request<Rule[]>('GET', `/v1/orgs/${orgId}/securityrules`);
    expect(after.body).toEqual(before.body);
  });

  it('refuses a duplicate rule ID with 409', async () => {
    const id = '0f4b8c2e-55d7-4d1e-9f11-3a2b1c0d9e8f';
    expect(
      (
        await svc.request('POST', `/v1/orgs/${orgId}/securityrules`, {
          body: { ...rule('a', '10.1.0.0', '10.1.0.1'), id },
        })
      ).status,
    ).toBe(201);
    expect(
      (
        await svc.request('POST', `/v1/orgs/${orgId}/securityrules`, {
          body: { ...rule('b', '10.1.0.0', '10.1.0.1'), id },
        })
      ).status,
    ).toBe(409);
  });

  it('refuses changes that shut the caller out', async () => {
    const list = await svc.request<Rule[]>('GET', `/v1/orgs/${orgId}/securityrules`);
    const lo = list.body.find((r) => r.name === 'lo');
    expect(lo).toBeDefined();
    expect((await svc.request('DELETE', `/v1/orgs/${orgId}/securityrules?ruleId=${lo?.id}`)).status).toBe(409);
    const shut = await svc.request<{ code: string; detail: string }>(
      'DELETE',
      `/v1/orgs/${orgId}/securityrules/${lo?.id}`,
    );
    expect(shut.status).toBe(409);
    expect(shut.body.detail).toContain('would shut your own address 127.0.0.1 out of the API');
    expect(
      (
        await svc.request('PUT', `/v1/orgs/${orgId}/securityrules/${lo?.id}`, {
          body: rule('lo', '127.0.0.1', '127.0.0.1', false),
        })
      ).status,
    ).toBe(409);
  });

  it('refuses API calls from addresses no rule opens, and opens them when a rule is added', async () => {
    const from = '127.0.0.2';
    const refused = await svc.request<{ code: string }>('GET', `/v1/orgs/${orgId}`, { from });
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('API_FORBIDDEN_IP');
    // A rule without apiAccessEnabled does not open the API.
    const closed = await svc.request<Rule>('POST', `/v1/orgs/${orgId}/securityrules`, {
      body: rule('events only', from, from, false),
    });
    expect((await svc.request('GET', `/v1/orgs/${orgId}`, { from })).status).toBe(403);
    await svc.request('PUT', `/v1/orgs/${orgId}/securityrules/${closed.body.id}`, {
      body: rule('events only', from, from, true),
    });
    expect((await svc.request('GET', `/v1/orgs/${orgId}`, { from })).status).toBe(200);
  });

  it('enforces Administrator for changes', async () => {
    const user = await addUser(svc, orgId, 'User');
    expect((await svc.request('GET', `/v1/orgs/${orgId}/securityrules`, { auth: user })).status).toBe(200);
    expect(
      (
        await svc.request('POST', `/v1/orgs/${orgId}/securityrules`, {
          auth: user,
          body: rule('x', '10.2.0.0', '10.2.0.1'),
        })
      ).status,
    ).toBe(403);
  });
});

describe('Security Rules over IPv6 and behind a proxy', () => {
  it('admits ::1 through the bootstrap rule and refuses an address outside every rule', async () => {
    const svc = await startService({ name: 'sqlite' }, { host: '::1' });
    try {
      expect(svc.url).toMatch(/^http:\/\/\[::1\]:\d+$/);
      const ok = await svc.request('GET', `/v1/orgs/${svc.orgId}`);
      expect(ok.status).toBe(200);
      const rules = await svc.request<Rule[]>('GET', `/v1/orgs/${svc.orgId}/securityrules`);
      const v6 = rules.body.find((r) => r.allowedIpRangeStartAddress === '::1');
      const v4 = rules.body.find((r) => r.allowedIpRangeStartAddress === '127.0.0.1');
      // Removing the IPv4 rule is fine from ::1; removing the ::1 rule is refused (it is the caller's).
      expect((await svc.request('DELETE', `/v1/orgs/${svc.orgId}/securityrules?ruleId=${v4?.id}`)).status).toBe(204);
      expect((await svc.request('DELETE', `/v1/orgs/${svc.orgId}/securityrules?ruleId=${v6?.id}`)).status).toBe(409);
    } finally {
      await svc.close();
    }
  });

  it('believes X-Forwarded-For only from the proxy FERRY_TRUST_PROXY names', async () => {
    const svc = await startService({ name: 'sqlite' }, { trustProxy: '127.0.0.1' });
    try {
      const forwarded = { 'x-forwarded-for': '203.0.113.7' };
      expect((await svc.request('GET', `/v1/orgs/${svc.orgId}`, { headers: forwarded })).status).toBe(403);
      await svc.request('POST', `/v1/orgs/${svc.orgId}/securityrules`, {
        body: rule('client', '203.0.113.0', '203.0.113.255'),
        headers: { 'x-forwarded-for': '127.0.0.1' },
      });
      expect((await svc.request('GET', `/v1/orgs/${svc.orgId}`, { headers: forwarded })).status).toBe(200);
      // From an address that is not the proxy the header is ignored: 127.0.0.2 itself is refused.
      expect(
        (await svc.request('GET', `/v1/orgs/${svc.orgId}`, { headers: forwarded, from: '127.0.0.2' })).status,
      ).toBe(403);
    } finally {
      await svc.close();
    }
  });
});

describe('Rate limits', () => {
  it('answers 429 with Retry-After past the per-minute limit, per Organization', async () => {
    const svc = await startService({ name: 'sqlite' }, { rateLimitPerMinute: 3 });
    try {
      const statuses: number[] = [];
      for (let i = 0; i < 4; i++) statuses.push((await svc.request('GET', `/v1/orgs/${svc.orgId}`)).status);
      expect(statuses).toEqual([200, 200, 200, 429]);
      const limited = await svc.request<{ code: string }>('GET', `/v1/orgs/${svc.orgId}/securityrules`);
      expect(limited.status).toBe(429);
      expect(limited.body.code).toBe('API_RATE_LIMITED');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
      expect(Number(limited.headers['retry-after'])).toBeLessThanOrEqual(60);
    } finally {
      await svc.close();
    }
  });
});

// More on failed logins: ../auth/login-throttle.test.ts.
describe('Failed logins', () => {
  it('lock the guessed account at the guessing address after 10, not at other addresses', async () => {
    const svc = await startService({ name: 'sqlite' });
    try {
      const wrong = { email: svc.admin.email, password: 'not-the-password' };
      const unknown = { email: 'nobody@ferry.test', password: 'whatever-1' };
      for (let i = 0; i < 10; i++) {
        expect((await svc.request('GET', '/v1/orgs', { auth: wrong })).status).toBe(401);
        expect((await svc.request('GET', '/v1/orgs', { auth: unknown })).status).toBe(401);
      }
      const locked = await svc.request<{ code: string }>('GET', '/v1/orgs');
      expect(locked.status).toBe(429);
      expect(locked.body.code).toBe('API_RATE_LIMITED');
      expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
      expect((await svc.request('GET', '/v1/orgs', { auth: unknown })).status).toBe(429);
      expect((await svc.request('GET', '/v1/orgs', { from: '127.0.0.2' })).status).toBe(200);
    } finally {
      await svc.close();
    }
  });
});
