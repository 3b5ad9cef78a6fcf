/**
 * Packed batches (src/connectors/packed.ts): SQLite's reader thread reads them, PostgreSQL writes
 * them, and both must give exactly what records give — the same values as `query`, the same rows
 * in the target and the same per-row results as `write`.
 */
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Importing the store helper applies its rule: in CI (CI=true) a missing FERRY_TEST_DATABASE_URL fails the run.
import { createTestDatabase } from '../helpers/stores.js';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection } from '../../src/connectors/connection.js';
import {
  CELL_TEXT,
  isPackedBatch,
  unpackRecords,
  type ConnectorRecord,
  type PackedBatch,
  type WriteResult,
} from '../../src/connectors/sdk.js';
import { sqliteReader, type ReadBatch } from '../../connectors/sqlite/reader.js';
import { CONNECTORS_DIR, collect } from './conformance.js';

const URL_SET = Boolean(process.env['FERRY_TEST_DATABASE_URL']);

/** Every kind of stored value the converters tell apart, in columns of every declared type. */
const DDL = `CREATE TABLE t (id INTEGER PRIMARY KEY, name TEXT, amount DECIMAL(12,2), qty INTEGER, price REAL,
  active BOOLEAN, born DATE, updated_at DATETIME, big BIGINT, data BLOB, free)`;
const ROWS: unknown[][] = [
  [1, 'plain', 12.5, 3, 1.25, 1, '2024-02-29', '2024-03-01 10:11:12', 9007199254740993n, Buffer.from([1, 2, 3]), 'x'],
  [2, 'Zoë — ünïcödé 😀', '12.50', -7, -0.5, 0, '2023-12-31', '2024-03-01T10:11:12', -42, null, 5],
  [3, null, null, null, null, null, null, null, null, null, null],
  [4, '', 0, 0, 0, 'true', 'not a date', 1700000000, 9223372036854775807n, Buffer.alloc(0), 1.5],
  [
    5,
    'tab\there\nnewline "quoted" \\ back',
    '1e3',
    2 ** 40,
    1e300,
    'yes',
    '2024-01-01',
    'Zoë 10:11:12 x',
    0,
    Buffer.from('hi'),
    Buffer.from('z'),
  ],
  [6, 'x'.repeat(5000), -0.01, 1, 3, 2, '2024-01-01', '2024-01-01', 1, null, 'é'],
];

async function tempDb(): Promise<{ dir: string; file: string }> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-packed-'));
  return { dir, file: path.join(dir, 'packed.db') };
}

async function packedBatches(conn: HostConnection, entity: string, batchSize: number): Promise<PackedBatch[]> {
  const it = conn.queryPacked(entity, undefined, { batchSize, orderBy: [{ field: 'id', direction: 'asc' }] });
  if (!it) throw new Error('the query is not read packed');
  const out: PackedBatch[] = [];
  for await (const b of it) out.push(b);
  return out;
}

describe('packed batch checks', () => {
  it('the reader thread gives UTF-8 byte ends, also for a surrogate pair split over two cells', () => {
    const rows = [
      ['a', 'Zoë', '😀x'],
      ['\ud83d', '\ude00', 'é'],
      ['lone \udc00', 'end \ud800', 'z'],
    ];
    // A stand-in for better-sqlite3 that yields these rows (SQLite itself never returns lone surrogates).
    class FakeDb {
      readonly open = true;
      pragma(): void {}
      close(): void {}
      prepare(): { raw(): { safeIntegers(): { iterate(): Iterator<unknown[]> } } } {
        return { raw: () => ({ safeIntegers: () => ({ iterate: () => rows[Symbol.iterator]() }) }) };
      }
    }
    const read = sqliteReader(FakeDb, { file: 'x', busyTimeoutMs: 0, pragmas: [] });
    const batch = read({ op: 'open', sql: 'x', params: [], batch: 10, cols: 3, bytes: true }).reply as ReadBatch;
    const bytes = Buffer.from(batch.bytes as Uint8Array);
    const texts: string[] = [];
    let from = 0;
    for (let k = 0; k < 9; k++) {
      texts.push(bytes.toString('utf8', from, batch.ends[k]));
      from = batch.ends[k] as number;
    }
    // Each cell's bytes are its own UTF-8 (a lone surrogate becomes U+FFFD, as TextEncoder writes it).
    expect(texts).toEqual(rows.flat().map((t) => Buffer.from(new TextEncoder().encode(t)).toString('utf8')));
  });

  it('the host refuses a packed batch whose text cells point outside its text', () => {
    const good: PackedBatch = {
      rows: 1,
      fields: ['a'],
      tags: Uint8Array.of(CELL_TEXT),
      nums: Float64Array.of(0),
      ends: Uint32Array.of(2),
      text: Buffer.from('hi'),
      values: [],
    };
    expect(isPackedBatch(good)).toBe(true);
    expect(isPackedBatch({ ...good, ends: Uint32Array.of(3) })).toBe(false);
    expect(isPackedBatch({ ...good, nums: Float64Array.of(1.5) })).toBe(false);
    expect(isPackedBatch({ ...good, fields: [1] })).toBe(false);
    expect(isPackedBatch({ ...good, rows: 2 })).toBe(false);
  });
});

describe('packed batches', () => {
  let host: ConnectorHost;
  let dir: string;
  let file: string;
  let sqlite: HostConnection;

  beforeAll(async () => {
    host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    await host.loadAll();
    ({ dir, file } = await tempDb());
    const db = new Database(file);
    db.exec(DDL);
    const ins = db.prepare('INSERT INTO t VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)');
    for (const r of ROWS) ins.run(...r);
    db.exec('CREATE TABLE n (id INTEGER PRIMARY KEY, name TEXT, updated_at DATETIME)');
    const insN = db.prepare('INSERT INTO n VALUES (?, ?, ?)');
    db.transaction(() => {
      for (let i = 1; i <= 5000; i++)
        insN.run(i, i % 7 === 0 ? `név ${i} ✓` : `name ${i}`, `2024-01-01 00:00:${String(i % 60).padStart(2, '0')}`);
    })();
    db.close();
    sqlite = await host.open({
      connectorId: 'SQLite',
      connectionId: 'packed-sqlite',
      properties: { file, readerThread: 'on' },
    });
  });

  afterAll(async () => {
    await host?.close();
    if (dir) await fsp.rm(dir, { recursive: true, force: true });
  });

  it('SQLite reads the same values packed as query gives in records, for every kind of stored value', async () => {
    const { records } = await collect(
      sqlite.query('t', undefined, { batchSize: 4, orderBy: [{ field: 'id', direction: 'asc' }] }),
    );
    const batches = await packedBatches(sqlite, 't', 4);
    expect(batches.map((b) => b.rows)).toEqual([4, 2]);
    const unpacked = batches.flatMap((b) => unpackRecords(b));
    expect(unpacked).toEqual(records);
    // The cases the fast paths take and the ones the converters decide.
    expect(unpacked[0]).toMatchObject({
      amount: '12.5',
      active: true,
      updated_at: '2024-03-01T10:11:12',
      big: '9007199254740993',
    });
    expect(unpacked[1]).toMatchObject({ name: 'Zoë — ünïcödé 😀', amount: '12.5', active: false, big: -42 });
    expect(unpacked[3]).toMatchObject({
      active: true,
      updated_at: new Date(1700000000 * 1000).toISOString(),
      big: '9223372036854775807',
      data: '',
    });
    expect(unpacked[4]).toMatchObject({ updated_at: 'Zoë 10:11:12 x', free: Buffer.from('z').toString('base64') });
  });

  it('a query the session reads on its own thread is not read packed', async () => {
    const off = await host.open({
      connectorId: 'SQLite',
      connectionId: 'packed-sqlite-off',
      properties: { file, readerThread: 'off' },
    });
    expect(off.queryPacked('t', undefined, { batchSize: 4 })).toBeUndefined();
    const auto = await host.open({ connectorId: 'SQLite', connectionId: 'packed-sqlite-auto', properties: { file } });
    // Lookups (small batches) stay on the session's thread; bulk reads go packed.
    expect(auto.queryPacked('t', undefined, { batchSize: 10 })).toBeUndefined();
    expect(auto.queryPacked('t', undefined, { batchSize: 5000 })).toBeDefined();
    await off.close();
    await auto.close();
  });

  it('a query the connector does not read packed, and a connector without packed writes, are served records by the host', async () => {
    const csvDir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-packed-csv-'));
    try {
      await fsp.writeFile(path.join(csvDir, 'n.csv'), 'id,name,updated_at\n');
      const csv = await host.open({ connectorId: 'CSV', connectionId: 'packed-csv', properties: { folder: csvDir } });
      // csv reads packed, but not in an order (it sorts records).
      expect(
        csv.queryPacked('n', undefined, { batchSize: 5000, orderBy: [{ field: 'id', direction: 'asc' }] }),
      ).toBeUndefined();
      const [b] = await packedBatches(sqlite, 'n', 100);
      const results = await csv.writePacked('Create', 'n', b as PackedBatch);
      expect(results.every((r) => r.ok)).toBe(true);
      const back = (await collect(csv.query('n', undefined, { batchSize: 1000 }))).records;
      expect(back.map((r) => r['name'])).toEqual(unpackRecords(b as PackedBatch).map((r) => r['name']));
      await csv.close();
    } finally {
      await fsp.rm(csvDir, { recursive: true, force: true });
    }
  });

  describe.skipIf(!URL_SET)('into PostgreSQL', () => {
    let db: { url: string; drop: () => Promise<void> };
    let target: HostConnection;
    let client: pg.Client;

    beforeAll(async () => {
      db = await createTestDatabase();
      client = new pg.Client({ connectionString: db.url });
      await client.connect();
      target = await host.open({
        connectorId: 'PostgreSQL',
        connectionId: 'packed-pg',
        properties: { connectionString: db.url },
      });
    });

    afterAll(async () => {
      await client?.end();
      await db?.drop();
    });

    const table = async (name: string, ddl: string): Promise<void> => {
      await client.query(`DROP TABLE IF EXISTS ${name}; CREATE TABLE ${name} ${ddl}`);
    };
    const rows = async (name: string): Promise<unknown[]> =>
      (await client.query(`SELECT * FROM ${name} ORDER BY id`)).rows;
    const rows_ = rows;

    it('writes a packed batch as write writes its records: the same rows, text with every kind of character', async () => {
      const ddl = '(id integer PRIMARY KEY, name text, updated_at timestamp)';
      await table('a', ddl);
      await table('b', ddl);
      const batches = await packedBatches(sqlite, 'n', 5000);
      expect(batches).toHaveLength(1);
      const b = batches[0] as PackedBatch;
      const packed = await target.writePacked('Create', 'a', b);
      const plain = await target.write('Create', 'b', unpackRecords(b));
      expect(packed).toEqual(plain);
      expect(packed.every((r) => r.ok)).toBe(true);
      const a = await rows('a');
      expect(a).toHaveLength(5000);
      expect(a).toEqual(await rows('b'));
      expect(a[6]).toMatchObject({ id: 7, name: 'név 7 ✓' });
    });

    it('a batch the server refuses in part gets the per-row results write gives, and the same rows are written', async () => {
      const ddl = '(id integer PRIMARY KEY, name text NOT NULL, updated_at timestamp, CHECK (id % 10 <> 0))';
      await table('c', ddl);
      await table('d', ddl);
      const [b] = await packedBatches(sqlite, 'n', 5000);
      const packed = await target.writePacked('Create', 'c', b as PackedBatch);
      const plain = await target.write('Create', 'd', unpackRecords(b as PackedBatch));
      const failedIds = (rs: WriteResult[]): number[] => rs.flatMap((r, i) => (r.ok ? [] : [i + 1]));
      expect(failedIds(packed)).toEqual(failedIds(plain));
      expect(failedIds(packed)).toHaveLength(500);
      // The same refusal but for the table's name.
      const refusal = (rs: WriteResult[]): unknown => {
        const r = rs.find((x) => !x.ok);
        return r && !r.ok
          ? {
              ...r,
              error: {
                ...r.error,
                message: r.error.message.replace(/"[cd]"/, '"T"').replace(/"[cd]_id_check"/, '"T_id_check"'),
              },
            }
          : r;
      };
      expect(refusal(packed)).toEqual(refusal(plain));
      expect(refusal(packed)).toMatchObject({ ok: false, error: { code: 'ConstraintViolation', nativeCode: '23514' } });
      expect(await rows('c')).toEqual(await rows('d'));
    });

    it('an Upsert whose keys exist falls back to the staged upsert: rows updated, none doubled', async () => {
      await table('u', '(id integer PRIMARY KEY, name text, updated_at timestamp)');
      await client.query(`INSERT INTO u SELECT g, 'old', NULL FROM generate_series(1, 100) g`);
      const [b] = await packedBatches(sqlite, 'n', 5000);
      const results = await target.writePacked('Upsert', 'u', b as PackedBatch);
      expect(results.every((r) => r.ok)).toBe(true);
      const { rows: counts } = await client.query<{ n: string; old: string }>(
        `SELECT count(*) AS n, count(*) FILTER (WHERE name = 'old') AS old FROM u`,
      );
      expect(counts[0]).toEqual({ n: '5000', old: '0' });
      // A second time every key exists.
      const again = await target.writePacked('Upsert', 'u', b as PackedBatch);
      expect(again.every((r) => r.ok)).toBe(true);
      expect((await client.query<{ n: string }>('SELECT count(*) AS n FROM u')).rows[0]?.n).toBe('5000');
    });

    it('a field the table does not have fails each row as write does', async () => {
      await table('e', '(id integer PRIMARY KEY, name text)');
      const [b] = await packedBatches(sqlite, 'n', 5000);
      const results: WriteResult[] = await target.writePacked('Create', 'e', b as PackedBatch);
      expect(results).toHaveLength(5000);
      expect(results[0]).toMatchObject({ ok: false, error: { code: 'UnknownField', field: 'updated_at' } });
      expect((await rows('e')).length).toBe(0);
    });

    it('a value without a binary form late in a large batch abandons the streamed COPY, and the text format writes every row', async () => {
      await table('f', '(id integer PRIMARY KEY, name text, updated_at timestamptz)');
      await table('g', '(id integer PRIMARY KEY, name text, updated_at timestamptz)');
      // A stamp with an offset: the binary writers leave it to the server's text input.
      const rows = Array.from({ length: 20_000 }, (_, i) => ({
        id: i + 1,
        name: `r${i + 1}`,
        updated_at: i === 19_990 ? '2024-05-06T07:08:09+02:00' : '2024-05-06T07:08:09Z',
      }));
      expect((await target.write('Create', 'f', rows)).every((r) => r.ok)).toBe(true);
      const { rows: f } = await client.query<{ n: string; tz: string }>(
        `SELECT count(*) AS n, max(updated_at)::text AS tz FROM f`,
      );
      expect(f[0]).toEqual({ n: '20000', tz: '2024-05-06 07:08:09+00' });
      expect(
        (await client.query<{ tz: string }>(`SELECT updated_at::text AS tz FROM f WHERE id = 19991`)).rows[0]?.tz,
      ).toBe('2024-05-06 05:08:09+00');
      // The same from a packed batch.
      const dbFile = new Database(file);
      dbFile.exec(`CREATE TABLE z (id INTEGER PRIMARY KEY, name TEXT, updated_at DATETIME)`);
      const ins = dbFile.prepare('INSERT INTO z VALUES (?, ?, ?)');
      dbFile.transaction(() => {
        for (const r of rows) ins.run(r.id, r.name, r.updated_at);
      })();
      dbFile.close();
      for (const b of await packedBatches(sqlite, 'z', 10_000))
        expect((await target.writePacked('Create', 'g', b)).every((r) => r.ok)).toBe(true);
      expect(await rows_('g')).toEqual(await rows_('f'));
    });

    it('records of the values written match the source', async () => {
      const [b] = await packedBatches(sqlite, 'n', 5000);
      const recs: ConnectorRecord[] = unpackRecords(b as PackedBatch);
      expect(recs[41]).toEqual({ id: 42, name: 'név 42 ✓', updated_at: '2024-01-01T00:00:42' });
    });
  });
});
