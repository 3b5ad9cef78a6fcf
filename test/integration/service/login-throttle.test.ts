import { afterEach, describe, expect, it } from 'vitest';
import { LoginThrottle } from '../../../service/auth/login-throttle.js';
import { startService, type ApiResponse, type Credentials, type TestService } from '../../helpers/service.js';
import { STORE_TARGETS } from '../../helpers/stores.js';
import { addUser } from '../../helpers/users.js';

interface Problem {
  code: string;
  detail: string;
}

/** A clock the test moves instead of sleeping through a window. */
function testClock(): { now: () => number; advance: (ms: number) => void } {
  let t = Date.parse('2030-01-01T00:00:00Z');
  return { now: () => t, advance: (ms) => void (t += ms) };
}

const FIFTEEN_MINUTES = 15 * 60_000;

describe.each(STORE_TARGETS)('Failed logins on $name', (target) => {
  let svc: TestService | undefined;
  afterEach(async () => {
    await svc?.close();
    svc = undefined;
  });

  /** GET /v1/users: any authenticated user, no Security Rule involved. */
  const login = (s: TestService, auth: Credentials, from = '127.0.0.1'): Promise<ApiResponse<Problem>> =>
    s.request<Problem>('GET', '/v1/users', { auth, from });

  const wrong = (c: Credentials): Credentials => ({ email: c.email, password: `${c.password}-wrong` });

  it('lock the guessed account at the guessing address only, whatever the other users and addresses', async () => {
    const clock = testClock();
    const s = (svc = await startService(target, {}, { loginThrottle: new LoginThrottle({}, clock.now) }));
    const a = await addUser(s, s.orgId, 'User');
    const b = await addUser(s, s.orgId, 'User');
    // A's credentials are verified (and cached) before the guessing starts; B's never were.
    expect((await login(s, a)).status).toBe(200);

    const statuses: number[] = [];
    for (let i = 0; i < 25; i++) statuses.push((await login(s, wrong(a))).status);
    // Everyone else behind that address still gets in: a user never seen before, and the cached administrator.
    expect((await login(s, b)).status).toBe(200);
    expect((await login(s, s.admin)).status).toBe(200);
    expect(statuses.slice(0, 10)).toEqual(Array(10).fill(401));
    expect(statuses.slice(10)).toEqual(Array(15).fill(429));
    // A gets in from another address.
    expect((await login(s, a, '127.0.0.2')).status).toBe(200);

    // The guessed pair is refused, its right password included (docs/decisions.md, API conventions).
    const locked = await login(s, a);
    expect(locked.status).toBe(429);
    expect(locked.body.code).toBe('API_RATE_LIMITED');
    expect(Number(locked.headers['retry-after'])).toBeGreaterThan(0);
    expect(Number(locked.headers['retry-after'])).toBeLessThanOrEqual(FIFTEEN_MINUTES / 1000);
    expect(locked.text).not.toContain(a.email);

    // The window ends: A gets in from the guessing address again.
    clock.advance(FIFTEEN_MINUTES);
    expect((await login(s, a)).status).toBe(200);
  });

  it('answer guesses at an unknown login exactly as guesses at an existing account', async () => {
    const s = (svc = await startService(target));
    const known = await addUser(s, s.orgId, 'User');
    const unknown: Credentials = { email: 'nobody@ferry.test', password: 'Whatever-1' };

    const answers = async (c: Credentials): Promise<Array<[number, string | undefined, string]>> => {
      const out: Array<[number, string | undefined, string]> = [];
      for (let i = 0; i < 12; i++) {
        const r = await login(s, c);
        out.push([r.status, r.headers['retry-after'] === undefined ? undefined : 'set', r.body.detail.replace(/\d+ seconds/, 'N seconds')]);
      }
      return out;
    };
    const forKnown = await answers(wrong(known));
    expect(forKnown.map(([status]) => status)).toEqual([...Array(10).fill(401), 429, 429]);
    expect(await answers(unknown)).toEqual(forKnown);
  });

  it('refuse only unverified credentials when one address sprays many accounts', async () => {
    const clock = testClock();
    const s = (svc = await startService(target, {}, { loginThrottle: new LoginThrottle({ perAddress: 20 }, clock.now) }));
    const c = await addUser(s, s.orgId, 'User');
    expect((await login(s, s.admin)).status).toBe(200);

    // Two guesses at each of many logins: no pair reaches its limit, the address does.
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) {
      for (let j = 0; j < 2; j++) statuses.push((await login(s, { email: `target${i}@ferry.test`, password: `Guess-${j}` })).status);
    }
    expect(statuses.slice(0, 20)).toEqual(Array(20).fill(401));
    expect(statuses.slice(20)).toEqual(Array(10).fill(429));

    // Verified credentials still pass there; unverified ones wait or come from elsewhere.
    expect((await login(s, s.admin)).status).toBe(200);
    const refused = await login(s, c);
    expect(refused.status).toBe(429);
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(0);
    expect((await login(s, c, '127.0.0.2')).status).toBe(200);
    // Now verified, C passes at the sprayed address too.
    expect((await login(s, c)).status).toBe(200);

    clock.advance(FIFTEEN_MINUTES);
    expect((await login(s, { email: 'target0@ferry.test', password: 'Guess-2' })).status).toBe(401);
  });

  it('count parallel guesses before hashing, so a burst gets no more than the limit', async () => {
    const s = (svc = await startService(target));
    const a = await addUser(s, s.orgId, 'User');
    const burst = await Promise.all(Array.from({ length: 30 }, () => login(s, wrong(a))));
    const statuses = burst.map((r) => r.status);
    expect(statuses.filter((x) => x === 401)).toHaveLength(10);
    expect(statuses.filter((x) => x === 429)).toHaveLength(20);
  });
});
