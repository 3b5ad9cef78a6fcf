import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection } from '../../src/connectors/connection.js';
import type { Value } from '../../src/connectors/sdk.js';
import { CONNECTORS_DIR, PEOPLE, PEOPLE_FIELDS, collect, runConformance } from './conformance.js';
import { ReadThread, WriteThread } from '../../connectors/sqlite/thread.js';
import { RECORD_SQLITE_CODES } from '../../connectors/sqlite/errors.js';

const PEOPLE_DDL = `CREATE TABLE people (
  id INTEGER PRIMARY KEY, name TEXT NOT NULL, email VARCHAR(100), score REAL, balance DECIMAL(12,2),
  active BOOLEAN, born DATE, updated_at DATETIME, big BIGINT)`;

/** SQLite binds no booleans and no integers beyond 2^53 as numbers: the fixture converts them itself. */
function bind(v: Value | undefined, field: string): number | bigint | string | null {
  if (v === undefined || v === null) return null;
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (field === 'big' || field === 'id') return BigInt(v);
  return v;
}

async function tempDb(): Promise<{ dir: string; file: string }> {
  const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-sqlite-'));
  return { dir, file: path.join(dir, 'test.db') };
}

/** A host with the plugins, a database file made by `ddl`, and a Connection to it with `properties`. */
async function openFixture(
  ddl: string,
  connectionId: string,
  properties: Record<string, string> = {},
): Promise<{ host: ConnectorHost; dir: string; file: string; conn: HostConnection }> {
  const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
  await host.loadAll();
  const { dir, file } = await tempDb();
  const db = new Database(file);
  db.exec(ddl);
  db.close();
  const conn = await host.open({ connectorId: 'SQLite', connectionId, properties: { file, ...properties } });
  return { host, dir, file, conn };
}

/** The conformance suite once as configured by default and once with every write and query in the session's threads. */
for (const threads of ['auto', 'on'] as const) {
  runConformance({
    connector: 'SQLite',
    ...(threads === 'on' ? { label: 'writer and reader threads' } : {}),
    async setup() {
      const { dir, file } = await tempDb();
      const db = new Database(file);
      db.exec(PEOPLE_DDL);
      const names = PEOPLE_FIELDS.map((f) => f.name);
      const ins = db.prepare(`INSERT INTO people (${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')})`);
      for (const p of PEOPLE) ins.run(...names.map((n) => bind(p[n], n)));
      db.close();
      return {
        properties: { file, writerThread: threads, readerThread: threads },
        cleanup: () => fsp.rm(dir, { recursive: true, force: true }),
      };
    },
    async createLarge(properties, rows) {
      const db = new Database(properties['file']);
      db.exec(`CREATE TABLE big (id INTEGER PRIMARY KEY, payload TEXT);
        WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ${rows})
        INSERT INTO big SELECT i, printf('%.90c%d', 'x', i) FROM n;`);
      db.close();
    },
    enforcesUniqueKeys: true,
    nativeQuery: { statement: 'SELECT id, name FROM people WHERE id > ? ORDER BY id', params: [4] },
    ensureEntity: true,
    interrupt: {
      properties: { busyTimeoutMs: '50' },
      // Another process holds the file's write lock until the write has given up.
      async during(properties, write) {
        const other = new Database(properties['file']);
        other.exec('BEGIN EXCLUSIVE');
        try {
          const [outcome] = await Promise.allSettled([write()]);
          return outcome;
        } finally {
          other.exec('ROLLBACK');
          other.close();
        }
      },
    },
  });
}

describe('sqlite connector', () => {
  let host: ConnectorHost;
  let dir: string;
  let file: string;
  let conn: HostConnection;

  beforeAll(async () => {
    ({ host, dir, file, conn } = await openFixture(
      `
      CREATE TABLE customers (id INTEGER PRIMARY KEY, "Full Name" TEXT NOT NULL, email TEXT UNIQUE, created DATETIME DEFAULT CURRENT_TIMESTAMP);
      CREATE TABLE orders (order_no INTEGER, line INTEGER, customer_id INTEGER REFERENCES customers(id), total NUMERIC(10,2), PRIMARY KEY (order_no, line));
      CREATE TABLE shipments (id INTEGER PRIMARY KEY, order_no INTEGER, line INTEGER, FOREIGN KEY (order_no, line) REFERENCES orders (order_no, line));
      CREATE TABLE notes (body TEXT, tag TEXT);
      CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
      INSERT INTO customers (id, "Full Name", email, created) VALUES (1, 'Ann', 'ann@x', '2024-01-02 03:04:05');
    `,
      'sqlite-own',
    ));
  });
  afterAll(async () => {
    await host.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('matches the catalogue: tables, views, columns, keys and foreign keys as relationships', async () => {
    const md = await conn.metadata();
    const db = new Database(file, { readonly: true });
    const tables = db
      .prepare(
        "SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name",
      )
      .pluck()
      .all() as string[];
    expect(md.entities.map((e) => e.originalName)).toEqual(tables);
    for (const e of md.entities) {
      const cols = db.prepare('SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid').all(e.originalName) as {
        name: string;
        type: string;
        pk: number;
      }[];
      expect(e.fields.map((f) => [f.originalName, f.nativeType, f.isPrimaryKey])).toEqual(
        cols.map((c) => [c.name, c.type, c.pk > 0]),
      );
    }
    db.close();
    const customers = md.entities.find((e) => e.fullName === 'customers');
    expect(customers?.fields.map((f) => f.fullName)).toEqual(['id', 'Full_Name', 'email', 'created']);
    expect(customers?.fields.find((f) => f.fullName === 'created')?.hasDefault).toBe(true);
    const shipments = md.entities.find((e) => e.fullName === 'shipments');
    expect(shipments?.relationships).toEqual([
      expect.objectContaining({
        relationshipType: 'ManyToOne',
        thisEntityFullName: 'shipments',
        relatedEntityFullName: 'orders',
        thisProperties: ['order_no', 'line'],
        relatedProperties: ['order_no', 'line'],
        path: 'shipments.orders',
      }),
    ]);
    const orders = md.entities.find((e) => e.fullName === 'orders');
    expect(orders?.relationships.map((r) => [r.relationshipType, r.relatedEntityFullName])).toEqual(
      expect.arrayContaining([
        ['ManyToOne', 'customers'],
        ['OneToMany', 'shipments'],
      ]),
    );
    expect(orders?.fields.filter((f) => f.isPrimaryKey).map((f) => f.fullName)).toEqual(['order_no', 'line']);
    expect(md.entities.find((e) => e.fullName === 'big_orders')?.actions.map((a) => a.action)).toEqual(['Query']);
  });

  it('reads datetimes stored by SQLite itself as ISO-8601', async () => {
    const { records } = await collect(conn.query('customers'));
    expect(records[0]).toMatchObject({ id: 1, Full_Name: 'Ann', created: '2024-01-02T03:04:05' });
  });

  it('returns the rowid key of created records and reports constraint failures per record', async () => {
    const res = await conn.write('Create', 'customers', [
      { Full_Name: 'Bob' },
      { Full_Name: 'Cy', email: 'ann@x' },
      { email: 'no-name@x' },
      { id: 1, Full_Name: 'Dup' },
    ]);
    expect(res[0]).toMatchObject({ ok: true, affected: 1, key: { id: 2 } });
    expect(res.slice(1).map((r) => !r.ok && [r.error.code, r.error.nativeCode])).toEqual([
      ['DuplicateKey', 'SQLITE_CONSTRAINT_UNIQUE'],
      ['ConstraintViolation', 'SQLITE_CONSTRAINT_NOTNULL'],
      ['DuplicateKey', 'SQLITE_CONSTRAINT_PRIMARYKEY'],
    ]);
    const fk = await conn.write('Create', 'orders', [
      { order_no: 1, line: 1, customer_id: 1, total: '150.00' },
      { order_no: 1, line: 2, customer_id: 99, total: 5 },
    ]);
    expect(fk.map((r) => (r.ok ? 'ok' : r.error.code))).toEqual(['ok', 'ConstraintViolation']);
  });

  it('writes by a composite key and refuses writes to views', async () => {
    expect(await conn.write('Update', 'orders', [{ order_no: 1, line: 1, total: '175.50' }])).toEqual([
      { ok: true, affected: 1 },
    ]);
    const { records } = await collect(conn.query('big_orders'));
    expect(records).toEqual([{ order_no: 1, line: 1, customer_id: 1, total: '175.5' }]);
    await expect(conn.write('Create', 'big_orders', [{ order_no: 2, line: 1 }])).rejects.toMatchObject({
      code: 'CON_UNSUPPORTED',
    });
  });

  it('refuses an Upsert whose key has no unique constraint with CON_QUERY_INVALID, and needs a key on keyless tables', async () => {
    await expect(
      conn.write('Upsert', 'notes', [{ body: 'x', tag: 'a' }], { keyFields: ['tag'] }),
    ).rejects.toMatchObject({ code: 'CON_QUERY_INVALID' });
    await expect(conn.write('Delete', 'notes', [{ tag: 'a' }])).rejects.toMatchObject({ code: 'CON_UNSUPPORTED' });
    expect(
      await conn.write('Create', 'notes', [
        { body: 'x', tag: 'a' },
        { body: 'y', tag: 'a' },
      ]),
    ).toHaveLength(2);
    expect(await conn.write('Delete', 'notes', [{ tag: 'a' }], { keyFields: ['tag'] })).toEqual([
      { ok: true, affected: 2 },
    ]);
  });

  it('runs writing native statements and reports their row count', async () => {
    const { records } = await collect(conn.nativeQuery('UPDATE customers SET email = ? WHERE id = ?', ['bob@x', 2]));
    expect(records).toEqual([{ affected: 1 }]);
    await expect(collect(conn.nativeQuery('SELEC nonsense'))).rejects.toMatchObject({ code: 'CON_QUERY_INVALID' });
  });

  it('runs a write inside a transaction a native statement opened, as a savepoint of it', async () => {
    await collect(conn.nativeQuery('BEGIN'));
    const res = await conn.write('Create', 'notes', [
      { body: 'inside', tag: 'tx' },
      { body: 'inside too', tag: 'tx' },
    ]);
    expect(res.every((r) => r.ok)).toBe(true);
    await collect(conn.nativeQuery('ROLLBACK'));
    const { records } = await collect(conn.query('notes', { op: '=', field: 'tag', value: 'tx' }));
    expect(records).toEqual([]);
  });

  it('reports a missing database file as CON_UNREACHABLE and a non-database as CON_PROPERTIES_INVALID', async () => {
    await expect(
      host.open({
        connectorId: 'SQLite',
        connectionId: 'sqlite-missing',
        properties: { file: path.join(dir, 'nope.db') },
      }),
    ).rejects.toMatchObject({ code: 'CON_UNREACHABLE' });
    const junk = path.join(dir, 'junk.db');
    await fsp.writeFile(junk, 'this is not a database, just some text that is long enough to have a header');
    await expect(
      host.open({ connectorId: 'SQLite', connectionId: 'sqlite-junk', properties: { file: junk } }),
    ).rejects.toMatchObject({ code: 'CON_PROPERTIES_INVALID' });
  });
});

describe('sqlite writer thread', () => {
  let host: ConnectorHost;
  let dir: string;
  let file: string;
  let conn: HostConnection;

  beforeAll(async () => {
    // auto: batches of 1000 records or more go to the thread, in parts of 1000 (the first 250).
    ({ host, dir, file, conn } = await openFixture(
      `
      CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, price DECIMAL(10,2), code TEXT UNIQUE, at DATETIME);
      CREATE TABLE guarded (id INTEGER PRIMARY KEY, name TEXT);
      CREATE TRIGGER guarded_poison BEFORE INSERT ON guarded WHEN NEW.name = 'poison' BEGIN SELECT RAISE(ROLLBACK, 'poisoned'); END;
    `,
      'sqlite-thread',
      { journalMode: 'WAL' },
    ));
  });
  afterAll(async () => {
    await host.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('writes a batch of several parts in order, failing exactly the bad records of every part', async () => {
    const batch: Record<string, Value>[] = Array.from({ length: 4500 }, (_, i) => ({
      id: i + 1,
      name: `item ${i + 1}`,
      price: `${i}.25`,
      code: `c${i + 1}`,
      at: '2024-05-06T07:08:09Z',
    }));
    batch[10] = { id: 11, name: 'bad price', price: 'twelve' }; // part 1: refused before SQLite
    batch[1700] = { id: 1701, name: 'dup code', code: 'c5' }; // part 2: UNIQUE
    batch[3999] = { id: 4000, price: '1.00' }; // part 4: NOT NULL
    const res = await conn.write('Create', 'items', batch);
    expect(res).toHaveLength(4500);
    const failures = res.flatMap((r, i) => (r.ok ? [] : [[i, r.error.code]]));
    expect(failures).toEqual([
      [10, 'InvalidValue'],
      [1700, 'DuplicateKey'],
      [3999, 'ConstraintViolation'],
    ]);
    const db = new Database(file, { readonly: true });
    try {
      expect(db.prepare('SELECT count(*) AS n, sum(id) AS s FROM items').get()).toEqual({
        n: 4497,
        s: (4500 * 4501) / 2 - 11 - 1701 - 4000,
      });
      // Stored as the same classes an in-thread write stores: decimals as numbers, datetimes as text.
      expect(db.prepare('SELECT typeof(price) AS p, price, typeof(at) AS a, at FROM items WHERE id = 3').get()).toEqual(
        { p: 'real', price: 2.25, a: 'text', at: '2024-05-06T07:08:09Z' },
      );
    } finally {
      db.close();
    }
  });

  it('returns generated rowids in record order across parts', async () => {
    const res = await conn.write(
      'Create',
      'guarded',
      Array.from({ length: 2100 }, (_, i) => ({ name: `g${i}` })),
    );
    const keys = res.map((r) => (r.ok ? r.key?.['id'] : undefined));
    expect(keys).toEqual(Array.from({ length: 2100 }, (_, i) => i + 1));
  });

  it('undoes every part of a batch that fails as a whole (a trigger ends the transaction), and writes the next batch', async () => {
    const batch = Array.from({ length: 3000 }, (_, i) => ({ id: 10_000 + i, name: i === 2500 ? 'poison' : `p${i}` }));
    await expect(conn.write('Create', 'guarded', batch)).rejects.toMatchObject({
      code: expect.stringMatching(/^CON_/),
    });
    const count = (): number => {
      const db = new Database(file, { readonly: true });
      try {
        return (db.prepare('SELECT count(*) AS n FROM guarded WHERE id >= 10000').get() as { n: number }).n;
      } finally {
        db.close();
      }
    };
    expect(count()).toBe(0);
    const next = await conn.write(
      'Create',
      'guarded',
      batch.map((r) => ({ ...r, name: r.name === 'poison' ? 'cured' : r.name })),
    );
    expect(next.every((r) => r.ok)).toBe(true);
    expect(count()).toBe(3000);
  });

  it('keeps a bulk write inside a transaction a native statement opened, and later writes on the connection that statement set up', async () => {
    await collect(conn.nativeQuery('BEGIN'));
    const inside = await conn.write(
      'Create',
      'guarded',
      Array.from({ length: 1200 }, (_, i) => ({ id: 50_000 + i, name: `tx${i}` })),
    );
    expect(inside.every((r) => r.ok)).toBe(true);
    await collect(conn.nativeQuery('ROLLBACK'));
    const { records } = await collect(conn.query('guarded', { op: '>=', field: 'id', value: 50_000 }));
    expect(records).toEqual([]);
    // A temporary trigger exists on this connection only: bulk writes after it must still meet it.
    await collect(
      conn.nativeQuery(
        "CREATE TEMP TRIGGER guarded_tag BEFORE INSERT ON guarded WHEN NEW.name = 'tagged' BEGIN SELECT RAISE(ABORT, 'tagged'); END",
      ),
    );
    const after = await conn.write(
      'Create',
      'guarded',
      Array.from({ length: 1200 }, (_, i) => ({ id: 60_000 + i, name: i === 700 ? 'tagged' : `t${i}` })),
    );
    expect(after.flatMap((r, i) => (r.ok ? [] : [[i, r.error.code]]))).toEqual([[700, 'ConstraintViolation']]);
  });

  it('cuts a batch whose text would not fit one string into several parts of its transaction', async () => {
    const big = 'x'.repeat(1_000_000);
    const batch = Array.from({ length: 40 }, (_, i) => ({ id: 70_000 + i, name: `${big}${i}` }));
    const res = await conn.write('Create', 'guarded', batch);
    expect(res.every((r) => r.ok)).toBe(true);
    const db = new Database(file, { readonly: true });
    try {
      expect(
        db
          .prepare('SELECT count(*) AS n, sum(length(name)) AS len FROM guarded WHERE id >= 70000 AND id < 70040')
          .get(),
      ).toEqual({ n: 40, len: 40 * 1_000_000 + 10 + 30 * 2 });
    } finally {
      db.close();
    }
  });

  it('runs Upsert, Update and Delete batches in the thread with their counts', async () => {
    const up = await conn.write(
      'Upsert',
      'items',
      Array.from({ length: 1200 }, (_, i) => ({ id: i + 1, name: `renamed ${i + 1}` })),
    );
    expect(up.every((r) => r.ok)).toBe(true);
    const upd = await conn.write(
      'Update',
      'items',
      Array.from({ length: 1000 }, (_, i) => ({ id: i + 4001, price: '9.99' })),
    );
    // ids 4001–4500 exist, 4501–5000 do not.
    expect(upd.filter((r) => r.ok).length).toBe(500);
    expect(upd.slice(500).every((r) => !r.ok && r.error.code === 'NotFound')).toBe(true);
    const del = await conn.write(
      'Delete',
      'items',
      Array.from({ length: 1000 }, (_, i) => ({ id: i + 1 })),
    );
    expect(del.every((r) => r.ok && r.affected === 1)).toBe(true);
    expect(await conn.write('Delete', 'items', [{ id: 1 }])).toMatchObject([
      { ok: false, error: { code: 'NotFound' } },
    ]);
    const { records } = await collect(conn.query('items', { op: '<=', field: 'id', value: 1200 }));
    expect(records.map((r) => [r['id'], r['name']])).toEqual(
      Array.from({ length: 200 }, (_, i) => [i + 1001, `renamed ${i + 1001}`]),
    );
  });
});

describe('sqlite writer thread: a failed batch', () => {
  it('has every part answered before the call fails, so the session closes at once', async () => {
    const { host, dir, conn } = await openFixture(
      `CREATE TABLE g (id INTEGER PRIMARY KEY, name TEXT);
       CREATE TRIGGER g_poison BEFORE INSERT ON g WHEN NEW.name = 'poison' BEGIN SELECT RAISE(ROLLBACK, 'poisoned'); END;`,
      'sqlite-thread-fail',
    );
    // The first part (256 records) fails; the five parts after it are already in the thread's queue.
    const batch = Array.from({ length: 5000 }, (_, i) => ({ id: i + 1, name: i === 10 ? 'poison' : `n${i}` }));
    await expect(conn.write('Create', 'g', batch)).rejects.toMatchObject({ code: expect.stringMatching(/^CON_/) });
    const closed = host.close().then(() => 'closed');
    expect(await Promise.race([closed, new Promise((r) => setTimeout(() => r('still open'), 5000))])).toBe('closed');
    await fsp.rm(dir, { recursive: true, force: true });
  });
});

describe('sqlite WriteThread', () => {
  const job = {
    begin: true,
    commit: true,
    action: 'Create' as const,
    chunks: [],
    tags: new Uint8Array(0),
    nums: new Float64Array(0),
    text: '',
    ends: new Uint32Array(0),
    others: [],
  };

  it('reports a database it cannot open on the first job, with the SQLite code, and is then not alive', async () => {
    const { dir, file } = await tempDb();
    const t = new WriteThread({ file, busyTimeoutMs: 0, pragmas: [], recordCodes: RECORD_SQLITE_CODES });
    await expect(t.run(job)).rejects.toMatchObject({ code: 'SQLITE_CANTOPEN' });
    expect(t.alive).toBe(false);
    await t.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('fails the jobs of a closed thread instead of waiting for them', async () => {
    const { dir, file } = await tempDb();
    new Database(file).close();
    const t = new WriteThread({
      file,
      busyTimeoutMs: 0,
      pragmas: ['journal_mode = WAL'],
      recordCodes: RECORD_SQLITE_CODES,
    });
    expect((await t.run(job)).status).toHaveLength(0);
    await t.close();
    expect(t.alive).toBe(false);
    await expect(t.run(job)).rejects.toThrow(/closed|stopped/);
    await fsp.rm(dir, { recursive: true, force: true });
  });
});

describe('sqlite reader thread', () => {
  const DDL = `CREATE TABLE vals (id INTEGER PRIMARY KEY, i BIGINT, r REAL, d DECIMAL(30,10), t TEXT, b BLOB, f BOOLEAN, at DATETIME, anything);
    CREATE TABLE many (id INTEGER PRIMARY KEY, name TEXT);
    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 5000) INSERT INTO many SELECT i, 'name ' || i FROM n;`;
  // Every storage class in columns of every property type, including values a column's type does not suggest.
  const ROWS = `INSERT INTO vals VALUES
    (1, 9223372036854775807, 1.5, '12345678901234567890.0123456789', 'plain', x'00ff10', 1, '2024-01-02 03:04:05', 42),
    (2, -9223372036854775808, -0.0, 0.1, 'ünïcödé 🚀 and a NUL: ' || char(0) || '.', x'', 0, 1700000000, 'text'),
    (3, 9007199254740993, 1e300, 9007199254740993, '', NULL, 'yes', '2024-01-02T03:04:05.123Z', x'cafe'),
    (4, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
    (5, 'not a number', 'nan?', 'x', 7, 2.25, 2, 1.5, 9007199254740991)`;
  let host: ConnectorHost;
  let dir: string;
  let file: string;
  let inThread: HostConnection;
  let onSession: HostConnection;

  beforeAll(async () => {
    ({
      host,
      dir,
      file,
      conn: inThread,
    } = await openFixture(`${DDL}; ${ROWS};`, 'sqlite-reader-on', { readerThread: 'on' }));
    onSession = await host.open({
      connectorId: 'SQLite',
      connectionId: 'sqlite-reader-off',
      properties: { file, readerThread: 'off' },
    });
  });
  afterAll(async () => {
    await host.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it('gives exactly the records a query on the session thread gives, for every storage class and property type', async () => {
    const off = await collect(onSession.query('vals', undefined, { batchSize: 2 }));
    const on = await collect(inThread.query('vals', undefined, { batchSize: 2 }));
    expect(on.batches).toEqual([2, 2, 1]);
    expect(on.records).toEqual(off.records);
    // Spot checks that the comparison covers what matters: exact big integers, blobs, text with NUL.
    expect(on.records[0]).toMatchObject({ i: '9223372036854775807', b: 'AP8Q' });
    expect(on.records[1]?.['t']).toBe('ünïcödé 🚀 and a NUL: \u0000.');
    expect(on.records[2]).toMatchObject({ i: '9007199254740993', anything: 'yv4=' });
  });

  it('reads a large table in order, batch by batch, with filters', async () => {
    const all = await collect(inThread.query('many', undefined, { batchSize: 1000 }));
    expect(all.batches).toEqual([1000, 1000, 1000, 1000, 1000]);
    expect(all.records.map((r) => r['id'])).toEqual(Array.from({ length: 5000 }, (_, i) => i + 1));
    const some = await collect(inThread.query('many', { op: '>', field: 'id', value: 4990 }, { batchSize: 1000 }));
    expect(some.records.map((r) => r['name'])).toEqual(Array.from({ length: 10 }, (_, i) => `name ${4991 + i}`));
  });

  it('releases the statement and its connection when the reader stops early', async () => {
    // Rollback-journal mode: a statement left open would hold a shared lock and block this commit.
    for await (const batch of inThread.query('many', undefined, { batchSize: 1000 })) {
      expect(batch).toHaveLength(1000);
      break;
    }
    const db = new Database(file, { timeout: 0 });
    try {
      expect(() => db.prepare("UPDATE many SET name = 'changed' WHERE id = 1").run()).not.toThrow();
    } finally {
      db.close();
    }
  });

  it('ends a batch early once its text passes 32 M characters, and reads on', async () => {
    const db = new Database(file);
    db.exec(`CREATE TABLE wide (id INTEGER PRIMARY KEY, body TEXT);
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 70) INSERT INTO wide SELECT i, printf('%.600000c', 'w') FROM n;`);
    db.close();
    await inThread.metadata({ reload: true });
    const first = Math.ceil((1 << 25) / 600_000);
    const { records, batches } = await collect(inThread.query('wide', undefined, { batchSize: 1000 }));
    expect(batches).toEqual([first, 70 - first]);
    expect(records.map((r) => r['id'])).toEqual(Array.from({ length: 70 }, (_, i) => i + 1));
    expect(records.every((r) => r['body'] === 'w'.repeat(600_000))).toBe(true);
  });

  it('keeps text exact when a batch turns from Latin-1 to wider characters and outgrows its first buffer', async () => {
    const db = new Database(file);
    db.exec(`CREATE TABLE mixed (id INTEGER PRIMARY KEY, body TEXT);
      WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000)
      INSERT INTO mixed SELECT i, CASE WHEN i <= 1500 THEN printf('café %d %.30c', i, 'x') ELSE printf('🚀 ünï €%d %.30c', i, 'y') END FROM n;`);
    db.close();
    await inThread.metadata({ reload: true });
    await onSession.metadata({ reload: true });
    const on = await collect(inThread.query('mixed', undefined, { batchSize: 3000 }));
    const off = await collect(onSession.query('mixed', undefined, { batchSize: 3000 }));
    expect(on.batches).toEqual([3000]);
    expect(on.records).toEqual(off.records);
    expect(on.records[0]?.['body']).toBe(`café 1 ${'x'.repeat(30)}`);
    expect(on.records[2999]?.['body']).toBe(`🚀 ünï €3000 ${'y'.repeat(30)}`);
  });

  it('runs two queries of one session side by side', async () => {
    const a = inThread.query('many', undefined, { batchSize: 1000 })[Symbol.asyncIterator]();
    const b = inThread.query('vals', undefined, { batchSize: 1000 })[Symbol.asyncIterator]();
    const firstA = await a.next();
    const allB = await b.next();
    let restA = 0;
    for (let r = await a.next(); !r.done; r = await a.next()) restA += r.value.length;
    expect(firstA.value).toHaveLength(1000);
    expect(allB.value).toHaveLength(5);
    expect(restA).toBe(4000);
  });

  it('reports a statement that fails in the thread as the query error the session thread gives', async () => {
    const db = new Database(file);
    db.exec('CREATE TABLE doomed (id INTEGER PRIMARY KEY)');
    db.close();
    await inThread.metadata({ reload: true });
    const d = new Database(file);
    d.exec('DROP TABLE doomed');
    d.close();
    await expect(collect(inThread.query('doomed', undefined, { batchSize: 1000 }))).rejects.toMatchObject({
      code: 'CON_QUERY_INVALID',
    });
  });
});

describe('sqlite reader thread, disconnected under a query', () => {
  it('ends the open query with CON_ABORTED, not a plugin failure, and a new session reads again', async () => {
    const { host, dir, file, conn } = await openFixture(
      `CREATE TABLE many (id INTEGER PRIMARY KEY, name TEXT);
       WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 3000) INSERT INTO many SELECT i, 'name ' || i FROM n;`,
      'sqlite-reader-disconnect',
      { readerThread: 'on' },
    );
    try {
      const it = conn.query('many', undefined, { batchSize: 1000 })[Symbol.asyncIterator]();
      expect((await it.next()).value).toHaveLength(1000);
      await conn.close();
      await expect(it.next()).rejects.toMatchObject({
        code: 'CON_ABORTED',
        message: expect.stringMatching(/disconnected/),
      });
      const again = await host.open({
        connectorId: 'SQLite',
        connectionId: 'sqlite-reader-disconnect-2',
        properties: { file, readerThread: 'on' },
      });
      expect((await collect(again.query('many', undefined, { batchSize: 1000 }))).records).toHaveLength(3000);
    } finally {
      await host.close();
      await fsp.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('sqlite ReadThread', () => {
  it('reports a database it cannot open on the first query, with the SQLite code, and is then not alive', async () => {
    const { dir, file } = await tempDb();
    const t = new ReadThread({ file, busyTimeoutMs: 0, pragmas: [] });
    await expect(t.open('SELECT 1', [], 10, 1)).rejects.toMatchObject({ code: 'SQLITE_CANTOPEN' });
    expect(t.alive).toBe(false);
    await t.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });
});
