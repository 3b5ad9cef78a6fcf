/**
 * Math functions. Runs INSIDE the sandbox: the installer refers only to `L` and JavaScript
 * built-ins (see core.ts). Rounding works on the decimal value as written (ROUND(1.005, 2) is
 * 1.01), by shifting the decimal point in the number's text rather than multiplying.
 */
import type { FormulaLibrary, FValue } from './types.js';

export function installMath(L: FormulaLibrary): void {
  const { num, int, fail, finite, shift, decimals } = L;
  const F = L.fn;

  /** Rounds |n| shifted by `digits` with `mode`, then shifts back: the sign is kept apart. */
  const roundWith = (v: FValue, d: FValue | undefined, mode: (x: number) => number, fn: string): number => {
    const n = num(v);
    const digits = d === undefined ? 0 : int(d);
    if (digits > 15 || digits < -308) return digits > 15 ? n : 0;
    const sign = n < 0 ? -1 : 1;
    const shifted = shift(Math.abs(n), digits);
    if (!Number.isFinite(shifted)) return n;
    const r = shift(mode(shifted), -digits) * sign;
    return finite(r === 0 ? 0 : r, fn);
  };
  const halfAway = (x: number): number => {
    const f = Math.floor(x);
    return x - f >= 0.5 ? f + 1 : f;
  };

  F.ABS = (v: FValue): number => Math.abs(num(v));
  F.ROUND = (v: FValue, d?: FValue): number => roundWith(v, d, halfAway, 'ROUND');
  F.ROUNDUP = (v: FValue, d?: FValue): number => roundWith(v, d, Math.ceil, 'ROUNDUP');
  F.ROUNDDOWN = (v: FValue, d?: FValue): number => roundWith(v, d, Math.floor, 'ROUNDDOWN');
  F.TRUNC = (v: FValue, d?: FValue): number => roundWith(v, d, Math.floor, 'TRUNC');
  F.FLOOR = (v: FValue): number => Math.floor(num(v)) + 0;
  F.CEILING = (v: FValue): number => Math.ceil(num(v)) + 0;

  /** Both numbers scaled to whole numbers by their common decimal places, when that is exact. */
  const scaled = (a: number, b: number): [number, number, number] | undefined => {
    const k = Math.max(decimals(a), decimals(b));
    if (k > 15) return undefined;
    const p = 10 ** k;
    const ai = Math.round(a * p);
    const bi = Math.round(b * p);
    return Math.abs(ai) < 2 ** 51 && Math.abs(bi) < 2 ** 51 ? [ai, bi, p] : undefined;
  };
  F.MOD = (v: FValue, d: FValue): number => {
    const a = num(v);
    const b = num(d);
    if (b === 0) return fail('FML_DIVISION_BY_ZERO', 'MOD: the divisor is 0');
    const s = scaled(a, b);
    const [x, y, p] = s ?? [a, b, 1];
    let r = x % y;
    if (r !== 0 && r < 0 !== y < 0) r += y;
    return finite(r / p + 0, 'MOD');
  };
  F.QUOTIENT = (v: FValue, d: FValue): number => {
    const a = num(v);
    const b = num(d);
    if (b === 0) return fail('FML_DIVISION_BY_ZERO', 'QUOTIENT: the divisor is 0');
    const s = scaled(a, b);
    return finite(Math.trunc(s ? s[0] / s[1] : a / b) + 0, 'QUOTIENT');
  };
  F.POWER = (v: FValue, e: FValue): number => {
    const r = Math.pow(num(v), num(e));
    return Number.isNaN(r)
      ? fail('FML_INVALID_ARGUMENT', 'POWER: the result is not a real number (a negative number raised to a fraction)')
      : finite(r, 'POWER');
  };
  F.SQRT = (v: FValue): number => {
    const n = num(v);
    return n < 0 ? fail('FML_INVALID_ARGUMENT', `SQRT: ${n} is negative`) : Math.sqrt(n);
  };

  /** The numbers of an aggregate: null arguments left out. */
  const numbers = (args: FValue[]): number[] => {
    const out: number[] = [];
    for (const a of args) if (a !== null) out.push(num(a));
    return out;
  };
  F.MIN = (...args: FValue[]): number | null => {
    const ns = numbers(args);
    return ns.length === 0 ? null : Math.min(...ns);
  };
  F.MAX = (...args: FValue[]): number | null => {
    const ns = numbers(args);
    return ns.length === 0 ? null : Math.max(...ns);
  };
  const sum = (ns: number[]): number => {
    let total = 0;
    for (const n of ns) total = L.add(total, n);
    return total;
  };
  F.SUM = (...args: FValue[]): number => sum(numbers(args));
  F.AVERAGE = (...args: FValue[]): number | null => {
    const ns = numbers(args);
    return ns.length === 0 ? null : L.div(sum(ns), ns.length);
  };
  F.SIGN = (v: FValue): number => {
    const n = num(v);
    return n > 0 ? 1 : n < 0 ? -1 : 0;
  };
  F.EXP = (v: FValue): number => finite(Math.exp(num(v)), 'EXP');
  F.LN = (v: FValue): number => {
    const n = num(v);
    return n <= 0 ? fail('FML_INVALID_ARGUMENT', `LN: ${n} is not positive`) : Math.log(n);
  };
  F.LOG = (v: FValue, b?: FValue): number => {
    const n = num(v);
    const base = b === undefined ? 10 : num(b);
    if (n <= 0) return fail('FML_INVALID_ARGUMENT', `LOG: ${n} is not positive`);
    if (base <= 0 || base === 1) return fail('FML_INVALID_ARGUMENT', `LOG: ${base} cannot be the base of a logarithm`);
    if (base === 10) return Math.log10(n);
    if (base === 2) return Math.log2(n);
    // A quotient of two logarithms: keep 15 significant digits, so LOG(27, 3) is 3.
    return Number((Math.log(n) / Math.log(base)).toPrecision(15));
  };
  F.LOG10 = (v: FValue): number => {
    const n = num(v);
    return n <= 0 ? fail('FML_INVALID_ARGUMENT', `LOG10: ${n} is not positive`) : Math.log10(n);
  };
  F.PI = (): number => Math.PI;
  F.RAND = (): number => L.random();
  F.RANDBETWEEN = (low: FValue, high: FValue): number => {
    const lo = Math.ceil(num(low));
    const hi = Math.floor(num(high));
    if (lo > hi) return fail('FML_INVALID_ARGUMENT', `RANDBETWEEN: there is no whole number from ${lo} to ${hi}`);
    return lo + Math.floor(L.random() * (hi - lo + 1));
  };
  F.ISEVEN = (v: FValue): boolean => int(v) % 2 === 0;
  F.ISODD = (v: FValue): boolean => Math.abs(int(v) % 2) === 1;
}
