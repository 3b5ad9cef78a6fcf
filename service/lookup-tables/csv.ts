import { CsvError, parse, type Options } from 'csv-parse/sync';
import { FerryError } from '../../src/errors/ferry-error.js';
import type { LookupPair } from '../../src/maps/lookup/lookup-set.js';
import { MAX_VALUE_LENGTH } from './values.js';

/**
 * The CSV of Lookup Table imports and exports: two fields per record, value1 and value2, RFC 4180
 * quoting (a field with a comma, quote or line break is quoted, quotes doubled). Exports use CRLF;
 * imports take CRLF, LF or CR, skip empty lines and a UTF-8 byte-order mark.
 */
export const CSV_HEADER = 'value1,value2\r\n';

/** A record longer than this is refused before it is buffered further (a runaway quote). */
const MAX_RECORD_BYTES = 64 * 1024;

const PARSE_OPTIONS = {
  bom: true,
  relax_column_count: true,
  skip_empty_lines: true,
  record_delimiter: ['\r\n', '\n', '\r'],
  max_record_size: MAX_RECORD_BYTES,
} satisfies Options;

const invalidAt = (line: number | undefined, problem: string): FerryError =>
  new FerryError(
    'API_INVALID_CSV',
    line === undefined
      ? `The CSV text is not valid: ${problem}`
      : `Line ${line} of the CSV text: ${problem} Nothing was imported.`,
    {
      errors: [{ path: line === undefined ? 'body' : `body.line.${line}`, message: problem }],
    },
  );

/** What is wrong with a record, or undefined. */
function problemOf(record: readonly string[]): string | undefined {
  if (record.length !== 2)
    return `it has ${record.length} field${record.length === 1 ? '' : 's'}; each line needs exactly 2: value1,value2.`;
  const [value1 = '', value2 = ''] = record;
  if (value1 === '') return 'value1 is empty; only value2 may be empty.';
  if (value1.length > MAX_VALUE_LENGTH) return `value1 is longer than ${MAX_VALUE_LENGTH} characters.`;
  if (value2.length > MAX_VALUE_LENGTH) return `value2 is longer than ${MAX_VALUE_LENGTH} characters.`;
  return undefined;
}

/**
 * The line (from 1) where a record starts: the record with this index, or (no index) the record
 * the parser fails on. Computed only for an error, by a second pass: asking the parser for line
 * numbers makes it several times slower, and its own error line is where it gave up (for a quote
 * left open, the end of the text), not where the record began.
 */
function startLine(text: string, index?: number): number | undefined {
  let previousEnd = 0;
  let previousEmpty = 0;
  const found = new Error('found');
  let line: number | undefined;
  try {
    parse(text, {
      ...PARSE_OPTIONS,
      on_record: (record: string[], context) => {
        if (context.records === (index ?? -1) + 1) {
          // After the previous record and the empty lines skipped since.
          line = previousEnd + 1 + (context.empty_lines - previousEmpty);
          throw found;
        }
        previousEnd = context.lines;
        previousEmpty = context.empty_lines;
        return record;
      },
    });
  } catch (err) {
    if (err === found) return line;
    if (!(err instanceof CsvError)) throw err;
    const empty = (err as CsvError & { empty_lines?: unknown }).empty_lines;
    return previousEnd + 1 + (typeof empty === 'number' ? empty - previousEmpty : 0);
  }
  return undefined;
}

/**
 * Reads the comma-separated text of an import into pairs, all or nothing: the first record that
 * cannot be read, has other than two fields, an empty value1 or a value over 400 characters is an
 * API_INVALID_CSV error naming its line.
 */
export function parseLookupCsv(text: string, hasHeaderRow: boolean): LookupPair[] {
  let records: string[][];
  try {
    records = parse(text, PARSE_OPTIONS);
  } catch (err) {
    if (err instanceof CsvError)
      throw invalidAt(startLine(text) ?? (typeof err.lines === 'number' ? err.lines : undefined), `${err.message}.`);
    throw err;
  }
  const pairs: LookupPair[] = [];
  for (let i = hasHeaderRow ? 1 : 0; i < records.length; i++) {
    const record = records[i] ?? [];
    const problem = problemOf(record);
    if (problem) throw invalidAt(startLine(text, i), problem);
    pairs.push({ value1: record[0] ?? '', value2: record[1] ?? '' });
  }
  return pairs;
}

/** Bytes of text handed to the parser at a time, cut at a record boundary. */
const SLICE_CHARS = 16 * 1024;

/**
 * Where the text can be cut so that both parts parse as they would together: just after the last
 * line break outside quotes, or -1. Under RFC 4180 every double quote toggles "inside quotes"
 * (a doubled quote toggles twice), so outside is where the count of quotes from `start` is even.
 * A CR as the last character is not taken: an LF may follow it in the next chunk. On malformed
 * text the parser fails inside the slice, at the same record as it would on the whole text.
 */
function lastBoundary(text: string): number {
  let inside = false;
  let cut = -1;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 34) inside = !inside;
    else if (!inside && (c === 10 || (c === 13 && i + 1 < text.length && text.charCodeAt(i + 1) !== 10))) cut = i + 1;
  }
  return cut;
}

/** Line breaks in a text as the parser counts them: CRLF, LF and CR each end one line. */
function lineBreaks(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 10 || (c === 13 && text.charCodeAt(i + 1) !== 10)) n++;
  }
  return n;
}

/**
 * Reads the comma-separated text of an import from a stream of text chunks into batches of at most
 * `batchSize` pairs, with the rules and errors of {@link parseLookupCsv}. The text is parsed a
 * slice of about 16 KiB at a time, cut at a record boundary, so memory holds one slice and one
 * batch whatever the size of the import, and the caller can yield to the event loop between
 * batches. An error names the line in the whole text; batches already handed out must then be
 * discarded by the caller (the import writes them in a transaction it rolls back).
 */
export async function* readLookupCsv(
  chunks: AsyncIterable<string>,
  hasHeaderRow: boolean,
  batchSize: number,
): AsyncGenerator<LookupPair[]> {
  let pending = '';
  let linesBefore = 0;
  let first = true;
  let skipHeader = hasHeaderRow;
  let batch: LookupPair[] = [];

  const parseSlice = (slice: string): LookupPair[] => {
    const options = first ? PARSE_OPTIONS : { ...PARSE_OPTIONS, bom: false };
    first = false;
    let records: string[][];
    try {
      records = parse(slice, options);
    } catch (err) {
      if (err instanceof CsvError)
        throw invalidAt(
          linesBefore + (startLine(slice) ?? (typeof err.lines === 'number' ? err.lines : 0)),
          `${err.message}.`,
        );
      throw err;
    }
    const pairs: LookupPair[] = [];
    for (let i = 0; i < records.length; i++) {
      if (skipHeader) {
        skipHeader = false;
        continue;
      }
      const record = records[i] ?? [];
      const problem = problemOf(record);
      if (problem) throw invalidAt(linesBefore + (startLine(slice, i) ?? 0), problem);
      pairs.push({ value1: record[0] ?? '', value2: record[1] ?? '' });
    }
    linesBefore += lineBreaks(slice);
    return pairs;
  };

  const take = function* (pairs: LookupPair[]): Generator<LookupPair[]> {
    for (const pair of pairs) {
      batch.push(pair);
      if (batch.length >= batchSize) {
        yield batch;
        batch = [];
      }
    }
  };

  for await (const chunk of chunks) {
    pending += chunk;
    while (pending.length >= SLICE_CHARS) {
      const window = pending.slice(0, SLICE_CHARS * 2);
      const cut = lastBoundary(window);
      if (cut < 0) {
        if (pending.length < SLICE_CHARS * 2) break;
        // No record boundary in twice a slice: a record is over the size limit or a quote is left
        // open, and the parser says which, at the line where that record starts.
        parseSlice(window);
        throw invalidAt(linesBefore + 1, `a record is longer than ${MAX_RECORD_BYTES} characters.`);
      }
      pending = pending.slice(cut);
      yield* take(parseSlice(window.slice(0, cut)));
    }
  }
  if (pending.length > 0) yield* take(parseSlice(pending));
  if (batch.length > 0) yield batch;
}

/** A field as RFC 4180 writes it: quoted when it holds a comma, a quote or a line break, quotes doubled. */
function csvField(value: string): string {
  return /[",\r\n]/.test(value) ? `"${value.replaceAll('"', '""')}"` : value;
}

/** CSV records of pairs, each ending in CRLF. */
export function csvRecords(pairs: readonly LookupPair[]): string {
  let out = '';
  for (const p of pairs) out += `${csvField(p.value1)},${csvField(p.value2)}\r\n`;
  return out;
}
