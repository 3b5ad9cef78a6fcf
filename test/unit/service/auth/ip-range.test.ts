import { describe, expect, it } from 'vitest';
import { parseAddress, parseAllowList, rangeContains, validateRange } from '../../../../service/auth/ip-range.js';

describe('IP ranges', () => {
  it('accepts IPv4 and IPv6 ranges in order', () => {
    expect(validateRange('10.0.0.0', '10.0.0.255')).toEqual([]);
    expect(validateRange('2001:db8::', '2001:db8::ffff')).toEqual([]);
    expect(validateRange('127.0.0.1', '127.0.0.1')).toEqual([]);
  });

  it('rejects a start above the end, out-of-range octets, legacy forms and mixed families', () => {
    expect(validateRange('10.0.0.9', '10.0.0.1')).toHaveLength(1);
    expect(validateRange('333.0.0.0', '10.0.0.1')[0]?.path).toBe('allowedIpRangeStartAddress');
    expect(validateRange('127.1', '127.0.0.1')).toHaveLength(1);
    expect(validateRange('10.0.0.1', '::1')[0]?.message).toMatch(/both be IPv4 or both IPv6/);
    expect(validateRange('', '')).toHaveLength(2);
  });

  it('tests membership, treating IPv4-mapped IPv6 as IPv4', () => {
    expect(rangeContains('127.0.0.1', '127.0.0.1', '::ffff:127.0.0.1')).toBe(true);
    expect(rangeContains('10.0.0.0', '10.0.0.255', '10.0.0.128')).toBe(true);
    expect(rangeContains('10.0.0.0', '10.0.0.255', '10.0.1.0')).toBe(false);
    expect(rangeContains('::1', '::1', '::1')).toBe(true);
    expect(rangeContains('::', 'ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff', '127.0.0.1')).toBe(false);
    expect(rangeContains('bad', '10.0.0.1', '10.0.0.1')).toBe(false);
    expect(parseAddress('::ffff:10.1.2.3')?.toString()).toBe('10.1.2.3');
  });

  it('parses the bootstrap allow list: addresses, ranges and CIDRs', () => {
    expect(parseAllowList('127.0.0.1, ::1')).toEqual([
      { start: '127.0.0.1', end: '127.0.0.1' },
      { start: '::1', end: '::1' },
    ]);
    expect(parseAllowList('10.0.0.0/24')).toEqual([{ start: '10.0.0.0', end: '10.0.0.255' }]);
    expect(parseAllowList('fd00::/120')).toEqual([{ start: 'fd00::', end: 'fd00::ff' }]);
    expect(parseAllowList('10.0.0.1-10.0.0.9')).toEqual([{ start: '10.0.0.1', end: '10.0.0.9' }]);
    expect(() => parseAllowList('10.0.0.9-10.0.0.1')).toThrow(/Invalid IP range/);
  });
});
