/**
 * Text functions. Runs INSIDE the sandbox: the installer refers only to `L` and JavaScript
 * built-ins (see core.ts). Positions are 1-based and count UTF-16 code units, as JavaScript and
 * .NET strings do.
 */
import type { FormulaLibrary, FValue } from './types.js';

// eslint-disable-next-line max-lines-per-function -- shipped as source text into the isolate; it cannot call helpers outside its body
export function installText(L: FormulaLibrary): void {
  const { text, int, fail, checkText, show } = L;
  const F = L.fn;

  const count = (v: FValue, fn: string, what = 'count'): number => {
    const n = int(v);
    return n < 0 ? fail('FML_INVALID_ARGUMENT', `${fn}: ${what} must not be negative (it is ${n})`) : n;
  };
  const tooLong = (fn: string, length: number): never =>
    fail(
      'FML_TEXT_TOO_LONG',
      `${fn}: the text would be ${length} characters long, more than the limit of ${L.maxText}`,
    );
  /** Fails when a text of `length` would pass the limit: called before the text is built wherever its length is known ahead. */
  const fits = (fn: string, length: number): void => {
    if (length > L.maxText) tooLong(fn, length);
  };
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
        return fail(
          'FML_INVALID_ARGUMENT',
          `${fn}: ${show(pattern)} is not a valid regular expression (${e instanceof Error ? e.message : String(e)})`,
        );
      }
      if (regexCache.size >= 500) regexCache.clear();
      regexCache.set(key, re);
    }
    re.lastIndex = 0;
    return re;
  };
  const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

  // Every function that answers text checks the length of its answer: before building it where
  // the length is known ahead (so an over-long text is never allocated), else right after. A text
  // can reach a function over the limit (a long field), so even those that never lengthen check.
  F.CONCATENATE = (...parts: FValue[]): string => {
    const texts = parts.map(text);
    fits(
      'CONCATENATE',
      texts.reduce((n, s) => n + s.length, 0),
    );
    return texts.join('');
  };
  F.LEFT = (t: FValue, n: FValue): string => checkText(text(t).slice(0, count(n, 'LEFT')), 'LEFT');
  F.RIGHT = (t: FValue, n: FValue): string => {
    const s = text(t);
    const c = count(n, 'RIGHT');
    return c === 0 ? '' : checkText(s.slice(Math.max(0, s.length - c)), 'RIGHT');
  };
  F.MID = (t: FValue, start: FValue, n: FValue): string => {
    const from = position(start, 'MID') - 1;
    return checkText(text(t).slice(from, from + count(n, 'MID')), 'MID');
  };
  F.LEN = (t: FValue): number => text(t).length;
  // Case mapping can lengthen a text (ß → SS), at most threefold.
  F.UPPER = (t: FValue): string => checkText(text(t).toUpperCase(), 'UPPER');
  F.LOWER = (t: FValue): string => checkText(text(t).toLowerCase(), 'LOWER');
  const LETTER = /\p{L}/u;
  F.PROPER = (t: FValue): string => {
    let out = '';
    let inWord = false;
    for (const ch of text(t)) {
      const letter = LETTER.test(ch);
      out += letter ? (inWord ? ch.toLowerCase() : ch.toUpperCase()) : ch;
      inWord = letter;
    }
    return checkText(out, 'PROPER');
  };
  F.TRIM = (t: FValue): string => checkText(text(t).trim(), 'TRIM');
  F.TRIMLEFT = (t: FValue): string => checkText(text(t).trimStart(), 'TRIMLEFT');
  F.TRIMRIGHT = (t: FValue): string => checkText(text(t).trimEnd(), 'TRIMRIGHT');
  F.REPLACE = (t: FValue, start: FValue, n: FValue, replacement: FValue): string => {
    const s = text(t);
    const from = position(start, 'REPLACE') - 1;
    const c = count(n, 'REPLACE');
    const r = text(replacement);
    const head = Math.min(from, s.length);
    fits('REPLACE', head + r.length + Math.max(0, s.length - from - c));
    return s.slice(0, from) + r + s.slice(from + c);
  };
  F.SUBSTITUTE = (t: FValue, oldText: FValue, newText: FValue, instance?: FValue): string => {
    const s = text(t);
    const from = text(oldText);
    const to = text(newText);
    if (from === '') return s;
    if (instance === undefined) {
      // Counted first, without splitting the text into an array of pieces.
      let found = 0;
      for (let at = s.indexOf(from); at >= 0; at = s.indexOf(from, at + from.length)) found++;
      fits('SUBSTITUTE', s.length + found * (to.length - from.length));
      return found === 0 ? s : s.split(from).join(to);
    }
    const nth = position(instance, 'SUBSTITUTE', 'instance');
    let at = -1;
    for (let i = 0; i < nth; i++) {
      at = s.indexOf(from, at + (i === 0 ? 0 : from.length));
      if (at < 0) return checkText(s, 'SUBSTITUTE');
    }
    fits('SUBSTITUTE', s.length - from.length + to.length);
    return s.slice(0, at) + to + s.slice(at + from.length);
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
    if (n <= s.length || with_ === '') return checkText(s, fn);
    fits(fn, n);
    return left ? s.padStart(n, with_) : s.padEnd(n, with_);
  };
  F.PADLEFT = (t: FValue, length: FValue, padChar?: FValue): string => pad('PADLEFT', t, length, padChar, true);
  F.PADRIGHT = (t: FValue, length: FValue, padChar?: FValue): string => pad('PADRIGHT', t, length, padChar, false);
  F.STARTSWITH = (t: FValue, prefix: FValue): boolean => text(t).startsWith(text(prefix));
  F.ENDSWITH = (t: FValue, suffix: FValue): boolean => text(t).endsWith(text(suffix));
  F.CONTAINS = (t: FValue, part: FValue): boolean => text(t).includes(text(part));
  F.REVERSE = (t: FValue): string => {
    const s = checkText(text(t), 'REVERSE');
    return Array.from(s).reverse().join('');
  };
  F.REPEAT = (t: FValue, n: FValue): string => {
    const s = text(t);
    const c = count(n, 'REPEAT');
    fits('REPEAT', s.length * c);
    return s.repeat(c);
  };
  F.STRIPCHARS = (t: FValue, chars: FValue): string => {
    const strip = new Set(Array.from(text(chars)));
    let out = '';
    for (const ch of text(t)) if (!strip.has(ch)) out += ch;
    return checkText(out, 'STRIPCHARS');
  };
  F.EXACT = (a: FValue, b: FValue): boolean => text(a) === text(b);
  F.CHAR = (code: FValue): string => {
    const c = int(code);
    return c < 0 || c > 0x10ffff
      ? fail('FML_INVALID_ARGUMENT', `CHAR: ${c} is not a Unicode code point (0 to 1114111)`)
      : checkText(String.fromCodePoint(c), 'CHAR');
  };
  F.CODE = (t: FValue): number => {
    const s = text(t);
    return s === '' ? fail('FML_INVALID_ARGUMENT', 'CODE: the text is empty') : (s.codePointAt(0) as number);
  };
  // eslint-disable-next-line no-control-regex -- removing control characters is the point
  const CONTROL = /[\u0000-\u001f\u007f]/g;
  F.CLEAN = (t: FValue): string => checkText(text(t).replace(CONTROL, ''), 'CLEAN');
  F.TEXTJOIN = (delimiter: FValue, ignoreEmpty: FValue, ...parts: FValue[]): string => {
    const d = text(delimiter);
    const skip = L.bool(ignoreEmpty);
    const kept: string[] = [];
    let length = 0;
    for (const p of parts) {
      const s = text(p);
      if (skip && s === '') continue;
      length += (kept.length === 0 ? 0 : d.length) + s.length;
      kept.push(s);
      fits('TEXTJOIN', length);
    }
    return kept.join(d);
  };
  F.SPLITPART = (t: FValue, delimiter: FValue, index: FValue): string => {
    const s = text(t);
    const d = text(delimiter);
    const i = int(index);
    if (i === 0)
      return fail('FML_INVALID_ARGUMENT', 'SPLITPART: index counts from 1 (or from -1 at the end); it cannot be 0');
    const parts = d === '' ? [s] : s.split(d);
    const part = i > 0 ? parts[i - 1] : parts[parts.length + i];
    return checkText(part ?? '', 'SPLITPART');
  };
  F.REGEXMATCH = (t: FValue, pattern: FValue): boolean => regex(text(pattern), '', 'REGEXMATCH').test(text(t));
  F.REGEXREPLACE = (t: FValue, pattern: FValue, replacement: FValue): string => {
    const s = text(t);
    const re = regex(text(pattern), 'g', 'REGEXREPLACE');
    return checkText(replaceCounted(s, re, text(replacement), 'REGEXREPLACE'), 'REGEXREPLACE');
  };
  F.REGEXEXTRACT = (t: FValue, pattern: FValue, group?: FValue): string | null => {
    const re = regex(text(pattern), '', 'REGEXEXTRACT');
    const m = re.exec(text(t));
    if (m === null) return null;
    const g = group === undefined ? 0 : count(group, 'REGEXEXTRACT', 'group');
    if (g >= m.length)
      return fail('FML_INVALID_ARGUMENT', `REGEXEXTRACT: the pattern has no group ${g} (it has ${m.length - 1})`);
    const found = m[g];
    return found === undefined ? null : checkText(found, 'REGEXEXTRACT');
  };
  F.URLENCODE = (t: FValue): string => {
    const s = text(t);
    // One UTF-16 unit becomes up to 9 characters (%XX%XX%XX): count them first when that could pass the limit.
    if (s.length * 9 > L.maxText) fits('URLENCODE', urlEncodedLength(s));
    try {
      return encodeURIComponent(s);
    } catch (e) {
      if (L.isFailure(e)) throw e;
      return fail(
        'FML_INVALID_ARGUMENT',
        'URLENCODE: the text holds a broken surrogate pair and cannot be encoded as UTF-8',
      );
    }
  };
  F.URLDECODE = (t: FValue): string => {
    const s = text(t);
    try {
      return checkText(decodeURIComponent(s), 'URLDECODE');
    } catch (e) {
      if (L.isFailure(e)) throw e;
      return fail('FML_INVALID_ARGUMENT', `URLDECODE: ${show(s)} holds a malformed percent-encoded sequence`);
    }
  };
  const HTML: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };
  F.HTMLENCODE = (t: FValue): string => {
    const s = text(t);
    let length = s.length;
    return checkText(
      s.replace(/[&<>"']/g, (c) => {
        const entity = HTML[c] ?? c;
        length += entity.length - 1;
        fits('HTMLENCODE', length);
        return entity;
      }),
      'HTMLENCODE',
    );
  };

  const UNRESERVED = /[A-Za-z0-9\-_.!~*'()]/;
  /** The length of encodeURIComponent(s), without building it. */
  const urlEncodedLength = (s: string): number => {
    let n = 0;
    for (let i = 0; i < s.length; i++) {
      const c = s.charCodeAt(i);
      if (c < 0x80) n += UNRESERVED.test(s.charAt(i)) ? 1 : 3;
      else if (c < 0x800) n += 6;
      else if (c >= 0xd800 && c <= 0xdbff)
        n += 6; // half of a pair's four UTF-8 bytes, 12 characters
      else if (c >= 0xdc00 && c <= 0xdfff) n += 6;
      else n += 9;
    }
    return n;
  };

  /**
   * One piece of a REGEXREPLACE replacement: literal text, or what a `$` pattern stands for — a
   * capture group (by number or name), the match (`$&`), the text before it (`` $` ``) or after it (`$'`).
   */
  type Piece = string | { group: number } | { name: string } | { ref: 'match' | 'before' | 'after' };

  /** Reads a replacement's `$` patterns as String.prototype.replace does (GetSubstitution), for a pattern with `groups` capture groups. */
  const parseReplacement = (r: string, groups: number, named: boolean): Piece[] => {
    const pieces: Piece[] = [];
    let literal = '';
    const flush = (): void => {
      if (literal !== '') pieces.push(literal);
      literal = '';
    };
    const digit = (c: string): boolean => c >= '0' && c <= '9';
    let i = 0;
    while (i < r.length) {
      const dollar = r.indexOf('$', i);
      if (dollar !== i) {
        // Literal text up to the next `$`, in one piece.
        literal += dollar < 0 ? r.slice(i) : r.slice(i, dollar);
        i = dollar < 0 ? r.length : dollar;
        continue;
      }
      const next = r.charAt(i + 1);
      if (i + 1 >= r.length) {
        literal += '$';
        i += 1;
      } else if (next === '$') {
        literal += '$';
        i += 2;
      } else if (next === '&' || next === '`' || next === "'") {
        flush();
        pieces.push({ ref: next === '&' ? 'match' : next === '`' ? 'before' : 'after' });
        i += 2;
      } else if (digit(next)) {
        let width = digit(r.charAt(i + 2)) ? 2 : 1;
        let index = Number(r.slice(i + 1, i + 1 + width));
        if (index > groups && width === 2) {
          width = 1;
          index = Number(next);
        }
        if (index >= 1 && index <= groups) {
          flush();
          pieces.push({ group: index });
        } else {
          literal += r.slice(i, i + 1 + width);
        }
        i += 1 + width;
      } else if (next === '<' && named && r.indexOf('>', i + 2) >= 0) {
        const end = r.indexOf('>', i + 2);
        flush();
        pieces.push({ name: r.slice(i + 2, end) });
        i = end + 1;
      } else {
        literal += '$';
        i += 1;
      }
    }
    flush();
    return pieces;
  };

  /**
   * `s.replace(re, replacement)` for a global pattern, failing with FML_TEXT_TOO_LONG before an
   * over-long result is built. V8 would build it up to its own longest string ("Invalid string
   * length") or the isolate's memory limit, and a replacement function would not help: the
   * language collects every match before calling it. When the result cannot pass the limit
   * whatever matches (the usual short text), V8 replaces at once; otherwise the matches are
   * walked first, adding up the length of the text built so far, and V8 replaces only when the
   * whole result fits.
   */
  const replaceCounted = (s: string, re: RegExp, replacement: string, fn: string): string => {
    // At most s.length + 1 matches, each replaced by the literal text and, per `$`, at most all of s.
    const dollars = replacement.split('$').length - 1;
    if (s.length + (s.length + 1) * (replacement.length + dollars * s.length) <= L.maxText)
      return s.replace(re, replacement);
    let pieces: Piece[] | undefined;
    let built = 0;
    let end = 0;
    re.lastIndex = 0;
    for (let m = re.exec(s); m !== null; m = re.exec(s)) {
      const match = m[0];
      pieces ??= parseReplacement(replacement, m.length - 1, m.groups !== undefined);
      let added = 0;
      for (const p of pieces) {
        if (typeof p === 'string') added += p.length;
        else if ('ref' in p)
          added += p.ref === 'match' ? match.length : p.ref === 'before' ? m.index : s.length - m.index - match.length;
        else added += ('group' in p ? m[p.group] : m.groups?.[p.name])?.length ?? 0;
      }
      built += m.index - end + added;
      fits(fn, built);
      end = m.index + match.length;
      if (match === '') re.lastIndex += 1;
    }
    fits(fn, built + s.length - end);
    re.lastIndex = 0;
    return s.replace(re, replacement);
  };
}
