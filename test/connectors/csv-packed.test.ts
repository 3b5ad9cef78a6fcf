/**
 * The csv Connector read packed (docs/connectors.md "Packed batches"): a query without an order or
 * net change comes as packed batches. Read in the scan thread without a filter, the thread packs
 * them (the scanner's packed mode); any other is read as records and packed. Either way the
 * batches hold exactly the rows and values `query` gives with the same arguments.
 */
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { StringDecoder } from 'node:string_decoder';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection, HostQueryOptions } from '../../src/connectors/connection.js';
import {
  CELL_DECIMAL,
  CELL_NUMBER,
  CELL_TEXT,
  CELL_VALUE,
  isPackedBatch,
  packedValue,
  unpackRecords,
  type ConnectorLog,
  type ConnectorRecord,
  type Filter,
  type PackedBatch,
} from '../../src/connectors/sdk.js';
import { cellReaders } from '../../connectors/csv/cells.js';
import { CsvParser } from '../../connectors/csv/parser.js';
import { parseProps } from '../../connectors/csv/properties.js';
import { readWith } from '../../connectors/csv/reader.js';
import { recordSink, scanColumns, settlePacked } from '../../connectors/csv/records.js';
import { csvScanner } from '../../connectors/csv/scanner.js';
import { CONNECTORS_DIR, collect } from './conformance.js';
import {
  ALL_FIELDS,
  TYPES,
  csvText,
  liveWorkers,
  openDescriptors,
  schemaFor,
  typesEntity,
  until,
} from './csv-fixtures.js';

/** A packed query (it must be read packed). */
function packed(
  conn: HostConnection,
  entity: string,
  filter?: Filter,
  opts: HostQueryOptions = {},
): AsyncIterable<PackedBatch> {
  const it = conn.queryPacked(entity, filter, opts);
  if (!it) throw new Error('the query is not read packed');
  return it;
}

/** The batches of a packed query. */
async function packedBatches(
  conn: HostConnection,
  entity: string,
  filter?: Filter,
  opts: HostQueryOptions = {},
): Promise<PackedBatch[]> {
  const out: PackedBatch[] = [];
  for await (const b of packed(conn, entity, filter, opts)) out.push(b);
  return out;
}

/**
 * Checks a packed query against `query` with the same arguments: the same records (each cell's
 * packedValue is the record's value), sound batches of the expected fields, every batch but the
 * last exactly batchSize rows, and only the kinds of packed.ts. Returns the batches' row counts.
 */
async function expectSame(
  conn: HostConnection,
  entity: string,
  filter: Filter | undefined,
  opts: HostQueryOptions,
  fields: readonly string[],
  what: string,
): Promise<number[]> {
  const { records } = await collect(conn.query(entity, filter, opts));
  const batches = await packedBatches(conn, entity, filter, opts);
  const size = opts.batchSize ?? 2000;
  batches.forEach((b, i) => {
    expect(isPackedBatch(b), what).toBe(true);
    expect(b.fields, what).toEqual(fields);
    expect(b.rows, `${what}: batch ${i}`).toBeGreaterThan(0);
    if (i < batches.length - 1) expect(b.rows, `${what}: batch ${i} of ${batches.length}`).toBe(size);
    else expect(b.rows, what).toBeLessThanOrEqual(size);
    expect(
      b.tags.subarray(0, b.rows * b.fields.length).every((t) => t <= CELL_DECIMAL),
      what,
    ).toBe(true);
  });
  const unpacked = batches.flatMap((b) => unpackRecords(b));
  expect(unpacked.length, what).toBe(records.length);
  expect(unpacked, what).toStrictEqual(records);
  // Cell by cell, too (key order aside): packedValue is the record's value (a primitive).
  const differ: string[] = [];
  let r = 0;
  for (const b of batches) {
    for (let row = 0; row < b.rows; row++, r++) {
      const rec = records[r] as ConnectorRecord;
      for (let i = 0; i < fields.length; i++) {
        const got = packedValue(b, row * fields.length + i);
        const want = rec[fields[i] as string] ?? null;
        if (!Object.is(got, want))
          differ.push(`row ${r} ${fields[i]}: ${JSON.stringify(got)} ≠ ${JSON.stringify(want)}`);
      }
    }
  }
  expect(differ, what).toEqual([]);
  return batches.map((b) => b.rows);
}

describe('csv queries read packed', () => {
  let host: ConnectorHost;
  let folder: string;
  const conns: Record<string, HostConnection> = {};
  const conn = (key: string): HostConnection => conns[key] as HostConnection;

  beforeAll(async () => {
    host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    await host.loadAll();
    folder = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-csv-packed-'));
    // Over 1 MiB: several reads of the thread, records and quoted fields across their edges.
    const utf8 = path.join(folder, 'utf8');
    await fsp.mkdir(utf8);
    await fsp.writeFile(path.join(utf8, 'mixed.csv'), csvText(12_000, '\n', 11));
    await fsp.writeFile(path.join(utf8, 'crlf.csv'), csvText(12_000, '\r\n', 12));
    // Only ASCII: the thread copies its bytes without encoding them.
    await fsp.writeFile(path.join(utf8, 'ascii.csv'), csvText(12_000, '\n', 13, true));
    await fsp.writeFile(path.join(utf8, 'bom.csv'), `\ufeff${csvText(3000, '\n', 14)}`);
    await fsp.writeFile(path.join(utf8, 'hundred.csv'), csvText(100, '\n', 15));
    await fsp.writeFile(path.join(utf8, 'empty.csv'), `${ALL_FIELDS.join(',')}\n`);
    await fsp.writeFile(
      path.join(utf8, 'schema.json'),
      schemaFor('mixed.csv', 'crlf.csv', 'ascii.csv', 'bom.csv', 'hundred.csv', 'empty.csv'),
    );
    const latin = path.join(folder, 'latin1');
    await fsp.mkdir(latin);
    await fsp.writeFile(
      path.join(latin, 'latin.csv'),
      Buffer.from(csvText(5000, '\n', 16, true).replace(/plain/g, 'pl€in é').replace(/€/g, '¤'), 'latin1'),
    );
    await fsp.writeFile(path.join(latin, 'schema.json'), schemaFor('latin.csv'));
    const headless = path.join(folder, 'headless');
    await fsp.mkdir(headless);
    // Without a header the BOM is before the first record's first cell; types are inferred.
    await fsp.writeFile(
      path.join(headless, 'data.csv'),
      `\ufeff5${','.repeat(TYPES.length - 1)}\n${csvText(5000, '\n', 17).split('\n').slice(1).join('\n')}`,
    );
    for (const mode of ['off', 'on']) {
      conns[`utf8-${mode}`] = await host.open({
        connectorId: 'CSV',
        connectionId: `csv-packed-utf8-${mode}`,
        properties: { folder: utf8, readerThread: mode },
      });
      conns[`latin1-${mode}`] = await host.open({
        connectorId: 'CSV',
        connectionId: `csv-packed-latin1-${mode}`,
        properties: { folder: latin, encoding: 'latin1', readerThread: mode },
      });
      conns[`headless-${mode}`] = await host.open({
        connectorId: 'CSV',
        connectionId: `csv-packed-headless-${mode}`,
        properties: { folder: headless, hasHeader: 'false', readerThread: mode },
      });
    }
  });
  afterAll(async () => {
    await host.close();
    await fsp.rm(folder, { recursive: true, force: true });
  });

  it("gives the values of query, in the thread and on the Agent's thread: quoting, CRLF, BOM, short and long lines, empty cells, non-ASCII, converted cells", async () => {
    for (const mode of ['on', 'off']) {
      for (const entity of ['mixed', 'crlf', 'ascii', 'bom']) {
        const rows = await expectSame(
          conn(`utf8-${mode}`),
          entity,
          undefined,
          { batchSize: 2000 },
          ALL_FIELDS,
          `${mode} ${entity}`,
        );
        expect(rows.reduce((a, b) => a + b, 0)).toBe(entity === 'bom' ? 3000 : 12_000);
      }
      await expectSame(conn(`latin1-${mode}`), 'latin', undefined, { batchSize: 1000 }, ALL_FIELDS, `${mode} latin1`);
      const headless = await expectSame(
        conn(`headless-${mode}`),
        'data',
        undefined,
        { batchSize: 1000 },
        TYPES.map((_, i) => `Column${i + 1}`),
        `${mode} headless`,
      );
      expect(headless.reduce((a, b) => a + b, 0)).toBe(5001);
      expect(await packedBatches(conn(`utf8-${mode}`), 'empty')).toEqual([]);
    }
    // The cases happened and were packed as the kinds they are, or settled by their converter.
    const batches = await packedBatches(conn('utf8-on'), 'mixed');
    const seen = new Map<string, Set<unknown>>();
    const kinds = new Map<string, Set<number>>();
    for (const b of batches) {
      for (let v = 0; v < b.rows * b.fields.length; v++) {
        const f = b.fields[v % b.fields.length] as string;
        if (!seen.has(f)) seen.set(f, new Set());
        if (!kinds.has(f)) kinds.set(f, new Set());
        seen.get(f)?.add(packedValue(b, v));
        kinds.get(f)?.add(b.tags[v] as number);
      }
    }
    for (const [f, v] of [
      ['c_integer', 7],
      ['c_integer', -0],
      ['c_integer', '9007199254740993'],
      ['c_integer', 'abc'],
      ['c_double', Number('0.1234567890123456789')],
      ['c_decimal', '12.50'],
      ['c_boolean', true],
      ['c_boolean', 'maybe'],
      ['c_date', '2024-02-29'],
      ['c_date', '20240101'],
      ['c_datetime', '2024-05-06T07:08:09Z'],
      ['c_datetime', '2024-05-06T05:08:09.000Z'],
      ['c_string', 'crlf\r\ninside'],
      ['c_string', 'with "quotes"'],
      ['c_string', 'emoji 😀 and 👍🏽'],
      ['c_string', ''],
      ['c_string', null],
      ['c_guid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'],
    ] as const) {
      expect(seen.get(f)?.has(v), `${f} ${JSON.stringify(v)}`).toBe(true);
    }
    // Numbers as numbers, text as text, the converters' other values as values.
    expect(kinds.get('c_integer')?.has(CELL_NUMBER)).toBe(true);
    expect(kinds.get('c_string')?.has(CELL_TEXT)).toBe(true);
    expect(kinds.get('c_guid')?.has(CELL_VALUE)).toBe(true);
    expect(kinds.get('c_datetime')?.has(CELL_VALUE)).toBe(true);
    // A cell its converter passes on as its text stays text.
    expect(kinds.get('c_integer')?.has(CELL_TEXT)).toBe(true);
  });

  it('projects fields in the order asked, limits, and cuts batches of exactly batchSize rows', async () => {
    const fields = ['c_string', 'c_integer', 'c_guid', 'c_date'];
    for (const mode of ['on', 'off']) {
      const c = conn(`utf8-${mode}`);
      await expectSame(c, 'mixed', undefined, { fields, batchSize: 500 }, fields, `${mode} fields`);
      expect(await expectSame(c, 'hundred', undefined, { batchSize: 7 }, ALL_FIELDS, `${mode} 7`)).toEqual([
        ...Array<number>(14).fill(7),
        2,
      ]);
      expect(await expectSame(c, 'hundred', undefined, { batchSize: 10 }, ALL_FIELDS, `${mode} 10`)).toEqual(
        Array<number>(10).fill(10),
      );
      // Larger than what one read of the file holds: a batch spans reads.
      expect(
        await expectSame(
          c,
          'mixed',
          undefined,
          { batchSize: 5000, fields: ['c_boolean', 'c_string'] },
          ['c_boolean', 'c_string'],
          `${mode} 5000`,
        ),
      ).toEqual([5000, 5000, 2000]);
      expect(
        await expectSame(c, 'crlf', undefined, { batchSize: 100, limit: 777 }, ALL_FIELDS, `${mode} limit`),
      ).toEqual([...Array<number>(7).fill(100), 77]);
      expect(
        await expectSame(
          c,
          'ascii',
          undefined,
          { batchSize: 2, limit: 5, fields: ['c_double'] },
          ['c_double'],
          `${mode} limit 5`,
        ),
      ).toEqual([2, 2, 1]);
      expect(
        await expectSame(c, 'hundred', undefined, { batchSize: 50, limit: 100 }, ALL_FIELDS, `${mode} limit = rows`),
      ).toEqual([50, 50]);
    }
  });

  it('a query with a filter is read as records and packed: the rows of query', async () => {
    const filter: Filter = {
      op: 'and',
      args: [
        { op: '>=', field: 'c_integer', value: 0 },
        { op: 'not', arg: { op: 'isNull', field: 'c_string' } },
      ],
    };
    for (const mode of ['on', 'off']) {
      const rows = await expectSame(
        conn(`utf8-${mode}`),
        'mixed',
        filter,
        { batchSize: 300, fields: ['c_string', 'c_integer'], limit: 1000 },
        ['c_string', 'c_integer'],
        `${mode} filter`,
      );
      expect(rows).toEqual([300, 300, 300, 100]);
    }
  });

  it('reads in the scan thread when readerThread says so, and not otherwise', async () => {
    const base = liveWorkers();
    const during = async (key: string): Promise<number> => {
      let seen = -1;
      for await (const _ of packed(conn(key), 'mixed', undefined, { batchSize: 10 })) {
        seen = liveWorkers() - base;
        break;
      }
      return seen;
    };
    expect(await during('utf8-on')).toBe(1);
    expect(await during('utf8-off')).toBe(0);
    await until('no thread left', () => liveWorkers() === base);
  });

  it('is not read packed with an order or net change', () => {
    for (const mode of ['on', 'off']) {
      const c = conn(`utf8-${mode}`);
      expect(
        c.queryPacked('mixed', undefined, { orderBy: [{ field: 'c_integer', direction: 'asc' }] }),
      ).toBeUndefined();
      expect(
        c.queryPacked('mixed', undefined, { netChange: { field: 'c_date', since: '2024-01-01' } }),
      ).toBeUndefined();
      expect(c.queryPacked('mixed', undefined, { orderBy: [] })).toBeDefined();
      expect(c.queryPacked('mixed', { op: '=', field: 'c_integer', value: 1 })).toBeDefined();
    }
  });

  it('stops the thread and closes the file when the reader breaks out or is aborted', async () => {
    const file = path.join(folder, 'utf8', 'mixed.csv');
    const base = liveWorkers();
    const c = conn('utf8-on');
    for await (const b of packed(c, 'mixed', undefined, { batchSize: 10 })) {
      expect(b.rows).toBe(10);
      expect(liveWorkers()).toBe(base + 1);
      expect(openDescriptors(file)).toBe(1);
      break;
    }
    await until('no thread left after a break', () => liveWorkers() === base);
    expect(openDescriptors(file)).toBe(0);

    const ac = new AbortController();
    const it = packed(c, 'mixed', undefined, { batchSize: 10, signal: ac.signal })[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ rows: 10 });
    ac.abort();
    await expect(it.next()).rejects.toMatchObject({ code: 'CON_ABORTED' });
    await until('no thread left after an abort', () => liveWorkers() === base);
    expect(openDescriptors(file)).toBe(0);

    // A limit reached mid-file stops the thread too.
    const limited = await packedBatches(c, 'mixed', undefined, { batchSize: 10, limit: 25 });
    expect(limited.map((b) => b.rows)).toEqual([10, 10, 5]);
    await until('no thread left after a limit', () => liveWorkers() === base);
    expect(openDescriptors(file)).toBe(0);
  });

  it('ends an open packed query with CON_ABORTED when the session disconnects, and stops its thread', async () => {
    const base = liveWorkers();
    const c = await host.open({
      connectorId: 'CSV',
      connectionId: 'csv-packed-disconnect',
      properties: { folder: path.join(folder, 'utf8'), readerThread: 'on' },
    });
    const it = packed(c, 'crlf', undefined, { batchSize: 10 })[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ rows: 10 });
    await c.close();
    await expect(
      (async () => {
        for (;;) if ((await it.next()).done) return;
      })(),
    ).rejects.toMatchObject({ code: 'CON_ABORTED', message: expect.stringMatching(/disconnected/) });
    await until('no thread left after a disconnect', () => liveWorkers() === base);
  });
});

describe('csv packed queries that fail', () => {
  it("report a missing file and an unreadable one with the records read's codes, and leave no thread", async () => {
    const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    await host.loadAll();
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-csv-packed-err-'));
    try {
      await fsp.writeFile(path.join(dir, 'gone.csv'), 'a\n1\n');
      await fsp.writeFile(path.join(dir, 'dir.csv'), 'a\n1\n');
      const base = liveWorkers();
      for (const mode of ['off', 'on']) {
        const c = await host.open({
          connectorId: 'CSV',
          connectionId: `csv-packed-err-${mode}`,
          properties: { folder: dir, readerThread: mode },
        });
        expect(await packedBatches(c, 'dir')).toHaveLength(1);
        await fsp.rm(path.join(dir, 'gone.csv'));
        await expect(packedBatches(c, 'gone'), mode).rejects.toMatchObject({ code: 'CON_ENTITY_NOT_FOUND' });
        // A folder where the file was: it opens, and the first read fails (EISDIR), in the thread with `on`.
        await fsp.rm(path.join(dir, 'dir.csv'));
        await fsp.mkdir(path.join(dir, 'dir.csv'));
        await expect(packedBatches(c, 'dir'), mode).rejects.toMatchObject({ code: 'CON_PROPERTIES_INVALID' });
        await c.close();
        await fsp.writeFile(path.join(dir, 'gone.csv'), 'a\n1\n');
        await fsp.rm(path.join(dir, 'dir.csv'), { recursive: true });
        await fsp.writeFile(path.join(dir, 'dir.csv'), 'a\n1\n');
      }
      await until('no thread left after the errors', () => liveWorkers() === base);
    } finally {
      await host.close();
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the csv scanner in packed mode', () => {
  it('packs the values of the query sink whatever the reads and batches cut: rows split over batches, fields projected', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-csv-packed-scanner-'));
    const entity = typesEntity(path.join(dir, 't.csv'));
    const log = pino({ level: 'silent' }) as unknown as ConnectorLog;
    try {
      for (const [encoding, ascii] of [
        ['utf8', false],
        ['utf8', true],
        ['latin1', true],
        ['utf16le', false],
      ] as const) {
        const text = `\ufeff${csvText(300, encoding === 'latin1' ? '\n' : '\r\n', 21, ascii)}`;
        await fsp.writeFile(
          entity.file,
          Buffer.from(encoding === 'latin1' ? text.replace(/plain/g, 'plé¤n') : text, encoding),
        );
        const props = parseProps({ folder: dir, encoding });
        const expected: ConnectorRecord[] = [];
        for await (const recs of readWith(entity.file, props, undefined, recordSink(entity, log, ',', true)))
          expected.push(...recs);
        expect(expected).toHaveLength(300);
        for (const names of [ALL_FIELDS, ['c_guid', 'c_string', 'c_integer', 'c_string']]) {
          const columns = names.map((f) => ALL_FIELDS.indexOf(f));
          const want = expected.map((r) => Object.fromEntries(names.map((f) => [f, r[f] ?? null])));
          for (const [chunk, batchSize] of [
            [1, 3],
            [7, 1],
            [64, 11],
            [1000, 7],
            [1 << 16, 1000],
          ] as const) {
            const fd = fs.openSync(entity.file, 'r');
            try {
              const next = csvScanner(
                CsvParser,
                cellReaders(),
                { readSync: fs.readSync, StringDecoder },
                {
                  fd,
                  encoding,
                  delimiter: ',',
                  hasHeader: true,
                  columns: scanColumns(entity),
                  chunk,
                  packed: { fields: columns, batchSize },
                },
              );
              const settle = settlePacked(entity, log, columns, names);
              const got: ConnectorRecord[] = [];
              const sizes: number[] = [];
              for (;;) {
                const { reply, transfer } = next();
                expect(transfer).toEqual([reply.tags.buffer, reply.nums.buffer, reply.ends.buffer, reply.text.buffer]);
                if (reply.rows) {
                  sizes.push(reply.rows);
                  got.push(...unpackRecords(settle(reply)));
                }
                if (reply.done) break;
              }
              const what = `${encoding}${ascii ? ' ascii' : ''} in reads of ${chunk} bytes, batches of ${batchSize}, ${names.length} fields`;
              expect(
                sizes.slice(0, -1).every((s) => s === batchSize),
                what,
              ).toBe(true);
              expect(got, what).toStrictEqual(want);
            } finally {
              fs.closeSync(fd);
            }
          }
        }
      }
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});
