/**
 * Two real Service replicas on one PostgreSQL, called alternately as a load balancer would: an
 * Organization's rate limit and a guessed login's lock hold across both (docs/decisions.md, "Rate
 * limits and the login throttle count in the database on PostgreSQL"). The limiter and the throttle
 * in detail: shared-rate-limit.test.ts beside this file and ../auth/shared-login-throttle.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse, Credentials, TestService } from '../../../helpers/service.js';
import { serviceReplicas, type ServiceReplicas } from '../../../helpers/service-on-dir.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Problem {
  code: string;
  detail: string;
}

/**
 * The daily limit, small enough to reach; the per-minute one stays high, so that no minute
 * boundary during the test starts the budget again (the day's is midnight UTC).
 */
const PER_DAY = 6;

describe.skipIf(!STORE_TARGETS.some((t) => t.name === 'postgres'))('limits of two replicas on one database', () => {
  let replicas: ServiceReplicas;
  let a: TestService;
  let b: TestService;

  beforeAll(async () => {
    replicas = await serviceReplicas({ rateLimitPerDay: PER_DAY, rateLimitPerMinute: 1_000 });
    a = await replicas.start();
    b = await replicas.start();
  });
  afterAll(async () => {
    await b?.close();
    await a?.close();
    await replicas?.dispose();
  });

  it("count an Organization's calls once, whichever replica answers them", async () => {
    const read = (svc: TestService): Promise<ApiResponse<Problem>> =>
      svc.request<Problem>('GET', `/v1/orgs/${svc.orgId}/securityrules`);
    const statuses: number[] = [];
    for (let i = 0; i < PER_DAY; i++) statuses.push((await read(i % 2 ? b : a)).status);
    expect(statuses).toEqual(Array(PER_DAY).fill(200));
    for (const replica of [a, b]) {
      const refused = await read(replica);
      expect(refused.status).toBe(429);
      expect(refused.body.code).toBe('API_RATE_LIMITED');
      expect(refused.body.detail).toMatch(new RegExp(`made ${PER_DAY} API calls this day`));
      expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    }
  });

  it('lock on one replica a login guessed through both, its right password included', async () => {
    const user = await addUser(a, a.orgId, 'User');
    const login = (svc: TestService, auth: Credentials): Promise<ApiResponse<Problem>> =>
      svc.request<Problem>('GET', '/v1/users', { auth });
    const wrong: Credentials = { email: user.email, password: `${user.password}-wrong` };
    // A verifies (and caches) the right password before the guessing starts.
    expect((await login(a, user)).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 12; i++) statuses.push((await login(i % 2 ? b : a, wrong)).status);
    // Ten failures in all lock the pair: one replica alone would have allowed ten each.
    expect(statuses).toEqual([...Array(10).fill(401), 429, 429]);
    for (const replica of [a, b]) {
      const locked = await login(replica, user);
      expect(locked.status).toBe(429);
      expect(locked.body.code).toBe('API_RATE_LIMITED');
    }
    // Other users at that address still get in, on either replica.
    expect((await login(b, await addUser(b, b.orgId, 'User'))).status).toBe(200);
  });
});
