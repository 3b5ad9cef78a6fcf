/** Readers of a cell's characters where the cell lies in a larger text: no substring, no regular expression. */
export interface CellReaders {
  /**
   * A whole number or a plain decimal (`-?digits[.digits]`, at most 15 digits) read from the
   * characters of `buf` from `start` to `end`; NaN when the text has another form. Exact: the
   * digits make an integer below 2^53 and 10^k is exact, so the one division rounds correctly, as
   * Number() does.
   */
  plainNumber: (buf: string, start: number, end: number, fraction: boolean) => number;
  /** The text is `-?digits[.digits]`: a canonical decimal. */
  isPlainDecimal: (buf: string, start: number, end: number) => boolean;
  equalsAt: (buf: string, start: number, end: number, word: string) => boolean;
}

/**
 * The cell readers of the query's fast path (records.ts) and of the scan thread (scanner.ts), so
 * that both type a cell the same way. The factory refers to nothing outside its own body: the
 * thread runs it from its source text.
 */
export function cellReaders(): CellReaders {
  const POW10 = [1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15];
  return {
    plainNumber: (buf, start, end, fraction) => {
      let i = start;
      const neg = buf.charCodeAt(i) === 45;
      if (neg) i++;
      if (i >= end || end - i > 16) return NaN;
      let m = 0;
      let scale = 0;
      let digits = 0;
      for (; i < end; i++) {
        const c = buf.charCodeAt(i);
        if (c >= 48 && c <= 57) {
          m = m * 10 + (c - 48);
          digits++;
          if (scale > 0) scale++;
        } else if (c === 46 && fraction && scale === 0 && digits > 0 && i + 1 < end) scale = 1;
        else return NaN;
      }
      if (digits > 15) return NaN;
      const v = scale > 1 ? m / (POW10[scale - 1] as number) : m;
      return neg ? -v : v;
    },
    isPlainDecimal: (buf, start, end) => {
      let i = start;
      if (buf.charCodeAt(i) === 45) i++;
      let digits = 0;
      let dot = false;
      for (; i < end; i++) {
        const c = buf.charCodeAt(i);
        if (c >= 48 && c <= 57) digits++;
        else if (c === 46 && !dot && digits > 0 && i + 1 < end) dot = true;
        else return false;
      }
      return digits > 0;
    },
    equalsAt: (buf, start, end, word) => {
      if (end - start !== word.length) return false;
      for (let i = 0; i < word.length; i++) if (buf.charCodeAt(start + i) !== word.charCodeAt(i)) return false;
      return true;
    },
  };
}
