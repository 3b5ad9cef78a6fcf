/**
 * The core of the formula runtime: values, conversions, operators, record errors, the batch clock
 * and the random generator. Runs INSIDE the sandbox.
 *
 * Every library file exports one installer whose body is self-contained: it refers to nothing but
 * its parameter `L` and JavaScript's own built-ins, because the sandbox receives it as source text
 * (`Function.prototype.toString`, see `library/index.ts`). Do not refer to imports or to
 * module-level values from inside an installer; `import type` is fine.
 */
import type { ErrorTuple, FailureLike, FormulaLibrary, FValue } from './types.js';

// eslint-disable-next-line max-lines-per-function -- shipped as source text into the isolate; it cannot call helpers outside its body
export function installCore(L: FormulaLibrary): void {
  class Failure extends Error implements FailureLike {
    pos?: number;
    fn?: string | null;
    constructor(
      readonly code: string,
      message: string,
      readonly details: Record<string, unknown> | undefined,
    ) {
      super(message);
    }
  }

  L.fn = Object.create(null) as FormulaLibrary['fn'];
  L.maxText = 10_000_000;
  L.now = new Date(0);
  L.today = new Date(0);

  const fail = (code: string, message: string, details?: Record<string, unknown>): never => {
    throw new Failure(code, message, details);
  };
  L.fail = fail;
  L.isFailure = (e: unknown): e is FailureLike => e instanceof Failure;

  const show = (v: FValue): string => {
    if (v === null) return 'null';
    if (typeof v === 'string') return JSON.stringify(v.length > 60 ? `${v.slice(0, 60)}…` : v);
    if (v instanceof Date) return v.toISOString();
    return String(v);
  };
  L.show = show;

  L.errorTuple = (e: unknown, record: number, formula: number): ErrorTuple => {
    if (e instanceof Failure) return [record, formula, e.code, e.message, e.details ?? null, e.pos ?? -1, e.fn ?? null];
    const tagged = e as { pos?: number; fn?: string | null } | null;
    const pos = typeof tagged?.pos === 'number' ? tagged.pos : -1;
    const message = e instanceof Error ? `${e.name}: ${e.message}` : String(e);
    return [
      record,
      formula,
      'FML_INTERNAL',
      `The formula failed unexpectedly: ${message}`,
      null,
      pos,
      tagged?.fn ?? null,
    ];
  };

  L.call = (pos: number, name: string | null, f: (...args: FValue[]) => FValue, args: FValue[]): FValue => {
    try {
      return f(...args);
    } catch (e) {
      if (typeof e === 'object' && e !== null) {
        const t = e as { pos?: number; fn?: string | null };
        if (t.pos === undefined) {
          t.pos = pos;
          t.fn = name;
        }
      }
      throw e;
    }
  };

  // ── numbers ────────────────────────────────────────────────────────────────────────────
  const NUMBER = /^[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?$/;
  const POW10: number[] = [];
  for (let i = 0; i <= 22; i++) POW10.push(Number(`1e${i}`));
  /** Integers below this scale exactly when multiplied by a power of ten and rounded. */
  const EXACT = 2 ** 51;

  const parseNum = (s: string): number | undefined => {
    const t = s.trim();
    if (!NUMBER.test(t)) return undefined;
    const n = Number(t);
    return Number.isFinite(n) ? n : undefined;
  };
  L.parseNum = parseNum;

  const numText = (n: number): string => {
    if (Number.isNaN(n)) return 'NaN';
    const s = String(n);
    const e = s.indexOf('e');
    if (e < 0) return s;
    // Exponent notation (below 1e-6 or from 1e21): write the digits out.
    const neg = s.startsWith('-');
    const mant = s.slice(neg ? 1 : 0, e);
    const exp = Number(s.slice(e + 1));
    const dot = mant.indexOf('.');
    const digits = mant.replace('.', '');
    const point = (dot < 0 ? mant.length : dot) + exp;
    let out: string;
    if (point <= 0) out = `0.${'0'.repeat(-point)}${digits}`;
    else if (point >= digits.length) out = digits + '0'.repeat(point - digits.length);
    else out = `${digits.slice(0, point)}.${digits.slice(point)}`;
    return neg ? `-${out}` : out;
  };
  L.numText = numText;

  const decimals = (x: number): number => {
    if (Number.isInteger(x)) return 0;
    const s = String(x);
    const e = s.indexOf('e');
    const mant = e < 0 ? s : s.slice(0, e);
    const dot = mant.indexOf('.');
    const places = dot < 0 ? 0 : mant.length - dot - 1;
    return Math.max(0, places - (e < 0 ? 0 : Number(s.slice(e + 1))));
  };
  L.decimals = decimals;

  L.shift = (n: number, digits: number): number => {
    if (digits === 0 || n === 0 || !Number.isFinite(n)) return n;
    const s = String(n);
    const e = s.indexOf('e');
    const mant = e < 0 ? s : s.slice(0, e);
    const exp = e < 0 ? 0 : Number(s.slice(e + 1));
    return Number(`${mant}e${exp + digits}`);
  };

  const finite = (n: number, fn: string): number => {
    if (Number.isFinite(n)) return n;
    return fail('FML_OUT_OF_RANGE', `${fn}: the result is ${Number.isNaN(n) ? 'not a number' : 'too large'}`);
  };
  L.finite = finite;

  const num = (v: FValue): number => {
    if (typeof v === 'number') return v;
    if (v === null) return 0;
    if (typeof v === 'string') {
      const n = parseNum(v);
      return n === undefined ? fail('FML_NOT_A_NUMBER', `${show(v)} is not a number`, { value: v.slice(0, 200) }) : n;
    }
    if (typeof v === 'boolean') return v ? 1 : 0;
    return fail(
      'FML_NOT_A_NUMBER',
      `The date ${v.toISOString()} is not a number; use DATEDIFF or TOUNIXTIME to turn dates into numbers`,
      {
        value: v.toISOString(),
      },
    );
  };
  L.num = num;
  L.int = (v: FValue): number => Math.trunc(num(v)) + 0;

  // ── text and booleans ──────────────────────────────────────────────────────────────────
  const text = (v: FValue): string => {
    if (typeof v === 'string') return v;
    if (v === null) return '';
    if (typeof v === 'number') return numText(v);
    if (typeof v === 'boolean') return v ? 'true' : 'false';
    return v.toISOString();
  };
  L.text = text;

  const checkText = (s: string, fn: string): string =>
    s.length <= L.maxText
      ? s
      : fail(
          'FML_TEXT_TOO_LONG',
          `${fn}: the text would be ${s.length} characters long, more than the limit of ${L.maxText}`,
        );
  L.checkText = checkText;

  const TRUE_WORDS = new Set(['true', 'yes', 'y', 'on', '1']);
  const FALSE_WORDS = new Set(['false', 'no', 'n', 'off', '0', '']);
  L.bool = (v: FValue): boolean => {
    if (typeof v === 'boolean') return v;
    if (v === null) return false;
    if (typeof v === 'number') return v !== 0 && !Number.isNaN(v);
    if (typeof v === 'string') {
      const t = v.trim().toLowerCase();
      if (TRUE_WORDS.has(t)) return true;
      if (FALSE_WORDS.has(t)) return false;
      return fail('FML_NOT_A_BOOLEAN', `${show(v)} is not a boolean (true/false, yes/no, y/n, on/off, 1/0)`, {
        value: v.slice(0, 200),
      });
    }
    return fail('FML_NOT_A_BOOLEAN', `The date ${v.toISOString()} is not a boolean`, { value: v.toISOString() });
  };

  // ── dates ──────────────────────────────────────────────────────────────────────────────
  const DAY_MS = 86_400_000;
  const MAX_MS = 8.64e15;
  const ISO =
    /^\s*([0-9]{4})-([0-9]{2})-([0-9]{2})(?:[Tt ]([0-9]{2}):([0-9]{2})(?::([0-9]{2})(?:[.,]([0-9]{1,9}))?)?\s?(Z|z|[+-][0-9]{2}(?::?[0-9]{2})?)?)?\s*$/;

  const utc = (year: number, month: number, day: number, hour = 0, minute = 0, second = 0, ms = 0): number => {
    // Date.UTC reads years 0–99 as 1900–1999: compute 400 years (146,097 days, exactly) later instead.
    if (year >= 0 && year < 100)
      return Date.UTC(year + 400, month - 1, day, hour, minute, second, ms) - 146_097 * DAY_MS;
    return Date.UTC(year, month - 1, day, hour, minute, second, ms);
  };
  L.utc = utc;

  const mkDate = (ms: number): Date => {
    if (!Number.isFinite(ms) || Math.abs(ms) > MAX_MS)
      return fail('FML_OUT_OF_RANGE', 'The date is out of range (years -271821 to 275760)');
    return new Date(ms);
  };
  L.mkDate = mkDate;

  const daysIn = (year: number, month: number): number => new Date(utc(year, month + 1, 0)).getUTCDate();

  const parseDate = (s: string): Date | undefined => {
    const m = ISO.exec(s);
    if (!m) return undefined;
    const year = Number(m[1]);
    const month = Number(m[2]);
    const day = Number(m[3]);
    const hour = m[4] === undefined ? 0 : Number(m[4]);
    const minute = m[5] === undefined ? 0 : Number(m[5]);
    const second = m[6] === undefined ? 0 : Number(m[6]);
    const ms = m[7] === undefined ? 0 : Math.floor(Number(`0.${m[7]}`) * 1000 + 1e-6);
    if (month < 1 || month > 12 || day < 1 || day > daysIn(year, month) || hour > 23 || minute > 59 || second > 59)
      return undefined;
    let offset = 0;
    const zone = m[8];
    if (zone !== undefined && zone !== 'Z' && zone !== 'z') {
      const digits = zone.slice(1).replace(':', '');
      const oh = Number(digits.slice(0, 2));
      const om = digits.length > 2 ? Number(digits.slice(2)) : 0;
      if (oh > 23 || om > 59) return undefined;
      offset = (zone.startsWith('-') ? -1 : 1) * (oh * 60 + om);
    }
    const t = utc(year, month, day, hour, minute, second, ms) - offset * 60_000;
    return Math.abs(t) > MAX_MS ? undefined : new Date(t);
  };
  L.parseDate = parseDate;

  L.date = (v: FValue): Date | null => {
    if (v === null) return null;
    if (v instanceof Date) return v;
    if (typeof v === 'string') {
      return (
        parseDate(v) ??
        fail('FML_NOT_A_DATE', `${show(v)} is not a date: write ISO-8601, e.g. 2024-03-05 or 2024-03-05T14:07:09Z`, {
          value: v.slice(0, 200),
        })
      );
    }
    const hint = typeof v === 'number' ? '; use FROMUNIXTIME for Unix time' : '';
    return fail('FML_NOT_A_DATE', `The ${typeof v} ${show(v)} is not a date${hint}`, { value: v });
  };

  // ── operators ──────────────────────────────────────────────────────────────────────────
  // + − × and ÷ compute on the decimal values as written when both have few enough digits: the
  // operands are scaled to whole numbers, combined exactly, and scaled back with one rounding, so
  // 0.1 + 0.2 is 0.3 and 1.1 × 1.1 is 1.21, as in decimal arithmetic.
  const addNums = (a: number, b: number, sign: number): number => {
    const r = sign > 0 ? a + b : a - b;
    if (Number.isInteger(a) && Number.isInteger(b)) return r;
    const k = Math.max(decimals(a), decimals(b));
    if (k <= 22) {
      const p = POW10[k] as number;
      const ai = Math.round(a * p);
      const bi = Math.round(b * p);
      if (Math.abs(ai) < EXACT && Math.abs(bi) < EXACT) return (sign > 0 ? ai + bi : ai - bi) / p;
    }
    return r;
  };

  L.add = (a: FValue, b: FValue): number => {
    if (typeof a === 'number' && typeof b === 'number' && Number.isInteger(a) && Number.isInteger(b))
      return finite(a + b, '+');
    return finite(addNums(num(a), num(b), 1), '+');
  };
  L.sub = (a: FValue, b: FValue): number => {
    if (typeof a === 'number' && typeof b === 'number' && Number.isInteger(a) && Number.isInteger(b))
      return finite(a - b, '-');
    return finite(addNums(num(a), num(b), -1), '-');
  };
  L.mul = (a: FValue, b: FValue): number => {
    const x = num(a);
    const y = num(b);
    const r = x * y;
    if (!Number.isInteger(x) || !Number.isInteger(y)) {
      const da = decimals(x);
      const db = decimals(y);
      if (da + db <= 22) {
        const xi = Math.round(x * (POW10[da] as number));
        const yi = Math.round(y * (POW10[db] as number));
        const p = xi * yi;
        if (Math.abs(xi) < EXACT && Math.abs(yi) < EXACT && Math.abs(p) < Number.MAX_SAFE_INTEGER)
          return finite(p / (POW10[da + db] as number), '*');
      }
    }
    return finite(r, '*');
  };
  L.div = (a: FValue, b: FValue): number => {
    const x = num(a);
    const y = num(b);
    if (y === 0) return fail('FML_DIVISION_BY_ZERO', `Division by zero: ${numText(x)} / 0`);
    if (!Number.isInteger(x) || !Number.isInteger(y)) {
      const k = Math.max(decimals(x), decimals(y));
      if (k <= 22) {
        const p = POW10[k] as number;
        const xi = Math.round(x * p);
        const yi = Math.round(y * p);
        if (Math.abs(xi) < EXACT && Math.abs(yi) < EXACT) return finite(xi / yi, '/');
      }
    }
    return finite(x / y, '/');
  };
  L.neg = (a: FValue): number => 0 - num(a);
  L.plus = (a: FValue): number => num(a);
  L.cat = (a: FValue, b: FValue): string => {
    const x = text(a);
    const y = text(b);
    const length = x.length + y.length;
    return length > L.maxText
      ? fail('FML_TEXT_TOO_LONG', `&: the text would be ${length} characters long, more than the limit of ${L.maxText}`)
      : x + y;
  };

  /** Orders two values: dates as instants, else numbers, else booleans, else text by code unit. */
  const cmp = (a: FValue, b: FValue): number => {
    if (a instanceof Date || b instanceof Date) {
      const x = a === null ? -Infinity : (L.date(a) as Date).getTime();
      const y = b === null ? -Infinity : (L.date(b) as Date).getTime();
      return x < y ? -1 : x > y ? 1 : 0;
    }
    if (typeof a === 'number' || typeof b === 'number') {
      const x = num(a);
      const y = num(b);
      return x < y ? -1 : x > y ? 1 : 0;
    }
    if (typeof a === 'boolean' || typeof b === 'boolean') return (L.bool(a) ? 1 : 0) - (L.bool(b) ? 1 : 0);
    const x = text(a);
    const y = text(b);
    return x < y ? -1 : x > y ? 1 : 0;
  };
  /** Equality never fails: values that cannot be converted to a common type are unequal. */
  const eq = (a: FValue, b: FValue): boolean => {
    if (a === b) return true;
    if (typeof a === typeof b && typeof a !== 'object') return false;
    try {
      return cmp(a, b) === 0;
    } catch {
      return false;
    }
  };
  L.eq = eq;
  L.ne = (a: FValue, b: FValue): boolean => !eq(a, b);
  L.lt = (a: FValue, b: FValue): boolean => cmp(a, b) < 0;
  L.le = (a: FValue, b: FValue): boolean => cmp(a, b) <= 0;
  L.gt = (a: FValue, b: FValue): boolean => cmp(a, b) > 0;
  L.ge = (a: FValue, b: FValue): boolean => cmp(a, b) >= 0;

  L.out = (v: FValue | undefined): FValue => {
    if (v === undefined) return null;
    if (typeof v === 'number') return v === 0 ? 0 : finite(v, 'The formula');
    if (typeof v === 'string' && v.length > L.maxText) return checkText(v, 'The formula');
    return v;
  };

  // ── the batch: clock and random numbers (xoshiro128**, seeded per batch by the host) ────────
  let s0 = 1;
  let s1 = 2;
  let s2 = 3;
  let s3 = 4;
  const rotl = (x: number, k: number): number => (x << k) | (x >>> (32 - k));
  const random32 = (): number => {
    const result = Math.imul(rotl(Math.imul(s1, 5), 7), 9) >>> 0;
    const t = s1 << 9;
    s2 ^= s0;
    s3 ^= s1;
    s1 ^= s2;
    s0 ^= s3;
    s2 ^= t;
    s3 = rotl(s3, 11);
    return result;
  };
  L.random32 = random32;
  L.random = (): number => (random32() * 2 ** 21 + (random32() >>> 11)) / 2 ** 53;
  L.seed = (a: number, b: number, c: number, d: number): void => {
    s0 = a | 0;
    s1 = b | 0;
    s2 = c | 0;
    s3 = d | 0;
    if ((s0 | s1 | s2 | s3) === 0) s0 = 1;
  };
  L.begin = (now: number, a: number, b: number, c: number, d: number): void => {
    L.now = new Date(now);
    L.today = new Date(now - (((now % DAY_MS) + DAY_MS) % DAY_MS));
    L.seed(a, b, c, d);
  };
}
