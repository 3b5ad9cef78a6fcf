/**
 * Date and time functions. Runs INSIDE the sandbox: the installer refers only to `L` and
 * JavaScript built-ins (see core.ts). Dates are instants in UTC; a null date gives null. NOW() and
 * TODAY() read the batch's clock, which the host passes in with each batch (the sandbox has no
 * clock of its own that formulas could observe).
 */
import type { FormulaLibrary, FValue } from './types.js';

// eslint-disable-next-line max-lines-per-function -- shipped as source text into the isolate; it cannot call helpers outside its body
export function installDateTime(L: FormulaLibrary): void {
  const { int, fail, utc, mkDate, show, text } = L;
  const F = L.fn;
  const DAY = 86_400_000;
  const UNIT_MS = new Map<string, number>([
    ['week', 7 * DAY],
    ['day', DAY],
    ['hour', 3_600_000],
    ['minute', 60_000],
    ['second', 1000],
    ['millisecond', 1],
  ]);
  const PARTS = new Map<string, string>([
    ['year', 'year'],
    ['yyyy', 'year'],
    ['yy', 'year'],
    ['quarter', 'quarter'],
    ['qq', 'quarter'],
    ['q', 'quarter'],
    ['month', 'month'],
    ['mm', 'month'],
    ['m', 'month'],
    ['week', 'week'],
    ['wk', 'week'],
    ['ww', 'week'],
    ['day', 'day'],
    ['dd', 'day'],
    ['d', 'day'],
    ['hour', 'hour'],
    ['hh', 'hour'],
    ['minute', 'minute'],
    ['mi', 'minute'],
    ['n', 'minute'],
    ['second', 'second'],
    ['ss', 'second'],
    ['s', 'second'],
    ['millisecond', 'millisecond'],
    ['ms', 'millisecond'],
  ]);
  const EXTRA_PARTS = new Map<string, string>([
    ['dayofyear', 'dayofyear'],
    ['dy', 'dayofyear'],
    ['weekday', 'weekday'],
    ['dw', 'weekday'],
  ]);
  const MONTHS = [
    'January',
    'February',
    'March',
    'April',
    'May',
    'June',
    'July',
    'August',
    'September',
    'October',
    'November',
    'December',
  ];
  const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];

  const partOf = (v: FValue, fn: string, extra: boolean): string => {
    const key = text(v).trim().toLowerCase();
    const part = PARTS.get(key) ?? (extra ? EXTRA_PARTS.get(key) : undefined);
    if (part !== undefined) return part;
    const known = extra
      ? 'year, quarter, month, week, day, hour, minute, second, millisecond, dayofyear or weekday'
      : 'year, quarter, month, week, day, hour, minute, second or millisecond';
    return fail('FML_INVALID_ARGUMENT', `${fn}: ${show(v)} is not a date part; use ${known}`);
  };
  const daysIn = (year: number, month: number): number => new Date(utc(year, month + 1, 0)).getUTCDate();
  const isLeap = (y: number): boolean => (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0;
  const dayNumber = (d: Date): number => Math.floor(d.getTime() / DAY);
  const dayOfYear = (d: Date): number => dayNumber(d) - Math.floor(utc(d.getUTCFullYear(), 1, 1) / DAY) + 1;

  /** date moved by whole months, the day of the month kept or cut to the month's last day. */
  const addMonths = (d: Date, months: number): Date => {
    const total = d.getUTCFullYear() * 12 + d.getUTCMonth() + months;
    const year = Math.floor(total / 12);
    const month = total - year * 12 + 1;
    const day = Math.min(d.getUTCDate(), daysIn(year, month));
    return mkDate(utc(year, month, day, d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds(), d.getUTCMilliseconds()));
  };
  const add = (part: string, n: number, d: Date): Date => {
    if (part === 'year') return addMonths(d, n * 12);
    if (part === 'quarter') return addMonths(d, n * 3);
    if (part === 'month') return addMonths(d, n);
    return mkDate(d.getTime() + n * (UNIT_MS.get(part) as number));
  };

  F.NOW = (): Date => L.now;
  F.TODAY = (): Date => L.today;
  F.DATEADD = (part: FValue, n: FValue, date: FValue): Date | null => {
    const p = partOf(part, 'DATEADD', false);
    const d = L.date(date);
    return d === null ? null : add(p, int(n), d);
  };
  F.DATEDIFF = (part: FValue, start: FValue, end: FValue): number | null => {
    const p = partOf(part, 'DATEDIFF', false);
    const a = L.date(start);
    const b = L.date(end);
    if (a === null || b === null) return null;
    const months = (d: Date): number => d.getUTCFullYear() * 12 + d.getUTCMonth();
    switch (p) {
      case 'year':
        return b.getUTCFullYear() - a.getUTCFullYear();
      case 'quarter':
        return Math.floor(months(b) / 3) - Math.floor(months(a) / 3);
      case 'month':
        return months(b) - months(a);
      case 'week':
        // 1970-01-01 was a Thursday: day number + 4 counts from a Sunday.
        return Math.floor((dayNumber(b) + 4) / 7) - Math.floor((dayNumber(a) + 4) / 7);
      default: {
        const unit = UNIT_MS.get(p) as number;
        return Math.floor(b.getTime() / unit) - Math.floor(a.getTime() / unit);
      }
    }
  };
  const partValue = (p: string, d: Date): number => {
    switch (p) {
      case 'year':
        return d.getUTCFullYear();
      case 'quarter':
        return Math.floor(d.getUTCMonth() / 3) + 1;
      case 'month':
        return d.getUTCMonth() + 1;
      case 'week': {
        const jan1 = new Date(utc(d.getUTCFullYear(), 1, 1)).getUTCDay();
        return Math.floor((dayOfYear(d) - 1 + jan1) / 7) + 1;
      }
      case 'day':
        return d.getUTCDate();
      case 'hour':
        return d.getUTCHours();
      case 'minute':
        return d.getUTCMinutes();
      case 'second':
        return d.getUTCSeconds();
      case 'millisecond':
        return d.getUTCMilliseconds();
      case 'dayofyear':
        return dayOfYear(d);
      default:
        return d.getUTCDay() + 1;
    }
  };
  F.DATEPART = (part: FValue, date: FValue): number | null => {
    const p = partOf(part, 'DATEPART', true);
    const d = L.date(date);
    return d === null ? null : partValue(p, d);
  };
  /** A function of one date that gives null for null. */
  const ofDate =
    <T extends FValue>(f: (d: Date) => T) =>
    (v: FValue): T | null => {
      const d = L.date(v);
      return d === null ? null : f(d);
    };
  F.YEAR = ofDate((d) => d.getUTCFullYear());
  F.MONTH = ofDate((d) => d.getUTCMonth() + 1);
  F.DAY = ofDate((d) => d.getUTCDate());
  F.HOUR = ofDate((d) => d.getUTCHours());
  F.MINUTE = ofDate((d) => d.getUTCMinutes());
  F.SECOND = ofDate((d) => d.getUTCSeconds());
  F.WEEKDAY = ofDate((d) => d.getUTCDay() + 1);
  F.DAYOFYEAR = ofDate(dayOfYear);
  F.ISOWEEKNUM = ofDate((d) => {
    const day = dayNumber(d);
    // The week's Thursday decides the year the week belongs to.
    const thursday = day - ((d.getUTCDay() + 6) % 7) + 3;
    const year = new Date(thursday * DAY).getUTCFullYear();
    return Math.floor((thursday - Math.floor(utc(year, 1, 1) / DAY)) / 7) + 1;
  });
  F.MONTHNAME = ofDate((d) => L.checkText(MONTHS[d.getUTCMonth()] as string, 'MONTHNAME'));
  F.DAYNAME = ofDate((d) => L.checkText(DAYS[d.getUTCDay()] as string, 'DAYNAME'));
  F.DATE = (y: FValue, m: FValue, d: FValue): Date => mkDate(utc(int(y), int(m), int(d)));
  F.DATETIME = (y: FValue, mo: FValue, d: FValue, h: FValue, mi: FValue, s: FValue): Date =>
    mkDate(utc(int(y), int(mo), int(d), int(h), int(mi), int(s)));
  const adder =
    (part: string) =>
    (date: FValue, n: FValue): Date | null => {
      const d = L.date(date);
      return d === null ? null : add(part, int(n), d);
    };
  F.ADDDAYS = adder('day');
  F.ADDMONTHS = adder('month');
  F.ADDYEARS = adder('year');
  F.ADDHOURS = adder('hour');
  F.ADDMINUTES = adder('minute');
  F.ADDSECONDS = adder('second');
  F.STARTOFMONTH = ofDate((d) => mkDate(utc(d.getUTCFullYear(), d.getUTCMonth() + 1, 1)));
  F.ENDOFMONTH = ofDate((d) =>
    mkDate(utc(d.getUTCFullYear(), d.getUTCMonth() + 1, daysIn(d.getUTCFullYear(), d.getUTCMonth() + 1))),
  );
  F.DAYSINMONTH = ofDate((d) => daysIn(d.getUTCFullYear(), d.getUTCMonth() + 1));
  F.ISLEAPYEAR = (v: FValue): boolean | null => {
    if (typeof v === 'number') return isLeap(Math.trunc(v));
    if (typeof v === 'string' && /^\s*[+-]?[0-9]+\s*$/.test(v)) return isLeap(Number(v));
    const d = L.date(v);
    return d === null ? null : isLeap(d.getUTCFullYear());
  };
  F.TOUNIXTIME = ofDate((d) => Math.floor(d.getTime() / 1000));
  F.FROMUNIXTIME = (s: FValue): Date | null => (s === null ? null : mkDate(Math.round(L.num(s) * 1000)));
}
