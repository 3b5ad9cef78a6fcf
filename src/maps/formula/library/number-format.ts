/**
 * FORMAT(number, format): numeric formats as spreadsheets write them. Runs INSIDE the sandbox: the
 * installer refers only to `L` and JavaScript built-ins (see core.ts).
 *
 * `0` a digit always shown, `#` a digit shown when significant, `.` the decimal point, `,` between
 * digit places groups thousands, `%` multiplies by 100; other characters are copied (inside the
 * whole-number digits too: FORMAT(5551234, "000-0000") is "555-1234"). The last shown digit is
 * rounded half away from zero on the decimal value as written.
 */
import type { FormulaLibrary, FValue } from './types.js';

export function installNumberFormat(L: FormulaLibrary): void {
  const { num, text, shift, numText } = L;

  const group = (digits: string): string => digits.replace(/\B(?=([0-9]{3})+(?![0-9]))/g, ',');

  /** Places whole-number digits into a pattern with literal characters, right to left. */
  const placeDigits = (pattern: string, digits: string): string => {
    let out = '';
    let d = digits.length - 1;
    const firstPlaceholder = pattern.search(/[0#]/);
    for (let i = pattern.length - 1; i >= 0; i--) {
      const c = pattern.charAt(i);
      if (c === '0' || c === '#') {
        if (d >= 0) out = digits.charAt(d--) + out;
        else if (c === '0') out = `0${out}`;
        if (i === firstPlaceholder && d >= 0) out = digits.slice(0, d + 1) + out;
      } else if (c !== ',') {
        out = c + out;
      }
    }
    return out;
  };

  L.fn.FORMAT = (v: FValue, f: FValue): string => {
    let n = num(v);
    const format = text(f);
    let first = format.search(/[0#]/);
    if (first < 0) return L.checkText(format, 'FORMAT');
    if (format.charAt(first - 1) === '.') first -= 1;
    const last = Math.max(format.lastIndexOf('0'), format.lastIndexOf('#'));
    const prefix = format.slice(0, first);
    const suffix = format.slice(last + 1);
    const core = format.slice(first, last + 1);
    if ((prefix + suffix).includes('%')) n = shift(n, 2);
    const dot = core.indexOf('.');
    const intPattern = dot < 0 ? core : core.slice(0, dot);
    const fracPattern = dot < 0 ? '' : core.slice(dot + 1).replace(/[^0#]/g, '');
    const minFrac = fracPattern.replace(/#/g, '').length;
    const maxFrac = fracPattern.length;

    const shifted = shift(Math.abs(n), maxFrac);
    const floor = Math.floor(shifted);
    const rounded = shifted - floor >= 0.5 ? floor + 1 : floor;
    const digits = numText(rounded);
    let whole = digits.length > maxFrac ? digits.slice(0, digits.length - maxFrac) : '0';
    let frac = maxFrac > 0 ? digits.padStart(maxFrac, '0').slice(-maxFrac) : '';
    while (frac.length > minFrac && frac.endsWith('0')) frac = frac.slice(0, -1);

    const minInt = intPattern.replace(/[^0]/g, '').length;
    if (whole === '0' && minInt === 0) whole = '';
    let wholeText: string;
    if (/^[0#,]*$/.test(intPattern)) {
      whole = whole.padStart(minInt, '0');
      wholeText = intPattern.includes(',') ? group(whole) : whole;
    } else {
      wholeText = placeDigits(intPattern, whole);
    }
    const negative = n < 0 && rounded !== 0;
    return L.checkText(
      `${negative ? '-' : ''}${prefix}${wholeText}${frac === '' ? '' : `.${frac}`}${suffix}`,
      'FORMAT',
    );
  };
}
