/**
 * The failed-login throttle of replicas on one PostgreSQL (service/auth/shared-login-throttle.ts):
 * two throttles on two pools of one database, as two replicas, count each pair and address once.
 * The rules themselves: test/unit/service/auth/login-throttle.test.ts (in memory) and
 * login-throttle.test.ts beside this file (over HTTP, on both stores).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LoginThrottle, type LoginThrottleLimits } from '../../../../service/auth/login-throttle.js';
import { loginThrottleFor, SharedLoginThrottle } from '../../../../service/auth/shared-login-throttle.js';
import { LimitWindows } from '../../../../service/store/limit-windows.js';
import type { Store } from '../../../../service/store/store.js';
import type { FerryError } from '../../../../src/errors/ferry-error.js';
import { replicaStores } from '../../../helpers/replica-stores.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

async function refused(p: Promise<unknown> | void): Promise<FerryError | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return err as FerryError;
  }
}

describe.skipIf(!STORE_TARGETS.some((t) => t.name === 'postgres'))('failed logins counted across replicas', () => {
  let stores: [Store, Store];
  let close: (() => Promise<void>) | undefined;
  let now = Date.parse('2030-01-01T00:00:00Z');
  const clock = (): number => now;
  // Each test its own addresses: the windows live in one database for the whole file.
  let nextNet = 1;
  const address = (): string => `10.0.${nextNet++}.1`;

  /** Throttles of replicas A and B with these limits. */
  const replicas = (limits: Partial<LoginThrottleLimits>): [SharedLoginThrottle, SharedLoginThrottle] => [
    new SharedLoginThrottle(new LimitWindows(stores[0].db), limits, clock),
    new SharedLoginThrottle(new LimitWindows(stores[1].db), limits, clock),
  ];

  beforeAll(async () => {
    const opened = await replicaStores(2);
    stores = opened.stores as [Store, Store];
    close = opened.close;
  });
  afterAll(async () => {
    await close?.();
  });

  it('lock on replica B a pair whose failures went through replica A, until the window ends', async () => {
    const [a, b] = replicas({ perPair: 3, windowMs: 60_000 });
    const ip = address();
    for (let i = 0; i < 3; i++) (await a.attempt('A@x.test', ip))(false);
    now += 15_000;
    const locked = await refused(b.checkPair('a@x.test', ip));
    expect(locked?.code).toBe('API_RATE_LIMITED');
    expect(locked?.message).toBe('Too many failed logins from your address; retry in 45 seconds.');
    expect(locked?.details?.['retryAfterSeconds']).toBe(45);
    expect((await refused(b.attempt('a@x.test', ip)))?.code).toBe('API_RATE_LIMITED');
    // Other logins at that address, and that login at other addresses, are untouched.
    expect(await refused(b.attempt('b@x.test', ip))).toBeUndefined();
    expect(await refused(b.checkPair('a@x.test', address()))).toBeUndefined();
    now += 45_000;
    expect(await refused(b.checkPair('a@x.test', ip))).toBeUndefined();
  });

  it('give 30 parallel guesses over both replicas no more than the limit', async () => {
    const [a, b] = replicas({ perPair: 10 });
    const ip = address();
    const results = await Promise.all(
      Array.from({ length: 30 }, (_, i) => refused((i % 2 ? a : b).attempt('c@x.test', ip))),
    );
    expect(results.filter((r) => r === undefined)).toHaveLength(10);
    expect(new Set(results.filter((r) => r !== undefined).map((r) => r.code))).toEqual(new Set(['API_RATE_LIMITED']));
    expect((await refused(b.checkPair('c@x.test', ip)))?.code).toBe('API_RATE_LIMITED');
  });

  it("forgive a pair's failures made through A when its cached credentials pass on B", async () => {
    const [a, b] = replicas({ perPair: 10 });
    const ip = address();
    for (let i = 0; i < 9; i++) (await a.attempt('h@x.test', ip))(false);
    // The guard's order for credentials B verified before: checkPair, then succeeded without an attempt.
    await b.checkPair('h@x.test', ip);
    await b.succeeded('h@x.test', ip, false);
    // Counted from zero again: nine more failures lock nothing.
    for (let i = 0; i < 9; i++) (await a.attempt('h@x.test', ip))(false);
    expect(await refused(b.checkPair('h@x.test', ip))).toBeUndefined();
    (await a.attempt('h@x.test', ip))(false);
    expect((await refused(b.checkPair('h@x.test', ip)))?.code).toBe('API_RATE_LIMITED');
  });

  it("count an address's failures once: past its budget through A, B makes its attempts queue", async () => {
    const [a, b] = replicas({ perAddress: 2, queuePerAddress: 0, pauseMs: 0 });
    const ip = address();
    (await a.attempt('s1@x.test', ip))(false);
    (await a.attempt('s2@x.test', ip))(false);
    // B's one turn for that address is taken; with no room to wait, the next is refused, uncounted.
    const held = await b.attempt('s3@x.test', ip);
    const full = await refused(b.attempt('s4@x.test', ip));
    expect(full?.message).toBe('Too many logins from your address at once; retry in a second.');
    held(false);
    const next = await b.attempt('s4@x.test', ip);
    next(true);
    // Another address is not slowed.
    const elsewhere = address();
    expect(await refused(Promise.all([b.attempt('s5@x.test', elsewhere), b.attempt('s6@x.test', elsewhere)]))).toBe(
      undefined,
    );
  });

  it('take a right password back from the address, on whichever replica it arrives', async () => {
    const [a, b] = replicas({ perPair: 5, perAddress: 2, queuePerAddress: 0, pauseMs: 0 });
    const ip = address();
    (await a.attempt('d@x.test', ip))(false);
    (await a.attempt('d@x.test', ip))(true);
    await b.succeeded('d@x.test', ip, true);
    // One failure left on the address: the next attempt goes straight through, the one after
    // takes B's only turn, and a third finds no room to wait.
    await b.attempt('e@x.test', ip);
    const turn = await b.attempt('f@x.test', ip);
    expect((await refused(b.attempt('g@x.test', ip)))?.code).toBe('API_RATE_LIMITED');
    turn(false);
  });

  it('store neither logins nor addresses in clear', async () => {
    const [a] = replicas({});
    const ip = address();
    (await a.attempt('clear.text@x.test', ip))(false);
    const keys = (await stores[0].db.selectFrom('limitWindows').select('key').execute()).map((r) => r.key);
    const login = keys.filter((k) => k.startsWith('login-'));
    expect(login.length).toBeGreaterThan(0);
    expect(login.filter((k) => /clear\.text|x\.test|10\.0\./.test(k))).toEqual([]);
  });

  it('is the throttle of a Service on PostgreSQL, unless FERRY_LIMIT_COUNTS=memory', () => {
    expect(loginThrottleFor(stores[0], {})).toBeInstanceOf(SharedLoginThrottle);
    expect(loginThrottleFor(stores[0], { limitCounts: 'memory' })).toBeInstanceOf(LoginThrottle);
  });
});
