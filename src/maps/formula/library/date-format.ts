/**
 * Date formats: FORMATDATE writes a date with one, and TODATETIME(value, format) reads one (via
 * `L.parseWithFormat`). Runs INSIDE the sandbox: the installer refers only to `L` and JavaScript
 * built-ins (see core.ts).
 *
 * Codes: yyyy yy y (year), MMMM MMM MM M (month), dddd ddd dd d (weekday name / day), HH H (hour
 * 0–23), hh h (hour 1–12), mm m (minute), ss s (second), f… (fraction, one digit per f), tt t
 * (AM/PM, A/P). Text in single quotes (`''` is a quote) and every other character is copied; a
 * backslash copies the next character.
 */
import type { FormulaLibrary, FValue } from './types.js';

// eslint-disable-next-line max-lines-per-function -- shipped as source text into the isolate; it cannot call helpers outside its body
export function installDateFormat(L: FormulaLibrary): void {
  const { text, fail, utc, show } = L;
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
  const CODES = 'yMdHhmsft';

  type Token = { code: string; n: number } | { lit: string };
  const cache = new Map<string, Token[]>();
  const tokens = (format: string): Token[] => {
    const hit = cache.get(format);
    if (hit) return hit;
    const out: Token[] = [];
    let i = 0;
    while (i < format.length) {
      const c = format.charAt(i);
      if (c === "'") {
        let lit = '';
        i += 1;
        while (i < format.length) {
          if (format.charAt(i) === "'") {
            if (format.charAt(i + 1) !== "'") break;
            i += 1;
          }
          lit += format.charAt(i);
          i += 1;
        }
        i += 1;
        out.push({ lit });
      } else if (c === '\\' && i + 1 < format.length) {
        out.push({ lit: format.charAt(i + 1) });
        i += 2;
      } else if (CODES.includes(c)) {
        let n = 1;
        while (format.charAt(i + n) === c) n += 1;
        out.push({ code: c, n });
        i += n;
      } else {
        out.push({ lit: c });
        i += 1;
      }
    }
    if (cache.size >= 200) cache.clear();
    cache.set(format, out);
    return out;
  };

  const pad = (v: number, n: number): string => String(v).padStart(n, '0');

  L.fn.FORMATDATE = (date: FValue, format: FValue): string | null => {
    const d = L.date(date);
    if (d === null) return null;
    const y = d.getUTCFullYear();
    const mo = d.getUTCMonth();
    const h = d.getUTCHours();
    let out = '';
    for (const t of tokens(text(format))) {
      if ('lit' in t) {
        out += t.lit;
        continue;
      }
      const { code, n } = t;
      switch (code) {
        case 'y':
          out += n === 1 ? String(y % 100) : n === 2 ? pad(y % 100, 2) : pad(y, n);
          break;
        case 'M':
          out +=
            n === 1
              ? String(mo + 1)
              : n === 2
                ? pad(mo + 1, 2)
                : n === 3
                  ? (MONTHS[mo] as string).slice(0, 3)
                  : (MONTHS[mo] as string);
          break;
        case 'd': {
          const wd = DAYS[d.getUTCDay()] as string;
          out += n === 1 ? String(d.getUTCDate()) : n === 2 ? pad(d.getUTCDate(), 2) : n === 3 ? wd.slice(0, 3) : wd;
          break;
        }
        case 'H':
          out += n === 1 ? String(h) : pad(h, 2);
          break;
        case 'h':
          out += n === 1 ? String(h % 12 || 12) : pad(h % 12 || 12, 2);
          break;
        case 'm':
          out += n === 1 ? String(d.getUTCMinutes()) : pad(d.getUTCMinutes(), 2);
          break;
        case 's':
          out += n === 1 ? String(d.getUTCSeconds()) : pad(d.getUTCSeconds(), 2);
          break;
        case 'f':
          out += pad(d.getUTCMilliseconds(), 3).padEnd(n, '0').slice(0, n);
          break;
        default:
          out += n === 1 ? (h < 12 ? 'A' : 'P') : h < 12 ? 'AM' : 'PM';
      }
      if (out.length > L.maxText) L.checkText(out, 'FORMATDATE');
    }
    return L.checkText(out, 'FORMATDATE');
  };

  const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const names = (list: string[], short: boolean): string =>
    `(${list.map((x) => (short ? x.slice(0, 3) : x)).join('|')})`;
  interface Parser {
    re: RegExp;
    fields: { code: string; n: number }[];
  }
  const parsers = new Map<string, Parser>();
  const parserOf = (format: string): Parser => {
    const hit = parsers.get(format);
    if (hit) return hit;
    let source = '';
    const fields: { code: string; n: number }[] = [];
    for (const t of tokens(format)) {
      if ('lit' in t) {
        source += escapeRegex(t.lit);
        continue;
      }
      const { code, n } = t;
      fields.push(t);
      if (code === 'M' && n >= 3) source += names(MONTHS, n === 3);
      else if (code === 'd' && n >= 3) source += names(DAYS, n === 3);
      else if (code === 't') source += n === 1 ? '([AP])' : '(AM|PM)';
      else if (code === 'f') source += `([0-9]{${n}})`;
      else if (code === 'y') source += n <= 2 ? '([0-9]{2})' : '([0-9]{4})';
      else source += n === 1 ? '([0-9]{1,2})' : '([0-9]{2})';
    }
    const parser = { re: new RegExp(`^${source}$`, 'i'), fields };
    if (parsers.size >= 200) parsers.clear();
    parsers.set(format, parser);
    return parser;
  };
  const indexOfName = (list: string[], name: string): number =>
    list.findIndex((x) => x.toLowerCase().startsWith(name.toLowerCase()));

  L.parseWithFormat = (s: string, format: string): Date | undefined => {
    const { re, fields } = parserOf(format);
    const m = re.exec(s.trim());
    if (!m) return undefined;
    let year = 1970;
    let month = 1;
    let day = 1;
    let hour = 0;
    let minute = 0;
    let second = 0;
    let ms = 0;
    let pm: boolean | undefined;
    let twelve = false;
    fields.forEach(({ code, n }, i) => {
      const raw = m[i + 1] as string;
      const v = Number(raw);
      if (code === 'y') year = n <= 2 ? (v < 50 ? 2000 + v : 1900 + v) : v;
      else if (code === 'M') month = n >= 3 ? indexOfName(MONTHS, raw) + 1 : v;
      else if (code === 'd') day = n >= 3 ? day : v;
      else if (code === 'H') hour = v;
      else if (code === 'h') {
        hour = v;
        twelve = true;
      } else if (code === 'm') minute = v;
      else if (code === 's') second = v;
      else if (code === 'f') ms = Math.round(Number(`0.${raw}`) * 1000);
      else pm = raw.toUpperCase().startsWith('P');
    });
    if (twelve) {
      if (hour < 1 || hour > 12) return undefined;
      hour = (hour % 12) + (pm ? 12 : 0);
    } else if (pm === true && hour < 12) hour += 12;
    const dim = new Date(utc(year, month + 1, 0)).getUTCDate();
    if (month < 1 || month > 12 || day < 1 || day > dim || hour > 23 || minute > 59 || second > 59) return undefined;
    return new Date(utc(year, month, day, hour, minute, second, ms));
  };

  L.toDateWithFormat = (v: FValue, format: FValue): Date | null => {
    if (v === null) return null;
    if (v instanceof Date) return v;
    const f = text(format);
    const d = typeof v === 'string' ? L.parseWithFormat(v, f) : undefined;
    return (
      d ??
      fail('FML_NOT_A_DATE', `TODATETIME: ${show(v)} is not a date in the format ${show(f)}`, {
        value: typeof v === 'string' ? v.slice(0, 200) : v,
        format: f,
      })
    );
  };
}
