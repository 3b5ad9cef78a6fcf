import { CsvError, parse, type Options } from 'csv-parse/sync';
import { FerryError } from '../../src/errors/ferry-error.js';
import type { LookupPair } from '../../src/maps/lookup/lookup-set.js';
import { MAX_VALUE_LENGTH } from './schemas/lookup-table.schema.js';

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
  new FerryError('API_INVALID_CSV', line === undefined ? `The CSV text is not valid: ${problem}` : `Line ${line} of the CSV text: ${problem} Nothing was imported.`, {
    errors: [{ path: line === undefined ? 'body' : `body.line.${line}`, message: problem }],
  });

/** What is wrong with a record, or undefined. */
function problemOf(record: readonly string[]): string | undefined {
  if (record.length !== 2) return `it has ${record.length} field${record.length === 1 ? '' : 's'}; each line needs exactly 2: value1,value2.`;
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
    if (err instanceof CsvError) throw invalidAt(startLine(text) ?? (typeof err.lines === 'number' ? err.lines : undefined), `${err.message}.`);
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
