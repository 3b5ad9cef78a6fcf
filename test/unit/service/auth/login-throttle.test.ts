import { describe, expect, it, vi } from 'vitest';
import { addressKey, LoginThrottle } from '../../../../service/auth/login-throttle.js';
import type { FerryError } from '../../../../src/errors/ferry-error.js';

function refusal(fn: () => void): FerryError | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err as FerryError;
  }
}

async function refused(p: Promise<unknown>): Promise<FerryError | undefined> {
  try {
    await p;
    return undefined;
  } catch (err) {
    return err as FerryError;
  }
}

/** Lets every promise that can settle settle. */
const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('LoginThrottle', () => {
  it('counts IPv6 clients by their /64 and IPv4-mapped addresses as IPv4', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe(addressKey('2001:db8:1:2:bbbb::2'));
    expect(addressKey('2001:db8:1:2::1')).not.toBe(addressKey('2001:db8:1:3::1'));
    expect(addressKey('::ffff:10.0.0.1')).toBe('10.0.0.1');
  });

  it('locks a pair at its limit, whatever the letter case of the login, until the window ends', async () => {
    let now = 0;
    const t = new LoginThrottle({ perPair: 3, windowMs: 60_000 }, () => now);
    for (let i = 0; i < 3; i++) await t.attempt('A@x.test', '10.0.0.1');
    now = 15_000;
    const err = refusal(() => t.checkPair('a@x.test', '10.0.0.1'));
    expect(err?.code).toBe('API_RATE_LIMITED');
    expect(err?.details?.['retryAfterSeconds']).toBe(45);
    expect((await refused(t.attempt('a@x.test', '10.0.0.1')))?.code).toBe('API_RATE_LIMITED');
    expect(await refused(t.attempt('b@x.test', '10.0.0.1'))).toBeUndefined();
    expect(await refused(t.attempt('a@x.test', '10.0.0.2'))).toBeUndefined();
    now = 60_000;
    expect(refusal(() => t.checkPair('a@x.test', '10.0.0.1'))).toBeUndefined();
  });

  it('forgives a pair its mistakes on success and takes the attempt back from the address', async () => {
    const t = new LoginThrottle({ perPair: 2, perAddress: 2, queuePerAddress: 0 }, () => 0);
    await t.attempt('a@x.test', '10.0.0.1');
    await t.attempt('a@x.test', '10.0.0.1');
    t.succeeded('a@x.test', '10.0.0.1', true);
    expect(refusal(() => t.checkPair('a@x.test', '10.0.0.1'))).toBeUndefined();
    // One failure left on the address (two attempts, one taken back): the next one goes straight
    // through, the one after takes the address's only turn, and a third finds no room to wait.
    await t.attempt('b@x.test', '10.0.0.1');
    const end = await t.attempt('c@x.test', '10.0.0.1');
    expect((await refused(t.attempt('d@x.test', '10.0.0.1')))?.code).toBe('API_RATE_LIMITED');
    end(false);
  });

  it('past the address budget, lets one attempt at a time through in arrival order', async () => {
    const t = new LoginThrottle({ perAddress: 1, queuePerAddress: 3, pauseMs: 0 }, () => 0);
    await t.attempt('spray@x.test', '10.0.0.1');
    const order: string[] = [];
    const ends = new Map<string, (right: boolean) => void>();
    for (const who of ['a', 'b', 'c', 'd']) {
      void t.attempt(`${who}@x.test`, '10.0.0.1').then((end) => {
        order.push(who);
        ends.set(who, end);
      });
    }
    // A fifth finds the queue (three waiting behind a) full; other addresses do not wait.
    expect((await refused(t.attempt('e@x.test', '10.0.0.1')))?.code).toBe('API_RATE_LIMITED');
    expect(await refused(t.attempt('e@x.test', '10.0.0.2'))).toBeUndefined();
    await settle();
    expect(order).toEqual(['a']);
    for (const [who, next] of [
      ['a', 'b'],
      ['b', 'c'],
      ['c', 'd'],
    ] as const) {
      ends.get(who)?.(who === 'b');
      await settle();
      expect(order.at(-1)).toBe(next);
    }
    expect(order).toEqual(['a', 'b', 'c', 'd']);
    ends.get('d')?.(false);
    // Free again: the next attempt gets its turn at once.
    const end = await t.attempt('f@x.test', '10.0.0.1');
    end(false);
  });

  it('counts a refusal for a full queue on nothing, and refuses a pair locked while it waited', async () => {
    const t = new LoginThrottle({ perPair: 2, perAddress: 1, queuePerAddress: 1, pauseMs: 0 }, () => 0);
    await t.attempt('spray@x.test', '10.0.0.1');
    const held = await t.attempt('spray2@x.test', '10.0.0.1');
    const first = t.attempt('a@x.test', '10.0.0.1');
    // Many more tries of a while the queue is full: refused, and a's pair is not locked by them.
    for (let i = 0; i < 5; i++)
      expect((await refused(t.attempt('a@x.test', '10.0.0.1')))?.code).toBe('API_RATE_LIMITED');
    expect(refusal(() => t.checkPair('a@x.test', '10.0.0.1'))).toBeUndefined();
    held(false);
    const second = t.attempt('a@x.test', '10.0.0.1');
    (await first)(false);
    const third = t.attempt('a@x.test', '10.0.0.1');
    (await second)(false);
    // Two wrong passwords verified in turn lock the pair; the third, queued before, is refused.
    expect((await refused(third))?.code).toBe('API_RATE_LIMITED');
    expect(refusal(() => t.checkPair('a@x.test', '10.0.0.1'))?.code).toBe('API_RATE_LIMITED');
  });

  it('pauses the address after a wrong password verified in turn, not after a right one', async () => {
    vi.useFakeTimers();
    try {
      const t = new LoginThrottle({ perAddress: 1, pauseMs: 500 }, () => 0);
      await t.attempt('spray@x.test', '10.0.0.1');
      (await t.attempt('a@x.test', '10.0.0.1'))(true);
      const end = await t.attempt('b@x.test', '10.0.0.1');
      let next = false;
      void t.attempt('c@x.test', '10.0.0.1').then(() => void (next = true));
      end(false);
      await vi.advanceTimersByTimeAsync(499);
      expect(next).toBe(false);
      await vi.advanceTimersByTimeAsync(1);
      expect(next).toBe(true);
    } finally {
      vi.useRealTimers();
    }
  });

  it('stays within its cap, dropping ended windows first, then the oldest', async () => {
    let now = 0;
    const t = new LoginThrottle({ perPair: 1, perAddress: 1_000_000, windowMs: 1_000, maxEntries: 3 }, () => now);
    await t.attempt('old@x.test', '10.0.0.1');
    now = 2_000;
    await t.attempt('a@x.test', '10.0.0.1');
    await t.attempt('b@x.test', '10.0.0.1');
    await t.attempt('c@x.test', '10.0.0.1');
    // The ended window made room: a, b and c are all still locked.
    for (const e of ['a', 'b', 'c']) expect(refusal(() => t.checkPair(`${e}@x.test`, '10.0.0.1'))).toBeDefined();
    await t.attempt('d@x.test', '10.0.0.1');
    expect(refusal(() => t.checkPair('a@x.test', '10.0.0.1'))).toBeUndefined();
    expect(refusal(() => t.checkPair('d@x.test', '10.0.0.1'))).toBeDefined();
  });
});
