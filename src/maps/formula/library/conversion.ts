/**
 * Data Conversion functions. Runs INSIDE the sandbox: the installer refers only to `L` and
 * JavaScript built-ins (see core.ts). The sandbox has no TextEncoder or atob, so UTF-8 and base64
 * are written out here.
 */
import type { FormulaLibrary, FValue } from './types.js';

export function installConversion(L: FormulaLibrary): void {
  const { text, num, fail, show, parseNum, parseDate, checkText } = L;
  const F = L.fn;

  F.TOSTRING = (v: FValue): string | null => (v === null ? null : checkText(text(v), 'TOSTRING'));
  F.TOINTEGER = (v: FValue): number => Math.trunc(num(v)) + 0;
  F.TODECIMAL = (v: FValue): number => num(v);
  F.TOBOOLEAN = (v: FValue): boolean => L.bool(v);
  F.TODATETIME = (v: FValue, format?: FValue): Date | null =>
    format === undefined || format === null ? L.date(v) : L.toDateWithFormat(v, format);
  F.ISNUMBER = (v: FValue): boolean => typeof v === 'number' || (typeof v === 'string' && parseNum(v) !== undefined);
  F.ISINTEGER = (v: FValue): boolean => {
    const n = typeof v === 'number' ? v : typeof v === 'string' ? parseNum(v) : undefined;
    return n !== undefined && Number.isInteger(n);
  };
  F.ISDATE = (v: FValue): boolean => v instanceof Date || (typeof v === 'string' && parseDate(v) !== undefined);
  const BOOLEAN_WORDS = new Set(['true', 'false', 'yes', 'no', 'y', 'n', 'on', 'off', '1', '0']);
  F.ISBOOLEAN = (v: FValue): boolean =>
    typeof v === 'boolean' || (typeof v === 'string' && BOOLEAN_WORDS.has(v.trim().toLowerCase()));

  const utf8 = (s: string): number[] => {
    const bytes: number[] = [];
    for (const ch of s) {
      const c = ch.codePointAt(0) as number;
      if (c >= 0xd800 && c <= 0xdfff)
        fail('FML_INVALID_ARGUMENT', 'TOBASE64: the text holds a broken surrogate pair and cannot be encoded as UTF-8');
      if (c < 0x80) bytes.push(c);
      else if (c < 0x800) bytes.push(0xc0 | (c >> 6), 0x80 | (c & 63));
      else if (c < 0x10000) bytes.push(0xe0 | (c >> 12), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
      else bytes.push(0xf0 | (c >> 18), 0x80 | ((c >> 12) & 63), 0x80 | ((c >> 6) & 63), 0x80 | (c & 63));
    }
    return bytes;
  };
  const fromUtf8 = (bytes: number[]): string | undefined => {
    let out = '';
    for (let i = 0; i < bytes.length;) {
      const b = bytes[i] as number;
      const need =
        b < 0x80 ? 0 : b >= 0xc2 && b < 0xe0 ? 1 : b >= 0xe0 && b < 0xf0 ? 2 : b >= 0xf0 && b < 0xf5 ? 3 : -1;
      if (need < 0 || i + need > bytes.length - 1) return undefined;
      let c = need === 0 ? b : b & (0x3f >> need);
      for (let k = 1; k <= need; k++) {
        const cont = bytes[i + k] as number;
        if ((cont & 0xc0) !== 0x80) return undefined;
        c = (c << 6) | (cont & 63);
      }
      const min = [0, 0x80, 0x800, 0x10000][need] as number;
      if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff)) return undefined;
      out += String.fromCodePoint(c);
      i += need + 1;
    }
    return out;
  };
  const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';
  /** The number of UTF-8 bytes of a text, without encoding it (a lone surrogate counts 3, as its error comes later). */
  const utf8Length = (s: string): number => {
    let n = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x80) n += 1;
      else if (c < 0x800) n += 2;
      else if (c >= 0xd800 && c <= 0xdbff && (s.charCodeAt(i + 1) & 0xfc00) === 0xdc00) {
        n += 4;
        i++;
      } else n += 3;
    }
    return n;
  };
  F.TOBASE64 = (v: FValue): string => {
    const s = text(v);
    // Counted before the bytes are built: an over-long answer allocates nothing.
    const length = Math.ceil(utf8Length(s) / 3) * 4;
    if (length > L.maxText)
      fail(
        'FML_TEXT_TOO_LONG',
        `TOBASE64: the text would be ${length} characters long, more than the limit of ${L.maxText}`,
      );
    const bytes = utf8(s);
    let out = '';
    for (let i = 0; i < bytes.length; i += 3) {
      const a = bytes[i] as number;
      const b = bytes[i + 1];
      const c = bytes[i + 2];
      const n = (a << 16) | ((b ?? 0) << 8) | (c ?? 0);
      out += ALPHABET.charAt(n >> 18) + ALPHABET.charAt((n >> 12) & 63);
      out +=
        b === undefined ? '==' : ALPHABET.charAt((n >> 6) & 63) + (c === undefined ? '=' : ALPHABET.charAt(n & 63));
    }
    return out;
  };
  F.FROMBASE64 = (v: FValue): string => {
    const s = text(v).replace(/[\s]/g, '');
    const bad = (): never => fail('FML_INVALID_ARGUMENT', `FROMBASE64: ${show(v)} is not base64 text`);
    if (!/^[A-Za-z0-9+/]*={0,2}$/.test(s) || s.length % 4 === 1) return bad();
    const body = s.replace(/=+$/, '');
    if (s.length % 4 === 0 ? false : s.length !== body.length) return bad();
    const bytes: number[] = [];
    let bits = 0;
    let acc = 0;
    for (const ch of body) {
      acc = (acc << 6) | ALPHABET.indexOf(ch);
      bits += 6;
      if (bits >= 8) {
        bits -= 8;
        bytes.push((acc >> bits) & 0xff);
      }
    }
    const out = fromUtf8(bytes);
    return out === undefined
      ? fail('FML_INVALID_ARGUMENT', 'FROMBASE64: the decoded bytes are not UTF-8 text')
      : checkText(out, 'FROMBASE64');
  };
  F.TOHEX = (v: FValue): string => {
    const n = num(v);
    if (n < 0 || !Number.isInteger(n))
      return fail('FML_INVALID_ARGUMENT', `TOHEX: ${L.numText(n)} is not a non-negative whole number`);
    return checkText(n.toString(16).toUpperCase(), 'TOHEX');
  };
  F.FROMHEX = (v: FValue): number => {
    const s = text(v).trim();
    if (!/^[0-9a-fA-F]{1,13}$/.test(s))
      return fail('FML_INVALID_ARGUMENT', `FROMHEX: ${show(v)} is not a hexadecimal number (at most 13 digits)`);
    return parseInt(s, 16);
  };
}
