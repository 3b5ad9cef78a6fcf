import { afterEach, describe, expect, it } from 'vitest';
import { LoginThrottle, type EndAttempt } from '../../../../service/auth/login-throttle.js';
import { startService, type ApiResponse, type Credentials, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

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
        out.push([
          r.status,
          r.headers['retry-after'] === undefined ? undefined : 'set',
          r.body.detail.replace(/\d+ seconds/, 'N seconds'),
        ]);
      }
      return out;
    };
    const forKnown = await answers(wrong(known));
    expect(forKnown.map(([status]) => status)).toEqual([...Array(10).fill(401), 429, 429]);
    expect(await answers(unknown)).toEqual(forKnown);
  });

  /** Two guesses at each of 15 logins from 127.0.0.1: no pair reaches its limit; the statuses. */
  const spray = async (s: TestService): Promise<number[]> => {
    const statuses: number[] = [];
    for (let i = 0; i < 15; i++) {
      for (let j = 0; j < 2; j++)
        statuses.push((await login(s, { email: `target${i}@ferry.test`, password: `Guess-${j}` })).status);
    }
    return statuses;
  };

  it('slow an address that sprays many accounts without refusing anyone there', async () => {
    const clock = testClock();
    const s = (svc = await startService(
      target,
      {},
      { loginThrottle: new LoginThrottle({ perAddress: 20, pauseMs: 0 }, clock.now) },
    ));
    // A colleague the Service has never verified (nothing cached since it started).
    const c = await addUser(s, s.orgId, 'User');

    // Past the budget the guesses still get their (one at a time) answer: 401, never a refusal.
    expect(await spray(s)).toEqual(Array(30).fill(401));
    expect((await login(s, c)).status).toBe(200);
    expect((await login(s, s.admin)).status).toBe(200);
    // Wrong passwords verified in turn still lock their pair at 10.
    const guesses: number[] = [];
    for (let i = 0; i < 11; i++)
      guesses.push((await login(s, { email: 'target0@ferry.test', password: `More-${i}` })).status);
    expect(guesses).toEqual([...Array(8).fill(401), 429, 429, 429]);

    clock.advance(FIFTEEN_MINUTES);
    expect((await login(s, { email: 'target0@ferry.test', password: 'Guess-2' })).status).toBe(401);
  });

  it('never lock a pair for refusals of a crowded address', async () => {
    const throttle = new LoginThrottle({ perAddress: 20, queuePerAddress: 0, pauseMs: 0 }, testClock().now);
    const s = (svc = await startService(target, {}, { loginThrottle: throttle }));
    const c = await addUser(s, s.orgId, 'User');
    await spray(s);
    // Another attempt from that address holds its turn; with no room to wait, C is refused
    // (a client retrying on 429) more often than a pair's limit.
    const held = await throttle.attempt('someone@ferry.test', '127.0.0.1');
    for (let i = 0; i < 12; i++) {
      const r = await login(s, c);
      expect(r.status).toBe(429);
      expect(r.body.code).toBe('API_RATE_LIMITED');
      expect(Number(r.headers['retry-after'])).toBeGreaterThan(0);
    }
    held(false);
    expect((await login(s, c)).status).toBe(200);
  });

  it('verify the attempts of an address past its budget one at a time, right passwords included', async () => {
    let running = 0;
    let most = 0;
    /** Counts the attempts holding their address's turn past the budget (the ones about to hash). */
    class Counting extends LoginThrottle {
      override async attempt(email: string, ip: string): Promise<EndAttempt> {
        const end = await super.attempt(email, ip);
        running += 1;
        most = Math.max(most, running);
        return (right) => {
          running -= 1;
          end(right);
        };
      }
    }
    const throttle = new Counting({ perAddress: 20, queuePerAddress: 20, pauseMs: 0 }, testClock().now);
    const s = (svc = await startService(target, {}, { loginThrottle: throttle }));
    const colleagues = await Promise.all(Array.from({ length: 4 }, () => addUser(s, s.orgId, 'User')));
    await spray(s);
    most = 0;
    const burst = await Promise.all([
      ...colleagues.map((c) => login(s, c)),
      ...Array.from({ length: 8 }, (_, i) => login(s, { email: `burst${i}@ferry.test`, password: 'Guess-0' })),
    ]);
    expect(burst.map((r) => r.status)).toEqual([...Array(4).fill(200), ...Array(8).fill(401)]);
    expect(most).toBe(1);
  });

  it('refuse credentials no store can hold (NUL, invalid UTF-8, over-long) as a wrong password, and count them', async () => {
    const s = (svc = await startService(target));
    const a = await addUser(s, s.orgId, 'User');
    /** A call with Basic credentials given as raw bytes (what a client may send, valid UTF-8 or not). */
    const basic = (bytes: Buffer): Promise<ApiResponse<Problem>> =>
      s.request<Problem>('GET', '/v1/users', {
        auth: null,
        headers: { authorization: `Basic ${bytes.toString('base64')}` },
      });
    const bytes = (...parts: Array<string | number[]>): Buffer =>
      Buffer.concat(parts.map((p) => (typeof p === 'string' ? Buffer.from(p) : Buffer.from(p))));
    const expected = await login(s, { email: 'nobody@ferry.test', password: 'Whatever-1' });
    expect(expected.status).toBe(401);

    const unholdable: Array<[string, Buffer]> = [
      ['NUL login and password (Basic ADoA)', Buffer.from('ADoA', 'base64')],
      ['NUL inside the login', bytes('user\u0000@ferry.test:Whatever-1')],
      ['invalid UTF-8 in the login', bytes([0xc3, 0x28], '@ferry.test:Whatever-1')],
      ['a UTF-16 surrogate encoded in UTF-8 (CESU)', bytes('u', [0xed, 0xa0, 0x80], '@ferry.test:Whatever-1')],
      ['a truncated sequence ending the password', bytes('nobody@ferry.test:Whatever-', [0xe2, 0x82])],
      ['an over-long login', bytes(`${'x'.repeat(321)}@ferry.test:Whatever-1`)],
      ['an over-long password', bytes(`nobody@ferry.test:${'p'.repeat(1025)}`)],
    ];
    for (const [what, raw] of unholdable) {
      const r = await basic(raw);
      expect(r.status, what).toBe(401);
      expect(String(r.headers['content-type']), what).toMatch(/^application\/problem\+json/);
      expect(r.headers['www-authenticate'], what).toBe('Basic realm="Ferry", charset="UTF-8"');
      expect(r.body, what).toEqual(expected.body);
    }
    // An Organization route refuses them the same way, before its Organization is looked up.
    const org = await s.request<Problem>('GET', `/v1/orgs/${s.orgId}/agents`, {
      auth: null,
      headers: { authorization: 'Basic ADoA' },
    });
    expect(org.status).toBe(401);
    expect([org.body.code, org.body.detail]).toEqual([expected.body.code, expected.body.detail]);

    // Counted like wrong passwords: the pair ("\0", this address) has had two (above); eight more lock it.
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await basic(Buffer.from('ADoA', 'base64'))).status);
    expect(statuses).toEqual([...Array(8).fill(401), 429, 429]);
    // Passwords no account can have count on their account's pair: ten lock it, right password included.
    const passwords = [bytes('x\u0000y'), bytes([0xff, 0xfe]), bytes('p'.repeat(1025))];
    for (let i = 0; i < 10; i++) {
      expect(
        (await basic(Buffer.concat([bytes(`${a.email}:`), passwords[i % passwords.length] as Buffer]))).status,
      ).toBe(401);
    }
    const locked = await login(s, a);
    expect(locked.status).toBe(429);
    expect(locked.body.code).toBe('API_RATE_LIMITED');
    expect((await login(s, a, '127.0.0.2')).status).toBe(200);
  });

  it('count parallel guesses before hashing, so a burst gets no more than the limit', async () => {
    const s = (svc = await startService(target));
    const a = await addUser(s, s.orgId, 'User');
    // Distinct guesses: the same one sent in parallel shares one verification (parallel-logins.test.ts).
    const burst = await Promise.all(
      Array.from({ length: 30 }, (_, i) => login(s, { email: a.email, password: `${a.password}-wrong-${i}` })),
    );
    const statuses = burst.map((r) => r.status);
    expect(statuses.filter((x) => x === 401)).toHaveLength(10);
    expect(statuses.filter((x) => x === 429)).toHaveLength(20);
  });
});
