import { describe, expect, it } from 'vitest';
import { addressKey, LoginThrottle } from '../../../service/auth/login-throttle.js';
import type { FerryError } from '../../../src/errors/ferry-error.js';

function refusal(fn: () => void): FerryError | undefined {
  try {
    fn();
    return undefined;
  } catch (err) {
    return err as FerryError;
  }
}

describe('LoginThrottle', () => {
  it('counts IPv6 clients by their /64 and IPv4-mapped addresses as IPv4', () => {
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe(addressKey('2001:db8:1:2:bbbb::2'));
    expect(addressKey('2001:db8:1:2::1')).not.toBe(addressKey('2001:db8:1:3::1'));
    expect(addressKey('::ffff:10.0.0.1')).toBe('10.0.0.1');
  });

  it('locks a pair at its limit, whatever the letter case of the login, until the window ends', () => {
    let now = 0;
    const t = new LoginThrottle({ perPair: 3, windowMs: 60_000 }, () => now);
    for (let i = 0; i < 3; i++) t.attempt('A@x.test', '10.0.0.1');
    now = 15_000;
    const err = refusal(() => t.checkPair('a@x.test', '10.0.0.1'));
    expect(err?.code).toBe('API_RATE_LIMITED');
    expect(err?.details?.['retryAfterSeconds']).toBe(45);
    expect(refusal(() => t.attempt('a@x.test', '10.0.0.1'))?.code).toBe('API_RATE_LIMITED');
    expect(refusal(() => t.attempt('b@x.test', '10.0.0.1'))).toBeUndefined();
    expect(refusal(() => t.attempt('a@x.test', '10.0.0.2'))).toBeUndefined();
    now = 60_000;
    expect(refusal(() => t.checkPair('a@x.test', '10.0.0.1'))).toBeUndefined();
  });

  it('forgives a pair its mistakes on success and takes the attempt back from the address', () => {
    const t = new LoginThrottle({ perPair: 2, perAddress: 2 }, () => 0);
    t.attempt('a@x.test', '10.0.0.1');
    t.attempt('a@x.test', '10.0.0.1');
    t.succeeded('a@x.test', '10.0.0.1', true);
    expect(refusal(() => t.checkPair('a@x.test', '10.0.0.1'))).toBeUndefined();
    // One failure left on the address (two attempts, one taken back).
    t.attempt('b@x.test', '10.0.0.1');
    expect(refusal(() => t.attempt('c@x.test', '10.0.0.1'))?.code).toBe('API_RATE_LIMITED');
  });

  it('stays within its cap, dropping ended windows first, then the oldest', () => {
    let now = 0;
    const t = new LoginThrottle({ perPair: 1, perAddress: 1_000_000, windowMs: 1_000, maxEntries: 3 }, () => now);
    t.attempt('old@x.test', '10.0.0.1');
    now = 2_000;
    t.attempt('a@x.test', '10.0.0.1');
    t.attempt('b@x.test', '10.0.0.1');
    t.attempt('c@x.test', '10.0.0.1');
    // The ended window made room: a, b and c are all still locked.
    for (const e of ['a', 'b', 'c']) expect(refusal(() => t.checkPair(`${e}@x.test`, '10.0.0.1'))).toBeDefined();
    t.attempt('d@x.test', '10.0.0.1');
    expect(refusal(() => t.checkPair('a@x.test', '10.0.0.1'))).toBeUndefined();
    expect(refusal(() => t.checkPair('d@x.test', '10.0.0.1'))).toBeDefined();
  });
});
