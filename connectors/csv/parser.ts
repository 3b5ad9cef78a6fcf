/**
 * A streaming RFC 4180 parser with a fast path. Most lines of most files have no quote character:
 * such a line is found with two native string scans (newline, quote) and handed to the sink as it
 * is, which cuts it at the delimiter (by default with `split`; the query's sink types its fields
 * in place, records.ts). A line with a quote goes through the full state machine, which handles
 * quoted delimiters, doubled quotes and newlines inside quotes.
 *
 * A field is a string, or null when it was empty and unquoted (`a,,b`); a quoted empty field
 * (`a,"",b`) is the empty string. `\r\n` and `\n` both end a record.
 */
export type CsvField = string | null;
export type CsvRow = CsvField[];

/** What the parser makes of records: `line` for a line without quotes, `row` for the fields of any other. */
export interface CsvSink<T> {
  /** A non-empty line without quotes: `buf` from `start` to `end` (without its line break). */
  line(buf: string, start: number, end: number, out: T[]): void;
  row(fields: CsvRow, out: T[]): void;
  /**
   * Optional: a record with quotes whose fields are all plain spans of `buf` — each quoted field
   * without a doubled quote or text after its closing quote — as spans instead of strings: field
   * k is `buf` from `starts[k]` to `ends[k]`, `quoted[k]` 1 when it was quoted (so empty is the
   * empty string, not null). Any other record with quotes goes to `row`.
   */
  spans?(
    buf: string,
    starts: readonly number[],
    ends: readonly number[],
    quoted: readonly number[],
    count: number,
    out: T[],
  ): void;
}

/**
 * The parser. The class refers to nothing outside its own body (not even its own name): the scan
 * thread runs it from its source text (thread.ts).
 */
export class CsvParser<T = CsvRow> {
  private buf = '';
  private readonly delim: string;
  private readonly quote: string;
  private readonly sink: CsvSink<T>;
  /** Records parsed so far (for messages that name a record). */
  rows = 0;
  // The field spans of a record for the sink's `spans`, reused from record to record.
  private readonly starts: number[] = [];
  private readonly ends: number[] = [];
  private readonly quoted: number[] = [];

  constructor(delimiter = ',', quote = '"', sink?: CsvSink<T>) {
    if (delimiter.length !== 1 || quote.length !== 1) throw new Error('delimiter and quote are one character each');
    this.delim = delimiter;
    this.quote = quote;
    this.sink = sink ?? (this.rowSink(delimiter) as unknown as CsvSink<T>);
  }

  /** The default sink: rows as arrays of fields. */
  private rowSink(delimiter: string): CsvSink<CsvRow> {
    return {
      line(buf, start, end, out) {
        const fields: CsvRow = buf.slice(start, end).split(delimiter);
        for (let i = 0; i < fields.length; i++) if (fields[i] === '') fields[i] = null;
        out.push(fields);
      },
      row(fields, out) {
        out.push(fields);
      },
    };
  }

  /** Parses what `text` completes; records are pushed into `out`. */
  push(text: string, out: T[]): void {
    // Joined, not `+`: a concatenation is a rope, whose characters V8 reads about twice as slowly
    // (measured on a 110 MB file in 1 MiB chunks: 0.72 s against 0.44 s a million records).
    const buf = this.buf.length ? [this.buf, text].join('') : text;
    const end = this.scan(buf, out, false);
    this.buf = end < buf.length ? buf.slice(end) : '';
  }

  /** Parses the rest (a last record without a newline). */
  end(out: T[]): void {
    if (this.buf.length) {
      const buf = this.buf;
      this.buf = '';
      this.scan(buf, out, true);
    }
  }

  private scan(buf: string, out: T[], final: boolean): number {
    const sink = this.sink;
    let pos = 0;
    let q = buf.indexOf(this.quote);
    for (;;) {
      let nl = buf.indexOf('\n', pos);
      if (nl < 0) {
        if (!final || pos >= buf.length) return pos;
        nl = buf.length;
      }
      if (q >= 0 && q < pos) q = buf.indexOf(this.quote, pos);
      if (q < 0 || q > nl) {
        // Fast path: no quote in this line.
        const lineEnd = nl > pos && buf.charCodeAt(nl - 1) === 13 ? nl - 1 : nl;
        if (lineEnd > pos) {
          sink.line(buf, pos, lineEnd, out);
          this.rows++;
        }
        pos = nl + 1;
        if (pos >= buf.length) return buf.length;
        continue;
      }
      let next = sink.spans ? this.spanned(buf, pos, out, final) : -2;
      if (next === -2) next = this.slow(buf, pos, out, final);
      if (next < 0) return pos;
      pos = next;
      if (pos >= buf.length) return buf.length;
    }
  }

  /**
   * One record with quotes starting at `start` as field spans (the sink's `spans`): the position
   * after it, -1 if the record is incomplete, or -2 when a field needs a string made (a doubled
   * quote, text after a closing quote, a quote inside an unquoted field, the end of the input).
   */
  private spanned(buf: string, start: number, out: T[], final: boolean): number {
    const q = this.quote.charCodeAt(0);
    const d = this.delim.charCodeAt(0);
    // Characters above all four that end or quote a field need one comparison each.
    const high = Math.max(q, d, 13);
    const { starts, ends, quoted } = this;
    const n = buf.length;
    const more = final ? -2 : -1;
    let i = start;
    let count = 0;
    for (;;) {
      if (i < n && buf.charCodeAt(i) === q) {
        const close = buf.indexOf(this.quote, i + 1);
        if (close < 0 || close + 1 >= n) return more;
        const after = buf.charCodeAt(close + 1);
        if (after !== d && after !== 10 && after !== 13) return -2;
        starts[count] = i + 1;
        ends[count] = close;
        quoted[count++] = 1;
        i = close + 1;
      } else {
        let j = i;
        for (; j < n; j++) {
          const c = buf.charCodeAt(j);
          if (c > high) continue;
          if (c === d || c === 10 || c === 13) break;
          if (c === q) return -2;
        }
        if (j >= n) return more;
        starts[count] = i;
        ends[count] = j;
        quoted[count++] = 0;
        i = j;
      }
      const c = buf.charCodeAt(i);
      if (c === d) {
        i++;
        if (i >= n) return more;
        continue;
      }
      // End of record: \n, \r\n or a lone \r.
      if (c === 13) {
        if (i + 1 >= n) return more;
        i += buf.charCodeAt(i + 1) === 10 ? 2 : 1;
      } else i++;
      (this.sink.spans as NonNullable<CsvSink<T>['spans']>)(buf, starts, ends, quoted, count, out);
      this.rows++;
      return i;
    }
  }

  /** The state machine for one record starting at `start`; returns the position after it, or -1 if the record is incomplete. */
  private slow(buf: string, start: number, out: T[], final: boolean): number {
    const quote = this.quote;
    const delim = this.delim;
    const fields: CsvRow = [];
    let i = start;
    const n = buf.length;
    for (;;) {
      // At the start of a field.
      if (i < n && buf[i] === quote) {
        let value = '';
        let from = i + 1;
        for (;;) {
          const close = buf.indexOf(quote, from);
          if (close < 0) {
            if (!final) return -1;
            // Unterminated quote at end of input: take the rest as the value.
            value += buf.slice(from);
            i = n;
            break;
          }
          if (close + 1 < n && buf[close + 1] === quote) {
            value += buf.slice(from, close + 1);
            from = close + 2;
            continue;
          }
          if (close + 1 >= n && !final) return -1;
          value += buf.slice(from, close);
          i = close + 1;
          break;
        }
        // Text after the closing quote up to the delimiter is kept (lenient, like most readers).
        let j = i;
        while (j < n && buf[j] !== delim && buf[j] !== '\n' && buf[j] !== '\r') j++;
        if (j > i) value += buf.slice(i, j);
        i = j;
        fields.push(value);
      } else {
        let j = i;
        while (j < n && buf[j] !== delim && buf[j] !== '\n' && buf[j] !== '\r' && buf[j] !== quote) j++;
        if (j < n && buf[j] === quote) {
          // A quote inside an unquoted field is a literal character.
          let k = j;
          while (k < n && buf[k] !== delim && buf[k] !== '\n' && buf[k] !== '\r') k++;
          j = k;
        }
        if (j >= n && !final) return -1;
        fields.push(j > i ? buf.slice(i, j) : null);
        i = j;
      }
      if (i >= n) {
        if (!final) return -1;
        this.sink.row(fields, out);
        this.rows++;
        return n;
      }
      const c = buf[i];
      if (c === delim) {
        i++;
        if (i >= n && !final) return -1;
        if (i >= n) {
          fields.push(null);
          this.sink.row(fields, out);
          this.rows++;
          return n;
        }
        continue;
      }
      // End of record: \n, \r\n or a lone \r.
      if (c === '\r') {
        if (i + 1 >= n && !final) return -1;
        i += buf[i + 1] === '\n' ? 2 : 1;
      } else i++;
      this.sink.row(fields, out);
      this.rows++;
      return i;
    }
  }
}

/**
 * Formats one field for a CSV line: null as nothing, the empty string as `""`, and a text with the
 * delimiter, a quote, a line break or edge spaces quoted with doubled quotes.
 */
export function formatField(v: string | number | boolean | null, delim: string, quote = '"'): string {
  if (v === null) return '';
  if (typeof v !== 'string') return String(v);
  if (v === '') return quote + quote;
  if (
    v.includes(delim) ||
    v.includes(quote) ||
    v.includes('\n') ||
    v.includes('\r') ||
    v.charCodeAt(0) === 32 ||
    v.charCodeAt(v.length - 1) === 32
  ) {
    return quote + v.split(quote).join(quote + quote) + quote;
  }
  return v;
}

/** One CSV line (with its `\n`). */
export function formatRow(values: readonly (string | number | boolean | null)[], delim: string): string {
  let s = '';
  for (let i = 0; i < values.length; i++) {
    if (i) s += delim;
    s += formatField(values[i] ?? null, delim);
  }
  return `${s}\n`;
}
