/**
 * What the csv scan thread's tests share (csv-thread.test.ts, csv-packed.test.ts): random CSV text
 * over every field type with every edge case, its schema, and probes of the process's worker
 * threads and open file descriptors.
 */
import fs from 'node:fs';
import type { CsvEntity } from '../../connectors/csv/entity.js';

/** A small deterministic generator, so a failure can be replayed. */
function rng(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
}

/** Cells of each type: canonical, non-canonical (coerced or passed as text), empty and quoted-empty. */
export const TYPES = ['integer', 'double', 'decimal', 'boolean', 'date', 'datetime', 'time', 'string', 'guid'] as const;
type Type = (typeof TYPES)[number];
const CELLS: Record<Type, string[]> = {
  integer: [
    '1',
    '-12',
    '0',
    '-0',
    '007',
    '123456789012345',
    '1234567890123456',
    '9007199254740993',
    '1e5',
    '1.0',
    ' 3',
    'abc',
    '',
    '""',
  ],
  double: ['1.5', '-0.25', '3', '1e3', '.5', '1.', '0.1234567890123456789', '12345678901234567', 'x', '', '""'],
  decimal: ['12.50', '-3', '0.000', '1e2', '+4', '1.', 'abc', '', '""'],
  boolean: ['true', 'false', 'TRUE', 't', 'yes', '0', 'maybe', '', '""'],
  date: ['2024-02-29', '2024-13-01', '20240101', '2024-1-2', 'x', '', '""'],
  datetime: ['2024-05-06T07:08:09Z', '2024-05-06T07:08:09.123456', '2024-05-06 07:08:09+02:00', 'nope', '', '""'],
  time: ['12:34:56', '1:2:3', 'x', ''],
  string: [
    'plain',
    'with, comma',
    'with "quotes"',
    'two\nlines',
    'crlf\r\ninside',
    ' padded ',
    'é€ü',
    'emoji 😀 and 👍🏽',
    'Zoë',
    '',
    '""',
    'ok',
    'a longer cell of plain text, over thirty-two characters',
  ],
  guid: ['A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11', 'not-a-guid', ''],
};
const isAscii = (c: string): boolean => Buffer.byteLength(c) === c.length;

/** One CSV field: quoted when it must be (or at random), `""` stays the quoted empty field. */
function field(raw: string, rand: () => number): string {
  if (raw === '""') return raw;
  if (/[",\r\n]/.test(raw) || (raw !== '' && rand() < 0.05)) return `"${raw.replace(/"/g, '""')}"`;
  return raw;
}

/**
 * CSV text of `rows` random records over TYPES (only ASCII cells when `ascii`): some lines short
 * (missing trailing fields), some long (extra fields), quoted fields with delimiters, line breaks
 * and doubled quotes.
 */
export function csvText(rows: number, eol: string, seed: number, ascii = false): string {
  const rand = rng(seed);
  const lines = [TYPES.map((t) => `c_${t}`).join(',')];
  for (let r = 0; r < rows; r++) {
    const width =
      rand() < 0.1 ? 1 + Math.floor(rand() * TYPES.length) : rand() < 0.05 ? TYPES.length + 2 : TYPES.length;
    const cells: string[] = [];
    for (let i = 0; i < width; i++) {
      const pool = CELLS[TYPES[i % TYPES.length] as Type].filter((c) => !ascii || isAscii(c));
      cells.push(field(pool[Math.floor(rand() * pool.length)] as string, rand));
    }
    // A blank line is no record.
    lines.push(cells.join(',') || '1');
  }
  return lines.join(eol) + eol;
}

const SCHEMA_FIELDS = TYPES.map((t) => ({ name: `c_${t}`, type: t }));
export const ALL_FIELDS = TYPES.map((t) => `c_${t}`);
export const schemaFor = (...files: string[]): string =>
  JSON.stringify({ entities: Object.fromEntries(files.map((f) => [f, { fields: SCHEMA_FIELDS }])) });

/** Worker threads of this process (the diagnostic report lists each). */
export function liveWorkers(): number {
  return (process.report.getReport() as { workers: unknown[] }).workers.length;
}

/** Descriptors of this process open on `file`. */
export function openDescriptors(file: string): number {
  let n = 0;
  for (const fd of fs.readdirSync('/proc/self/fd')) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === file) n++;
    } catch {
      // closed meanwhile
    }
  }
  return n;
}

export async function until(what: string, probe: () => boolean, ms = 5000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

/** The entity of a file of csvText's columns, as the scanner tests describe it. */
export function typesEntity(file: string): CsvEntity {
  return {
    file,
    fileName: 't.csv',
    name: 't',
    fullName: 't',
    description: '',
    inferred: false,
    columns: TYPES.map((type) => ({
      name: `c_${type}`,
      fullName: `c_${type}`,
      type,
      isPrimaryKey: false,
      size: 0,
      description: '',
    })),
  };
}
