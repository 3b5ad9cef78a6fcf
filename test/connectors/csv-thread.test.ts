import fs from 'node:fs';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import { StringDecoder } from 'node:string_decoder';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection, HostQueryOptions } from '../../src/connectors/connection.js';
import { sharedModulesDir, unpackFiles, writeFiles } from '../../src/connectors/package.js';
import type { ConnectorLog, ConnectorRecord, Filter } from '../../src/connectors/sdk.js';
import { ConnectorCatalogue } from '../../service/marketplace/catalogue.js';
import { PackageStore } from '../../service/marketplace/package-store.js';
import { cellReaders } from '../../connectors/csv/cells.js';
import { CsvParser } from '../../connectors/csv/parser.js';
import { parseProps } from '../../connectors/csv/properties.js';
import { THREAD_MIN_BYTES, THREAD_MIN_CPUS, readsInThread } from '../../connectors/csv/query.js';
import { readWith } from '../../connectors/csv/reader.js';
import { packedRecords, recordSink, scanColumns } from '../../connectors/csv/records.js';
import { csvScanner } from '../../connectors/csv/scanner.js';
import { ScanThread } from '../../connectors/csv/thread.js';
import { CONNECTORS_DIR, collect } from './conformance.js';
import { TYPES, csvText, liveWorkers, openDescriptors, schemaFor, typesEntity, until } from './csv-fixtures.js';

const CSV_ID = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const WARNING = 'csv cell does not fit its field type; passed as text';

/** A logger whose warnings the test reads. */
function recordingLog(): { log: pino.Logger; warnings: () => { field: string; entity: string }[] } {
  const lines: string[] = [];
  const stream = new Writable({
    write(chunk: Buffer, _enc, cb) {
      lines.push(...chunk.toString().split('\n').filter(Boolean));
      cb();
    },
  });
  return {
    log: pino({ level: 'warn' }, stream),
    warnings: () =>
      lines
        .map((l) => JSON.parse(l) as { msg: string; field: string; entity: string })
        .filter((l) => l.msg === WARNING)
        .map(({ field, entity }) => ({ field, entity })),
  };
}

describe('csv queries in the scan thread', () => {
  let host: ConnectorHost;
  let warnings: () => { field: string; entity: string }[];
  let folder: string;
  const conns: Record<string, HostConnection> = {};

  /** The records of a query on both connections of a folder: `off` (in-thread) and `on` (the scan thread). */
  async function both(
    folderKey: string,
    entity: string,
    filter?: Filter,
    opts: HostQueryOptions = {},
  ): Promise<{ off: ConnectorRecord[]; on: ConnectorRecord[] }> {
    const off = (await collect((conns[`${folderKey}-off`] as HostConnection).query(entity, filter, opts))).records;
    const on = (await collect((conns[`${folderKey}-on`] as HostConnection).query(entity, filter, opts))).records;
    return { off, on };
  }

  beforeAll(async () => {
    const rec = recordingLog();
    warnings = rec.warnings;
    host = new ConnectorHost({ dir: CONNECTORS_DIR, log: rec.log });
    await host.loadAll();
    folder = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-csv-thread-'));
    // Over 1 MiB each: several reads of the thread, records and quoted fields across their edges.
    const utf8 = path.join(folder, 'utf8');
    await fsp.mkdir(utf8);
    await fsp.writeFile(path.join(utf8, 'lf.csv'), csvText(12_000, '\n', 1));
    await fsp.writeFile(path.join(utf8, 'crlf.csv'), csvText(12_000, '\r\n', 2));
    await fsp.writeFile(path.join(utf8, 'bom.csv'), `\ufeff${csvText(3000, '\n', 3)}`);
    await fsp.writeFile(path.join(utf8, 'schema.json'), schemaFor('lf.csv', 'crlf.csv', 'bom.csv'));
    const latin = path.join(folder, 'latin1');
    await fsp.mkdir(latin);
    await fsp.writeFile(
      path.join(latin, 'latin.csv'),
      Buffer.from(csvText(12_000, '\n', 4).replace(/€/g, '¤'), 'latin1'),
    );
    await fsp.writeFile(path.join(latin, 'schema.json'), schemaFor('latin.csv'));
    const headless = path.join(folder, 'headless');
    await fsp.mkdir(headless);
    // Without a header the BOM is before the first record's first cell.
    await fsp.writeFile(
      path.join(headless, 'data.csv'),
      `\ufeff5${','.repeat(TYPES.length - 1)}\n${csvText(5000, '\n', 5).split('\n').slice(1).join('\n')}`,
    );
    for (const mode of ['off', 'on']) {
      conns[`utf8-${mode}`] = await host.open({
        connectorId: 'CSV',
        connectionId: `csv-utf8-${mode}`,
        properties: { folder: utf8, readerThread: mode },
      });
      conns[`latin1-${mode}`] = await host.open({
        connectorId: 'CSV',
        connectionId: `csv-latin1-${mode}`,
        properties: { folder: latin, encoding: 'latin1', readerThread: mode },
      });
      conns[`headless-${mode}`] = await host.open({
        connectorId: 'CSV',
        connectionId: `csv-headless-${mode}`,
        properties: { folder: headless, hasHeader: 'false', readerThread: mode },
      });
    }
  });
  afterAll(async () => {
    await host.close();
    await fsp.rm(folder, { recursive: true, force: true });
  });

  it('gives the records of the in-thread read: quoting, CRLF, short and long lines, empty cells of each type, non-canonical values', async () => {
    for (const entity of ['lf', 'crlf', 'bom']) {
      const { off, on } = await both('utf8', entity);
      expect(on.length, entity).toBe(entity === 'bom' ? 3000 : 12_000);
      expect(on, entity).toStrictEqual(off);
    }
    const { on } = await both('utf8', 'lf');
    const values = (f: string) => new Set(on.map((r) => r[f]));
    // The cases happened and were typed: settled in the thread, or coerced, or passed as text.
    for (const [f, v] of [
      ['c_integer', 7],
      ['c_integer', -0],
      ['c_integer', '9007199254740993'],
      ['c_integer', 'abc'],
      ['c_double', Number('0.1234567890123456789')],
      ['c_double', 'x'],
      ['c_decimal', '12.50'],
      ['c_boolean', true],
      ['c_boolean', 'maybe'],
      ['c_date', '2024-02-29'],
      ['c_datetime', '2024-05-06T07:08:09Z'],
      ['c_string', 'crlf\r\ninside'],
      ['c_string', 'with "quotes"'],
      ['c_string', ''],
      ['c_string', null],
      ['c_guid', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'],
    ] as const) {
      expect(values(f).has(v), `${f} ${JSON.stringify(v)}`).toBe(true);
    }
    // A BOM is not part of the first field's name or value.
    expect(Object.keys(on[0] ?? {})[0]).toBe('c_integer');
  });

  it('warns once per field of a query for cells that do not fit, as the in-thread read does', async () => {
    const before = warnings().length;
    await collect((conns['utf8-off'] as HostConnection).query('lf'));
    const off = warnings().slice(before);
    const mid = warnings().length;
    await collect((conns['utf8-on'] as HostConnection).query('lf'));
    const on = warnings().slice(mid);
    expect(on.length).toBeGreaterThan(0);
    expect(new Set(on.map((w) => w.field))).toEqual(new Set(off.map((w) => w.field)));
    expect(on.length).toBe(new Set(on.map((w) => w.field)).size);
  });

  it('decodes another encoding and reads a file without a header the same way', async () => {
    const latin = await both('latin1', 'latin');
    expect(latin.on).toStrictEqual(latin.off);
    expect(latin.on.some((r) => r['c_string'] === 'é¤ü')).toBe(true);
    const headless = await both('headless', 'data');
    expect(headless.on).toHaveLength(5001);
    expect(headless.on).toStrictEqual(headless.off);
    expect(String(headless.on[0]?.['Column1'])).toBe('5');
  });

  it('filters, orders, projects and limits as before', async () => {
    const filter: Filter = {
      op: 'and',
      args: [
        { op: '>=', field: 'c_integer', value: 0 },
        { op: 'not', arg: { op: 'isNull', field: 'c_string' } },
      ],
    };
    const opts: HostQueryOptions = {
      orderBy: [
        { field: 'c_double', direction: 'desc' },
        { field: 'c_string', direction: 'asc' },
      ],
      fields: ['c_integer', 'c_double', 'c_string'],
      limit: 777,
      batchSize: 100,
    };
    const { off, on } = await both('utf8', 'crlf', filter, opts);
    expect(on).toHaveLength(777);
    expect(Object.keys(on[0] ?? {})).toEqual(['c_integer', 'c_double', 'c_string']);
    expect(on).toStrictEqual(off);
    const since = await both('utf8', 'lf', undefined, { netChange: { field: 'c_date', since: '2024-01-01' } });
    expect(since.on.length).toBeGreaterThan(0);
    expect(since.on).toStrictEqual(since.off);
    const limited = await both('utf8', 'lf', undefined, { limit: 5, batchSize: 2 });
    expect(limited.on).toHaveLength(5);
    expect(limited.on).toStrictEqual(limited.off);
  });

  it('stops the thread and closes the file when the reader breaks out or is aborted', async () => {
    const file = path.join(folder, 'utf8', 'lf.csv');
    const base = liveWorkers();
    const conn = conns['utf8-on'] as HostConnection;
    for await (const b of conn.query('lf', undefined, { batchSize: 10 })) {
      expect(b).toHaveLength(10);
      expect(liveWorkers()).toBe(base + 1);
      expect(openDescriptors(file)).toBe(1);
      break;
    }
    await until('no thread left after a break', () => liveWorkers() === base);
    // The file is closed once the thread has stopped: a turn after it has left the report.
    await until('the file closed after a break', () => openDescriptors(file) === 0);

    const ac = new AbortController();
    const it = conn.query('lf', undefined, { batchSize: 10, signal: ac.signal })[Symbol.asyncIterator]();
    expect((await it.next()).value).toHaveLength(10);
    ac.abort();
    await expect(it.next()).rejects.toMatchObject({ code: 'CON_ABORTED' });
    await until('no thread left after an abort', () => liveWorkers() === base);
    await until('the file closed after an abort', () => openDescriptors(file) === 0);
  });

  it('ends an open query with CON_ABORTED when the session disconnects, and stops its thread', async () => {
    const base = liveWorkers();
    const conn = await host.open({
      connectorId: 'CSV',
      connectionId: 'csv-thread-disconnect',
      properties: { folder: path.join(folder, 'utf8'), readerThread: 'on' },
    });
    const it = conn.query('crlf', undefined, { batchSize: 10 })[Symbol.asyncIterator]();
    expect((await it.next()).value).toHaveLength(10);
    await conn.close();
    // The records of the thread's first batch are handed out first: pull until the thread is asked again.
    await expect(
      (async () => {
        for (;;) if ((await it.next()).done) return;
      })(),
    ).rejects.toMatchObject({ code: 'CON_ABORTED', message: expect.stringMatching(/disconnected/) });
    await until('no thread left after a disconnect', () => liveWorkers() === base);
  });

  it("reports a missing file and an unreadable one with the in-thread read's codes", async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-csv-thread-err-'));
    try {
      await fsp.writeFile(path.join(dir, 'gone.csv'), 'a\n1\n');
      await fsp.writeFile(path.join(dir, 'dir.csv'), 'a\n1\n');
      const base = liveWorkers();
      for (const mode of ['off', 'on']) {
        const conn = await host.open({
          connectorId: 'CSV',
          connectionId: `csv-thread-err-${mode}`,
          properties: { folder: dir, readerThread: mode },
        });
        await conn.metadata();
        await fsp.rm(path.join(dir, 'gone.csv'));
        await expect(collect(conn.query('gone')), mode).rejects.toMatchObject({ code: 'CON_ENTITY_NOT_FOUND' });
        // A folder where the file was: it opens, and the first read fails (EISDIR) — in the thread.
        await fsp.rm(path.join(dir, 'dir.csv'));
        await fsp.mkdir(path.join(dir, 'dir.csv'));
        await expect(collect(conn.query('dir')), mode).rejects.toMatchObject({ code: 'CON_PROPERTIES_INVALID' });
        await conn.close();
        await fsp.writeFile(path.join(dir, 'gone.csv'), 'a\n1\n');
        await fsp.rm(path.join(dir, 'dir.csv'), { recursive: true });
        await fsp.writeFile(path.join(dir, 'dir.csv'), 'a\n1\n');
      }
      await until('no thread left after the errors', () => liveWorkers() === base);
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });

  it('reads a file in the thread by default when it is large enough and the machine has the CPUs for it', async () => {
    const asked: number[] = [];
    const size = (n: number) => async (): Promise<number> => (asked.push(n), n);
    expect(await readsInThread('auto', THREAD_MIN_CPUS, size(THREAD_MIN_BYTES))).toBe(true);
    expect(await readsInThread('auto', THREAD_MIN_CPUS, size(THREAD_MIN_BYTES - 1))).toBe(false);
    expect(await readsInThread('auto', THREAD_MIN_CPUS - 1, size(1e12))).toBe(false);
    expect(await readsInThread('on', 1, size(0))).toBe(true);
    expect(await readsInThread('off', 64, size(1e12))).toBe(false);
    // The file's size is looked up only when it decides.
    expect(asked).toEqual([THREAD_MIN_BYTES, THREAD_MIN_BYTES - 1]);
  });

  it('follows that rule on this machine', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-csv-thread-auto-'));
    try {
      const line = `${'x'.repeat(99)}\n`;
      await fsp.writeFile(
        path.join(dir, 'small.csv'),
        `a\n${line.repeat(Math.floor((THREAD_MIN_BYTES - 1) / line.length) - 1)}`,
      );
      await fsp.writeFile(path.join(dir, 'large.csv'), `a\n${line.repeat(Math.ceil(THREAD_MIN_BYTES / line.length))}`);
      expect((await fsp.stat(path.join(dir, 'small.csv'))).size).toBeLessThan(THREAD_MIN_BYTES);
      const conn = await host.open({
        connectorId: 'CSV',
        connectionId: 'csv-thread-auto',
        properties: { folder: dir },
      });
      const base = liveWorkers();
      const during = async (entity: string): Promise<number> => {
        let seen = 0;
        for await (const _ of conn.query(entity, undefined, { batchSize: 100 })) {
          seen = liveWorkers() - base;
          break;
        }
        return seen;
      };
      expect(await during('small')).toBe(0);
      expect(await during('large')).toBe(os.availableParallelism() >= THREAD_MIN_CPUS ? 1 : 0);
      await conn.close();
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the csv scanner', () => {
  it('types cells as the query sink does whatever the reads cut: records, quoted fields, CRLF and characters across reads', async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-csv-scanner-'));
    const entity = typesEntity(path.join(dir, 't.csv'));
    const log = pino({ level: 'silent' }) as unknown as ConnectorLog;
    try {
      for (const encoding of ['utf8', 'latin1', 'utf16le'] as const) {
        const text = `\ufeff${csvText(400, encoding === 'latin1' ? '\n' : '\r\n', 7)}`;
        await fsp.writeFile(entity.file, Buffer.from(encoding === 'latin1' ? text.replace(/€/g, '¤') : text, encoding));
        const props = parseProps({ folder: dir, encoding });
        const expected: ConnectorRecord[] = [];
        for await (const recs of readWith(entity.file, props, undefined, recordSink(entity, log, ',', true)))
          expected.push(...recs);
        expect(expected).toHaveLength(400);
        for (const chunk of [1, 7, 64, 1000]) {
          const fd = fs.openSync(entity.file, 'r');
          try {
            const next = csvScanner(
              CsvParser,
              cellReaders(),
              { readSync: fs.readSync, StringDecoder },
              { fd, encoding, delimiter: ',', hasHeader: true, columns: scanColumns(entity), chunk },
            );
            const records = packedRecords(entity, log);
            const got: ConnectorRecord[] = [];
            for (;;) {
              const { reply } = next();
              got.push(...records(reply));
              if (reply.done) break;
            }
            expect(got, `${encoding} in reads of ${chunk} bytes`).toStrictEqual(expected);
          } finally {
            fs.closeSync(fd);
          }
        }
      }
    } finally {
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('the csv ScanThread', () => {
  it('fails a request with a clear error when the thread dies, and stops waiting when the signal fires', async () => {
    const exits = new ScanThread('() => () => { process.exit(7); }', null);
    await expect(exits.next()).rejects.toMatchObject({
      reason: 'Datastore',
      message: expect.stringMatching(/stopped \(exit code 7\)/),
    });
    await expect(exits.next()).rejects.toMatchObject({ reason: 'Datastore' });
    await exits.close();
    const throws = new ScanThread(
      '() => { process.nextTick(() => { throw new Error("boom"); }); return () => ({ reply: null, transfer: [] }); }',
      null,
    );
    await expect(throws.next()).rejects.toMatchObject({
      reason: 'Datastore',
      message: expect.stringMatching(/failed: boom/),
    });
    await throws.close();
    // A thread that never answers (busy): the signal ends the wait, closing ends the thread.
    const busy = new ScanThread('() => () => { for (;;); }', null);
    const ac = new AbortController();
    const waiting = busy.next(ac.signal);
    setTimeout(() => ac.abort(), 50);
    await expect(waiting).rejects.toMatchObject({ reason: 'Aborted' });
    await busy.close();
    await expect(busy.next()).rejects.toMatchObject({ reason: 'Aborted' });
    const broken = new ScanThread(
      '() => { throw Object.assign(new Error("no such file"), { code: "ENOENT" }); }',
      null,
    );
    await expect(broken.next()).rejects.toMatchObject({ code: 'ENOENT', message: 'no such file' });
    await broken.close();
  });
});

describe('the csv scan thread in the packaged plugin', () => {
  it('runs from the bundled index.mjs and gives the same records', { timeout: 60_000 }, async () => {
    const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-csv-package-'));
    const host = new ConnectorHost({ dir: path.join(dir, 'connectors'), log: pino({ level: 'silent' }) });
    const source = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    try {
      const pkg = await new PackageStore(ConnectorCatalogue.fromDirs(), path.join(dir, 'packages')).get(CSV_ID);
      await fsp.mkdir(path.join(dir, 'connectors'));
      await writeFiles(path.join(dir, 'connectors', 'csv'), unpackFiles(await fsp.readFile(pkg.file)));
      await fsp.symlink(sharedModulesDir() as string, path.join(dir, 'connectors', 'node_modules'));
      const data = path.join(dir, 'data');
      await fsp.mkdir(data);
      await fsp.writeFile(path.join(data, 'lf.csv'), csvText(3000, '\n', 6));
      await fsp.writeFile(path.join(data, 'schema.json'), schemaFor('lf.csv'));
      const { loaded } = await host.loadAll();
      expect(loaded.map((l) => l.folder)).toEqual([path.join(dir, 'connectors', 'csv')]);
      await source.loadAll();
      const packaged = await host.open({
        connectorId: 'CSV',
        connectionId: 'csv-packaged',
        properties: { folder: data, readerThread: 'on' },
      });
      const inThread = await source.open({
        connectorId: 'CSV',
        connectionId: 'csv-source',
        properties: { folder: data, readerThread: 'off' },
      });
      const viaPackage = (await collect(packaged.query('lf'))).records;
      expect(viaPackage).toHaveLength(3000);
      expect(viaPackage).toStrictEqual((await collect(inThread.query('lf'))).records);
    } finally {
      await host.close();
      await source.close();
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});
