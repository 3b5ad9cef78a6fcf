import ipaddr from 'ipaddr.js';
import type { FieldError } from '../../src/errors/ferry-error.js';

type Address = ipaddr.IPv4 | ipaddr.IPv6;

/** Parses an address; IPv4-mapped IPv6 (`::ffff:1.2.3.4`) becomes plain IPv4. Null if not an address. */
export function parseAddress(text: string): Address | null {
  const trimmed = text.trim();
  if (!ipaddr.isValid(trimmed)) return null;
  // ipaddr accepts legacy forms such as "127.1" or "0x7f.1"; a range must be written plainly.
  if (trimmed.includes('.') && !trimmed.includes(':') && !ipaddr.IPv4.isValidFourPartDecimal(trimmed)) return null;
  const addr = ipaddr.parse(trimmed);
  return addr.kind() === 'ipv6' && (addr as ipaddr.IPv6).isIPv4MappedAddress()
    ? (addr as ipaddr.IPv6).toIPv4Address()
    : addr;
}

function toBigInt(addr: Address): bigint {
  return addr.toByteArray().reduce((acc, byte) => (acc << 8n) | BigInt(byte), 0n);
}

/** Checks one range as a Security Rule states it; returns the problems, empty when valid. */
export function validateRange(start: string, end: string, base = ''): FieldError[] {
  const a = parseAddress(start);
  const b = parseAddress(end);
  const errors: FieldError[] = [];
  if (!a)
    errors.push({
      path: `${base}allowedIpRangeStartAddress`,
      message: `"${truncate(start)}" is not an IPv4 or IPv6 address`,
    });
  if (!b)
    errors.push({
      path: `${base}allowedIpRangeEndAddress`,
      message: `"${truncate(end)}" is not an IPv4 or IPv6 address`,
    });
  if (a && b) {
    if (a.kind() !== b.kind()) {
      errors.push({
        path: `${base}allowedIpRangeEndAddress`,
        message: 'the start and end of a range must both be IPv4 or both IPv6',
      });
    } else if (toBigInt(a) > toBigInt(b)) {
      errors.push({ path: `${base}allowedIpRangeEndAddress`, message: 'the end of the range comes before its start' });
    }
  }
  return errors;
}

/** True when `ip` lies in [start, end]. Invalid inputs are never inside. */
export function rangeContains(start: string, end: string, ip: string): boolean {
  const a = parseAddress(start);
  const b = parseAddress(end);
  const x = parseAddress(ip);
  if (!a || !b || !x || a.kind() !== x.kind() || b.kind() !== x.kind()) return false;
  const v = toBigInt(x);
  return toBigInt(a) <= v && v <= toBigInt(b);
}

/**
 * Parses the bootstrap allow list: comma-separated entries, each `start-end`, a CIDR, or one address.
 * Throws with the offending entry.
 */
export function parseAllowList(text: string): Array<{ start: string; end: string }> {
  return text
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
    .map((entry) => {
      let start: string;
      let end: string;
      if (entry.includes('/')) {
        const v4 = ipaddr.parseCIDR(entry)[0].kind() === 'ipv4';
        start = (v4 ? ipaddr.IPv4.networkAddressFromCIDR(entry) : ipaddr.IPv6.networkAddressFromCIDR(entry)).toString();
        end = (
          v4 ? ipaddr.IPv4.broadcastAddressFromCIDR(entry) : ipaddr.IPv6.broadcastAddressFromCIDR(entry)
        ).toString();
      } else if (entry.includes('-')) {
        [start = '', end = ''] = entry.split('-').map((s) => s.trim());
      } else {
        start = end = entry;
      }
      const problems = validateRange(start, end);
      if (problems.length) throw new Error(`Invalid IP range "${entry}": ${problems.map((p) => p.message).join('; ')}`);
      return { start, end };
    });
}

function truncate(s: string): string {
  return s.length > 60 ? `${s.slice(0, 60)}…` : s;
}
