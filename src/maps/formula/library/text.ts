/**
 * Text functions. Runs INSIDE the sandbox: the installer refers only to `L` and JavaScript
 * built-ins (see core.ts). Positions are 1-based and count UTF-16 code units, as JavaScript and
 * .NET strings do.
 */
import type { FormulaLibrary, FValue } from './types.js';

export function installText(L: FormulaLibrary): void {
  const { text, int, fail, checkText, show } = L;
  const F = L.fn;

  const count = (v: FValue, fn: string, what = 'count'): number => {
    const n = int(v);
    return n < 0 ? fail('FML_INVALID_ARGUMENT', `${fn}: ${what} must not be negative (it is ${n})`) : n;
  };
  const tooLong = (fn: string, length: number): never =>
    fail('FML_TEXT_TOO_LONG', `${fn}: the text would be ${length} characters long, more than the limit of ${L.maxText}`);
  const position = (v: FValue, fn: string, what = 'start'): number => {
    const n = int(v);
    return n < 1 ? fail('FML_INVALID_ARGUMENT', `${fn}: ${what} is a position from 1 (it is ${n})`) : n;
  };

  // Regular expressions are compiled once per pattern (a few hundred patterns at most).
  const regexCache = new Map<string, RegExp>();
  const regex = (pattern: string, flags: string, fn: string): RegExp => {
    const key = `${flags}/${pattern}`;
    let re = regexCache.get(key);
    if (re === undefined) {
      try {
        re = new RegExp(pattern, flags);
      } catch (e) {
        return fail('FML_INVALID_ARGUMENT', `${fn}: ${show(pattern)} is not a valid regular expression (${e instanceof Error ? e.message : String(e)})`);
      }
      if (regexCache.size >= 500) regexCache.clear();
      regexCache.set(key, re);
    }
    re.lastIndex = 0;
    return re;
  };
  const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

  F.CONCATENATE = (...parts: FValue[]): string => {
    let out = '';
    for (const p of parts) {
      out += text(p);
      if (out.length > L.maxText) checkText(out, 'CONCATENATE');
    }
    return out;
  };
  F.LEFT = (t: FValue, n: FValue): string => text(t).slice(0, count(n, 'LEFT'));
  F.RIGHT = (t: FValue, n: FValue): string => {
    const s = text(t);
    const c = count(n, 'RIGHT');
    return c === 0 ? '' : s.slice(Math.max(0, s.length - c));
  };
  F.MID = (t: FValue, start: FValue, n: FValue): string => {
    const from = position(start, 'MID') - 1;
    return text(t).slice(from, from + count(n, 'MID'));
  };
  F.LEN = (t: FValue): number => text(t).length;
  F.UPPER = (t: FValue): string => text(t).toUpperCase();
  F.LOWER = (t: FValue): string => text(t).toLowerCase();
  const LETTER = /\p{L}/u;
  F.PROPER = (t: FValue): string => {
    let out = '';
    let inWord = false;
    for (const ch of text(t)) {
      const letter = LETTER.test(ch);
      out += letter ? (inWord ? ch.toLowerCase() : ch.toUpperCase()) : ch;
      inWord = letter;
    }
    return out;
  };
  F.TRIM = (t: FValue): string => text(t).trim();
  F.TRIMLEFT = (t: FValue): string => text(t).trimStart();
  F.TRIMRIGHT = (t: FValue): string => text(t).trimEnd();
  F.REPLACE = (t: FValue, start: FValue, n: FValue, replacement: FValue): string => {
    const s = text(t);
    const from = position(start, 'REPLACE') - 1;
    const c = count(n, 'REPLACE');
    return checkText(s.slice(0, from) + text(replacement) + s.slice(from + c), 'REPLACE');
  };
  F.SUBSTITUTE = (t: FValue, oldText: FValue, newText: FValue, instance?: FValue): string => {
    const s = text(t);
    const from = text(oldText);
    const to = text(newText);
    if (from === '') return s;
    if (instance === undefined) {
      const parts = s.split(from);
      const length = s.length + (parts.length - 1) * (to.length - from.length);
      if (length > L.maxText) tooLong('SUBSTITUTE', length);
      return parts.join(to);
    }
    const nth = position(instance, 'SUBSTITUTE', 'instance');
    let at = -1;
    for (let i = 0; i < nth; i++) {
      at = s.indexOf(from, at + (i === 0 ? 0 : from.length));
      if (at < 0) return s;
    }
    return checkText(s.slice(0, at) + to + s.slice(at + from.length), 'SUBSTITUTE');
  };
  F.FIND = (find: FValue, within: FValue, start?: FValue): number => {
    const from = start === undefined ? 1 : position(start, 'FIND');
    const s = text(within);
    if (from > s.length + 1) return 0;
    return s.indexOf(text(find), from - 1) + 1;
  };
  F.SEARCH = (find: FValue, within: FValue, start?: FValue): number => {
    const from = start === undefined ? 1 : position(start, 'SEARCH');
    const s = text(within);
    if (from > s.length + 1) return 0;
    const re = regex(escapeRegex(text(find)), 'gi', 'SEARCH');
    re.lastIndex = from - 1;
    const m = re.exec(s);
    return m === null ? 0 : m.index + 1;
  };
  F.FINDLAST = (find: FValue, within: FValue): number => text(within).lastIndexOf(text(find)) + 1;
  const pad = (fn: string, t: FValue, length: FValue, padChar: FValue | undefined, left: boolean): string => {
    const s = text(t);
    const n = count(length, fn, 'length');
    const with_ = padChar === undefined ? ' ' : text(padChar);
    if (n <= s.length || with_ === '') return s;
    if (n > L.maxText) tooLong(fn, n);
    return left ? s.padStart(n, with_) : s.padEnd(n, with_);
  };
  F.PADLEFT = (t: FValue, length: FValue, padChar?: FValue): string => pad('PADLEFT', t, length, padChar, true);
  F.PADRIGHT = (t: FValue, length: FValue, padChar?: FValue): string => pad('PADRIGHT', t, length, padChar, false);
  F.STARTSWITH = (t: FValue, prefix: FValue): boolean => text(t).startsWith(text(prefix));
  F.ENDSWITH = (t: FValue, suffix: FValue): boolean => text(t).endsWith(text(suffix));
  F.CONTAINS = (t: FValue, part: FValue): boolean => text(t).includes(text(part));
  F.REVERSE = (t: FValue): string => Array.from(text(t)).reverse().join('');
  F.REPEAT = (t: FValue, n: FValue): string => {
    const s = text(t);
    const c = count(n, 'REPEAT');
    return s.length * c > L.maxText ? tooLong('REPEAT', s.length * c) : s.repeat(c);
  };
  F.STRIPCHARS = (t: FValue, chars: FValue): string => {
    const strip = new Set(Array.from(text(chars)));
    let out = '';
    for (const ch of text(t)) if (!strip.has(ch)) out += ch;
    return out;
  };
  F.EXACT = (a: FValue, b: FValue): boolean => text(a) === text(b);
  F.CHAR = (code: FValue): string => {
    const c = int(code);
    return c < 0 || c > 0x10ffff ? fail('FML_INVALID_ARGUMENT', `CHAR: ${c} is not a Unicode code point (0 to 1114111)`) : String.fromCodePoint(c);
  };
  F.CODE = (t: FValue): number => {
    const s = text(t);
    return s === '' ? fail('FML_INVALID_ARGUMENT', 'CODE: the text is empty') : (s.codePointAt(0) as number);
  };
  // eslint-disable-next-line no-control-regex -- removing control characters is the point
  const CONTROL = /[\u0000-\u001f\u007f]/g;
  F.CLEAN = (t: FValue): string => text(t).replace(CONTROL, '');
  F.TEXTJOIN = (delimiter: FValue, ignoreEmpty: FValue, ...parts: FValue[]): string => {
    const d = text(delimiter);
    const skip = L.bool(ignoreEmpty);
    const kept: string[] = [];
    let length = 0;
    for (const p of parts) {
      const s = text(p);
      if (skip && s === '') continue;
      kept.push(s);
      length += s.length + d.length;
      if (length > L.maxText) tooLong('TEXTJOIN', length);
    }
    return kept.join(d);
  };
  F.SPLITPART = (t: FValue, delimiter: FValue, index: FValue): string => {
    const s = text(t);
    const d = text(delimiter);
    const i = int(index);
    if (i === 0) return fail('FML_INVALID_ARGUMENT', 'SPLITPART: index counts from 1 (or from -1 at the end); it cannot be 0');
    const parts = d === '' ? [s] : s.split(d);
    const part = i > 0 ? parts[i - 1] : parts[parts.length + i];
    return part ?? '';
  };
  F.REGEXMATCH = (t: FValue, pattern: FValue): boolean => regex(text(pattern), '', 'REGEXMATCH').test(text(t));
  F.REGEXREPLACE = (t: FValue, pattern: FValue, replacement: FValue): string =>
    checkText(text(t).replace(regex(text(pattern), 'g', 'REGEXREPLACE'), text(replacement)), 'REGEXREPLACE');
  F.REGEXEXTRACT = (t: FValue, pattern: FValue, group?: FValue): string | null => {
    const re = regex(text(pattern), '', 'REGEXEXTRACT');
    const m = re.exec(text(t));
    if (m === null) return null;
    const g = group === undefined ? 0 : count(group, 'REGEXEXTRACT', 'group');
    if (g >= m.length) return fail('FML_INVALID_ARGUMENT', `REGEXEXTRACT: the pattern has no group ${g} (it has ${m.length - 1})`);
    return m[g] ?? null;
  };
  F.URLENCODE = (t: FValue): string => {
    try {
      return checkText(encodeURIComponent(text(t)), 'URLENCODE');
    } catch (e) {
      if (L.isFailure(e)) throw e;
      return fail('FML_INVALID_ARGUMENT', 'URLENCODE: the text holds a broken surrogate pair and cannot be encoded as UTF-8');
    }
  };
  F.URLDECODE = (t: FValue): string => {
    const s = text(t);
    try {
      return decodeURIComponent(s);
    } catch {
      return fail('FML_INVALID_ARGUMENT', `URLDECODE: ${show(s)} holds a malformed percent-encoded sequence`);
    }
  };
  const HTML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  F.HTMLENCODE = (t: FValue): string => checkText(text(t).replace(/[&<>"']/g, (c) => HTML[c] ?? c), 'HTMLENCODE');
}
