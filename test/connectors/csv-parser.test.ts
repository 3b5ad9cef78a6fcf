import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { parse } from 'csv-parse/sync';
import { describe, expect, it } from 'vitest';
import pino from 'pino';
import { CsvParser, formatRow, type CsvRow } from '../../connectors/csv/parser.js';
import { recordBuilder, recordSink } from '../../connectors/csv/records.js';
import type { CsvEntity } from '../../connectors/csv/entity.js';
import { sortRecords } from '../../connectors/csv/sort.js';
import type { ConnectorLog, ConnectorRecord, PropertyType } from '../../src/connectors/sdk.js';

function parseAll(text: string, chunk: number, delim = ','): CsvRow[] {
  const p = new CsvParser(delim);
  const out: CsvRow[] = [];
  for (let i = 0; i < text.length; i += chunk) p.push(text.slice(i, i + chunk), out);
  p.end(out);
  return out;
}

/** A small deterministic generator, so a failure can be replayed. */
function rng(seed: number): () => number {
  let s = seed;
  return () => (s = (s * 1103515245 + 12345) & 0x7fffffff) / 0x7fffffff;
}

/** The rows a sink with `spans` gets: spans made into fields as `row` would get them. */
function parseSpanned(text: string, chunk: number): { rows: CsvRow[]; spanned: number } {
  let spanned = 0;
  const p = new CsvParser<CsvRow>(',', '"', {
    line: (buf, start, end, out) =>
      out.push(
        buf
          .slice(start, end)
          .split(',')
          .map((f) => (f === '' ? null : f)),
      ),
    row: (fields, out) => out.push(fields),
    spans: (buf, starts, ends, quoted, count, out) => {
      spanned++;
      out.push(
        Array.from({ length: count }, (_, k) =>
          starts[k] === ends[k] && quoted[k] !== 1 ? null : buf.slice(starts[k], ends[k]),
        ),
      );
    },
  });
  const rows: CsvRow[] = [];
  for (let i = 0; i < text.length; i += chunk) p.push(text.slice(i, i + chunk), rows);
  p.end(rows);
  return { rows, spanned };
}

describe('the csv parser', () => {
  it('hands records with plain quoted fields to a sink as spans, the same fields as strings, whatever the chunking', () => {
    const rand = rng(7);
    const pieces = [
      'a',
      '1',
      ',',
      '"q"',
      '"a,b"',
      '""',
      '"x""y"',
      '"z"w',
      'b"c',
      '\n',
      '\r\n',
      '\r',
      'é',
      '"multi\nline"',
    ];
    let spanned = 0;
    for (let round = 0; round < 300; round++) {
      const text = Array.from(
        { length: 1 + Math.floor(rand() * 12) },
        () => pieces[Math.floor(rand() * pieces.length)],
      ).join('');
      const expected = parseAll(text, text.length + 1);
      for (const chunk of [1, 2, 3, 7, text.length + 1]) {
        const got = parseSpanned(text, chunk);
        expect(got.rows, `${JSON.stringify(text)} in chunks of ${chunk}`).toEqual(expected);
        spanned += got.spanned;
      }
    }
    // Many records took the spans (the rest: doubled quotes, text after a quote, quotes inside a field).
    expect(spanned).toBeGreaterThan(300);
  });

  it('agrees with csv-parse on random RFC 4180 text, whatever the chunking', () => {
    const rand = rng(42);
    const alphabet = ['a', 'b', ' ', ',', '"', '\n', '\r\n', 'é', '€', 'x'];
    for (let round = 0; round < 200; round++) {
      const rows: string[][] = Array.from({ length: 1 + Math.floor(rand() * 5) }, () =>
        Array.from({ length: 3 }, () =>
          Array.from({ length: 1 + Math.floor(rand() * 6) }, () => alphabet[Math.floor(rand() * alphabet.length)]).join(
            '',
          ),
        ),
      );
      const eol = rand() < 0.5 ? '\n' : '\r\n';
      const text =
        rows
          .map((r) => r.map((f) => (/[",\r\n]/.test(f) || rand() < 0.3 ? `"${f.replace(/"/g, '""')}"` : f)).join(','))
          .join(eol) + (rand() < 0.5 ? eol : '');
      const expected: string[][] = parse(text, { relax_column_count: true });
      for (const chunk of [1, 3, 7, 1000]) {
        expect(
          parseAll(text, chunk).map((r) => r.map((f) => f ?? '')),
          `${JSON.stringify(text)} in chunks of ${chunk}`,
        ).toEqual(expected);
      }
    }
  });

  it('tells an empty unquoted field (null) from a quoted empty one, skips blank lines, takes other delimiters', () => {
    expect(parseAll('a,,""\n\n1,2,3', 2)).toEqual([
      ['a', null, ''],
      ['1', '2', '3'],
    ]);
    expect(parseAll('a;"b;c"\n', 1, ';')).toEqual([['a', 'b;c']]);
    expect(parseAll('a\tb\n', 4, '\t')).toEqual([['a', 'b']]);
  });

  it('writes rows that parse back to the same values', () => {
    const values = ['plain', '', 'with, comma', 'with "quotes"', 'two\nlines', ' padded ', null, 12, true];
    const text = formatRow(values, ',');
    expect(parseAll(text, 5)).toEqual([
      ['plain', '', 'with, comma', 'with "quotes"', 'two\nlines', ' padded ', null, '12', 'true'],
    ]);
  });
});

describe('the query fast path', () => {
  it('types the cells of lines without quotes exactly as the row path does', () => {
    const types: PropertyType[] = ['integer', 'double', 'decimal', 'boolean', 'string', 'date', 'datetime', 'guid'];
    const entity: CsvEntity = {
      file: '/dev/null',
      fileName: 't.csv',
      name: 't',
      fullName: 't',
      description: '',
      inferred: false,
      columns: types.map((type, i) => ({
        name: `c${i}`,
        fullName: `c${i}`,
        type,
        isPrimaryKey: false,
        size: 0,
        description: '',
      })),
    };
    const cells = [
      '',
      '0',
      '-0',
      '007',
      '-12',
      '1.',
      '.5',
      '1.50',
      '-3.25',
      '1e5',
      '123456789012345',
      '1234567890123456',
      '9007199254740993',
      '0.1234567890123',
      '1.234567890123456',
      '99999.9999999999',
      '-',
      '--1',
      '1.2.3',
      'true',
      'false',
      'TRUE',
      't',
      'no',
      'abc',
      ' 1',
      '2024-02-29',
      '2024-13-01',
      '2024-05-06T07:08:09Z',
      '2024-05-06 07:08:09+02:00',
      'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11',
      'é€',
    ];
    const rand = rng(3);
    const lines = ['c0,c1,c2,c3,c4,c5,c6,c7'];
    for (let r = 0; r < 2000; r++) {
      const width = 6 + Math.floor(rand() * 4);
      lines.push(Array.from({ length: width }, () => cells[Math.floor(rand() * cells.length)] as string).join(','));
    }
    const text = `${lines.join('\n')}\n"quoted",1\n`;
    const log = pino({ level: 'silent' }) as unknown as ConnectorLog;
    const viaRows = parseAll(text, 4096).slice(1).map(recordBuilder(entity, log));
    const fast = new CsvParser<ConnectorRecord>(',', '"', recordSink(entity, log, ',', true));
    const viaSink: ConnectorRecord[] = [];
    for (let i = 0; i < text.length; i += 4096) fast.push(text.slice(i, i + 4096), viaSink);
    fast.end(viaSink);
    expect(viaSink).toHaveLength(2001);
    for (let i = 0; i < viaRows.length; i++) expect(viaSink[i], lines[i + 1]).toStrictEqual(viaRows[i]);
  });
});

describe('the external sort', () => {
  it('sorts more records than one run holds by merging spilled runs, stably', async () => {
    const rand = rng(7);
    const input: ConnectorRecord[] = Array.from({ length: 1000 }, (_, i) => ({ i, k: Math.floor(rand() * 50) }));
    async function* chunks(): AsyncGenerator<ConnectorRecord[]> {
      for (let i = 0; i < input.length; i += 33) yield input.slice(i, i + 33);
    }
    const out: ConnectorRecord[] = [];
    const sizes: number[] = [];
    for await (const b of sortRecords(chunks(), (a, b) => Number(a['k']) - Number(b['k']), 64, 70)) {
      sizes.push(b.length);
      out.push(...b);
    }
    const expected = [...input].sort((a, b) => Number(a['k']) - Number(b['k']));
    expect(out).toEqual(expected);
    expect(Math.max(...sizes)).toBe(64);
  });

  it('removes the spill folders of processes that no longer run, and keeps those of running ones', async () => {
    // A process that has ended: its PID no longer runs.
    const ended = spawn(process.execPath, ['-e', '']);
    await once(ended, 'exit');
    const deadPid = ended.pid as number;
    const stale = await fsp.mkdtemp(path.join(os.tmpdir(), `ferry-csv-sort-${deadPid}-`));
    await fsp.writeFile(path.join(stale, 'run-0.ndjson'), '{"k":1}\n');
    const live = await fsp.mkdtemp(path.join(os.tmpdir(), `ferry-csv-sort-${process.ppid}-`));
    try {
      async function* chunks(): AsyncGenerator<ConnectorRecord[]> {
        for (let i = 0; i < 200; i += 50) yield Array.from({ length: 50 }, (_, j) => ({ k: 200 - i - j }));
      }
      const out: ConnectorRecord[] = [];
      for await (const b of sortRecords(chunks(), (a, b) => Number(a['k']) - Number(b['k']), 100, 60)) out.push(...b);
      expect(out.map((r) => r['k'])).toEqual(Array.from({ length: 200 }, (_, i) => i + 1));
      expect(fs.existsSync(stale)).toBe(false);
      expect(fs.existsSync(live)).toBe(true);
      // The sort's own folder is gone once it has finished.
      expect((await fsp.readdir(os.tmpdir())).filter((n) => n.startsWith(`ferry-csv-sort-${process.pid}-`))).toEqual(
        [],
      );
    } finally {
      await fsp.rm(stale, { recursive: true, force: true });
      await fsp.rm(live, { recursive: true, force: true });
    }
  });
});
