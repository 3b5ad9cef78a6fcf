import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import mysql from 'mysql2/promise';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorHost } from '../../src/connectors/host.js';
import { sharedModulesDir, unpackFiles, writeFiles } from '../../src/connectors/package.js';
import { ConnectorCatalogue } from '../../service/marketplace/catalogue.js';
import { PackageStore } from '../../service/marketplace/package-store.js';
import type { HostConnection } from '../../src/connectors/connection.js';
import { packRecords, type ConnectorRecord, type Value, type WriteResult } from '../../src/connectors/sdk.js';
import { createMariaDatabase, MARIADB_SKIP, type MariaTestDatabase } from '../helpers/mariadb.js';
import { CONNECTORS_DIR, PEOPLE, PEOPLE_FIELDS, collect, runConformance } from './conformance.js';

const PEOPLE_DDL = `CREATE TABLE people (
  id int PRIMARY KEY, name text NOT NULL, email varchar(100), score double, balance decimal(12,2),
  active boolean, born date, updated_at datetime(6), big bigint) ENGINE=InnoDB`;

/** A value of PEOPLE as the server takes it natively (datetimes as UTC wall time). */
const native = (v: Value | undefined): unknown =>
  typeof v === 'string' && /^\d{4}-\d{2}-\d{2}T.*Z$/.test(v) ? v.slice(0, -1).replace('T', ' ') : (v ?? null);

async function seedPeople(db: MariaTestDatabase): Promise<void> {
  await db.exec(PEOPLE_DDL);
  const names = PEOPLE_FIELDS.map((f) => f.name);
  for (const p of PEOPLE)
    await db.exec(
      `INSERT INTO people (${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')})`,
      names.map((n) => native(p[n])),
    );
}

const dbs = new Map<string, MariaTestDatabase>();

runConformance({
  connector: 'MariaDB',
  ...(MARIADB_SKIP ? { skip: MARIADB_SKIP } : {}),
  async setup() {
    const db = await createMariaDatabase();
    dbs.set(db.name, db);
    await seedPeople(db);
    return { properties: db.properties, cleanup: db.drop };
  },
  async createLarge(properties, rows) {
    const db = dbs.get(properties['database'] as string) as MariaTestDatabase;
    await db.exec(`CREATE TABLE big (id int PRIMARY KEY, payload text)`);
    await db.exec(
      `SET SESSION max_recursive_iterations = 100000000; INSERT INTO big WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
       SELECT n, CONCAT(REPEAT('x', 90), n) FROM g`,
      [rows],
    );
  },
  enforcesUniqueKeys: true,
  nativeQuery: { statement: 'SELECT id, name FROM people WHERE id > ? ORDER BY id', params: [4] },
  ensureEntity: true,
  interrupt: {
    // The write's session is killed (as by a failover or an administrator) while a table lock holds it.
    async during(properties, write) {
      const db = dbs.get(properties['database'] as string) as MariaTestDatabase;
      const opts = {
        host: properties['host'] as string,
        port: Number(properties['port']),
        user: properties['user'] as string,
        database: db.name,
      };
      const locker = await mysql.createConnection(opts);
      const admin = await mysql.createConnection(opts);
      try {
        await locker.query('LOCK TABLES people WRITE');
        const call = write();
        call.catch(() => undefined);
        let waiting: number | undefined;
        for (let i = 0; i < 400 && waiting === undefined; i++) {
          const [rows] = await admin.query(
            `SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ? AND STATE LIKE 'Waiting for table%' AND ID <> ?`,
            [db.name, locker.threadId],
          );
          waiting = (rows as { id: number }[])[0]?.id;
          if (waiting === undefined) await new Promise((resolve) => setTimeout(resolve, 25));
        }
        expect(waiting, 'the write waits on the lock').toBeDefined();
        await admin.query(`KILL CONNECTION ${Number(waiting)}`);
        const [outcome] = await Promise.allSettled([call]);
        return outcome;
      } finally {
        await locker.query('UNLOCK TABLES').catch(() => undefined);
        await locker.end();
        await admin.end();
      }
    },
  },
});

describe.skipIf(Boolean(MARIADB_SKIP))('mariadb connector', () => {
  let host: ConnectorHost;
  let db: MariaTestDatabase;
  let conn: HostConnection;

  beforeAll(async () => {
    host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    await host.loadAll();
    db = await createMariaDatabase();
    await db.exec(`
      CREATE TABLE customers (id bigint AUTO_INCREMENT PRIMARY KEY COMMENT 'the key', \`Full Name\` varchar(80) NOT NULL,
        email varchar(120) UNIQUE COMMENT 'where to write', mood enum('happy','sad'), doc json, photo blob, uid uuid,
        seen timestamp(3) NULL, amount decimal(10,2), flag bit(1), tiny tinyint, u bigint unsigned,
        total_x2 decimal(11,2) AS (amount * 2) VIRTUAL) COMMENT 'people who buy';
      CREATE TABLE orders (order_no int, line int, customer_id bigint, total decimal(10,2), PRIMARY KEY (order_no, line),
        CONSTRAINT orders_customer FOREIGN KEY (customer_id) REFERENCES customers (id));
      CREATE TABLE shipments (id int AUTO_INCREMENT PRIMARY KEY, order_no int, line int,
        CONSTRAINT shipments_order FOREIGN KEY (order_no, line) REFERENCES orders (order_no, line));
      CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
      CREATE TABLE notes (body text, tag varchar(20));
      CREATE TABLE old_style (id int PRIMARY KEY, v varchar(10) NOT NULL) ENGINE=MyISAM;
    `);
    conn = await host.open({ connectorId: 'MariaDB', connectionId: 'maria-own', properties: db.properties });
  });
  afterAll(async () => {
    await host?.close();
    await db?.drop();
  });

  it('describes the catalogue: types, keys, generated columns, comments, foreign keys both ways, views', async () => {
    const md = await conn.metadata();
    expect(md.entities.map((e) => e.fullName).sort()).toEqual([
      'big_orders',
      'customers',
      'notes',
      'old_style',
      'orders',
      'shipments',
    ]);
    const customers = md.entities.find((e) => e.fullName === 'customers');
    expect(customers?.description).toBe('people who buy');
    expect(customers?.fields.map((f) => [f.fullName, f.propertyType])).toEqual([
      ['id', 'integer'],
      ['Full_Name', 'string'],
      ['email', 'string'],
      ['mood', 'string'],
      ['doc', 'json'],
      ['photo', 'binary'],
      ['uid', 'guid'],
      ['seen', 'datetime'],
      ['amount', 'decimal'],
      ['flag', 'boolean'],
      ['tiny', 'integer'],
      ['u', 'integer'],
      ['total_x2', 'decimal'],
    ]);
    expect(customers?.fields.find((f) => f.fullName === 'email')?.description).toBe('where to write');
    expect(customers?.fields.find((f) => f.fullName === 'id')).toMatchObject({ isPrimaryKey: true, hasDefault: true });
    expect(customers?.fields.find((f) => f.fullName === 'total_x2')).toMatchObject({ usedInActionInput: false });
    expect(customers?.fields.find((f) => f.fullName === 'amount')).toMatchObject({
      size: 10,
      scale: 2,
      nativeType: 'decimal(10,2)',
    });
    const orders = md.entities.find((e) => e.fullName === 'orders');
    expect(orders?.fields.filter((f) => f.isPrimaryKey).map((f) => f.fullName)).toEqual(['order_no', 'line']);
    expect(orders?.relationships.map((r) => [r.relationshipType, r.relatedEntityFullName]).sort()).toEqual([
      ['ManyToOne', 'customers'],
      ['OneToMany', 'shipments'],
    ]);
    expect(md.entities.find((e) => e.fullName === 'shipments')?.relationships).toEqual([
      expect.objectContaining({
        relationshipType: 'ManyToOne',
        relatedEntityFullName: 'orders',
        thisProperties: ['order_no', 'line'],
        relatedProperties: ['order_no', 'line'],
      }),
    ]);
    expect(md.entities.find((e) => e.fullName === 'big_orders')?.actions.map((a) => a.action)).toEqual(['Query']);
  });

  it('round-trips every type through a write and a read: json, binary, uuid, timestamps in UTC, bits, unsigned big integers', async () => {
    const rec: ConnectorRecord = {
      Full_Name: 'Types',
      email: 'types@example.com',
      mood: 'sad',
      doc: '{"a": [1, 2]}',
      photo: Buffer.from([0, 1, 2, 255, 9, 10]).toString('base64'),
      uid: '0b6c2f9e-5c1e-4c5e-9a53-3f1f7c1c2b3a',
      seen: '2024-05-06T07:08:09.123+02:00',
      amount: '12345678.91',
      flag: true,
      tiny: -5,
      u: '18446744073709551615',
    };
    expect((await conn.write('Create', 'customers', [rec])).map((r) => r.ok)).toEqual([true]);
    const { records } = await collect(conn.query('customers', { op: '=', field: 'email', value: 'types@example.com' }));
    expect(records[0]).toMatchObject({
      ...rec,
      seen: '2024-05-06T05:08:09.123Z',
      total_x2: '24691357.82',
    });
    const [raw] = await db.exec<{ seen: string; hex: string }>(
      `SELECT seen, HEX(photo) AS hex FROM customers WHERE email = 'types@example.com'`,
    );
    expect(raw).toEqual({ seen: '2024-05-06 05:08:09.123', hex: '000102FF090A' });
  });

  it('string filters compare by character, case-sensitively, though the column collation does not', async () => {
    await conn.write('Create', 'notes', [
      { body: 'Alpha', tag: 'case' },
      { body: 'alpha', tag: 'case' },
    ]);
    const eq = await collect(
      conn.query('notes', {
        op: 'and',
        args: [
          { op: '=', field: 'tag', value: 'case' },
          { op: '=', field: 'body', value: 'alpha' },
        ],
      }),
    );
    expect(eq.records.map((r) => r['body'])).toEqual(['alpha']);
    const like = await collect(conn.query('notes', { op: 'like', field: 'body', pattern: 'A%' }));
    expect(like.records.map((r) => r['body'])).toEqual(['Alpha']);
  });

  it('refuses a value that does not fit the column as that record alone: strict mode, never cut', async () => {
    const res = await conn.write('Create', 'notes', [
      { body: 'fits', tag: 'strict' },
      { body: 'too long', tag: 'x'.repeat(21) },
      { body: 'fits too', tag: 'strict' },
    ]);
    expect(res.map((r) => (r.ok ? 'ok' : r.error.code))).toEqual(['ok', 'InvalidValue', 'ok']);
    expect(res[1]).toMatchObject({ ok: false, error: { nativeCode: '1406' } });
    const [row] = await db.exec<{ n: number }>(
      `SELECT COUNT(*) AS n FROM notes WHERE tag = 'strict' OR body = 'too long'`,
    );
    expect(Number(row?.n)).toBe(2);
  });

  it('a table without transactions (MyISAM) loses and doubles nothing when a record of a batch is refused', async () => {
    const rows = Array.from({ length: 50 }, (_, i) => ({ id: i + 1, v: i === 25 ? 'x'.repeat(11) : `v${i}` }));
    const res = await conn.write('Create', 'old_style', rows);
    expect(res.filter((r) => !r.ok).length).toBe(1);
    expect(res[25]).toMatchObject({ ok: false, error: { code: 'InvalidValue' } });
    const [row] = await db.exec<{ n: number }>('SELECT COUNT(*) AS n FROM old_style');
    expect(Number(row?.n)).toBe(49);
    const again = await conn.write('Upsert', 'old_style', rows.slice(0, 10));
    expect(again.every((r) => r.ok)).toBe(true);
  });

  it('upserts by a unique key other than the primary key, and by lookup fields that are no key', async () => {
    await conn.write('Create', 'customers', [{ Full_Name: 'Uniq', email: 'uniq@example.com', amount: '1.00' }]);
    const res = await conn.write(
      'Upsert',
      'customers',
      [
        { email: 'uniq@example.com', Full_Name: 'Uniq', amount: '2.00' },
        { email: 'new@example.com', Full_Name: 'New', amount: '3.00' },
      ],
      { keyFields: ['email'] },
    );
    expect(res.map((r) => r.ok)).toEqual([true, true]);
    const byName = await conn.write(
      'Upsert',
      'notes',
      [
        { body: 'by body', tag: 'one' },
        { body: 'by body', tag: 'two' },
      ],
      {
        keyFields: ['body'],
      },
    );
    expect(byName.map((r) => r.ok)).toEqual([true, true]);
    expect(await db.exec(`SELECT tag FROM notes WHERE body = 'by body'`)).toEqual([{ tag: 'two' }]);
    expect(
      await db.exec(
        `SELECT email, amount FROM customers WHERE email IN ('uniq@example.com', 'new@example.com') ORDER BY email`,
      ),
    ).toEqual([
      { email: 'new@example.com', amount: '3.00' },
      { email: 'uniq@example.com', amount: '2.00' },
    ]);
  });

  it('writes a packed batch straight into LOAD DATA: the same rows and results as its records, every kind of character', async () => {
    await db.exec(`CREATE TABLE packed_a (id int PRIMARY KEY, name text, amount decimal(12,2), score double, ok boolean,
      born date, seen datetime(6), doc json); CREATE TABLE packed_b LIKE packed_a`);
    const records: ConnectorRecord[] = Array.from({ length: 3000 }, (_, i) => ({
      id: i + 1,
      name: i % 7 === 0 ? `tab\there, line\nbreak, back\\slash, nul\u0000, név ✓ ${i}` : `plain ${i}`,
      amount: i % 5 === 0 ? null : `${i}.25`,
      score: i / 8,
      ok: i % 2 === 0,
      born: '2001-02-03',
      seen: i % 3 === 0 ? '2024-05-06T07:08:09.123456Z' : '2024-05-06T07:08:09',
      doc: i % 4 === 0 ? '{"a": [1, "\\t"]}' : null,
    }));
    const fields = Object.keys(records[0] as ConnectorRecord);
    const packed = await conn.writePacked('Create', 'packed_a', packRecords(records, fields));
    const plain = await conn.write('Create', 'packed_b', records);
    expect(packed).toEqual(plain);
    expect(packed.every((r) => r.ok)).toBe(true);
    const dump = (t: string) => db.exec(`SELECT * FROM ${t} ORDER BY id`);
    const a = await dump('packed_a');
    expect(a).toHaveLength(3000);
    expect(a).toEqual(await dump('packed_b'));
    const { records: back } = await collect(conn.query('packed_a', { op: '<=', field: 'id', value: 8 }));
    expect(back[0]).toMatchObject({ ...records[0], seen: '2024-05-06T07:08:09.123456Z' });
    expect(back[1]).toMatchObject({ ...records[1], seen: '2024-05-06T07:08:09.000000Z' });
  });

  it('a packed batch the server refuses in part gets exactly the results its records get, and is not loaded twice', async () => {
    await db.exec(`CREATE TABLE packed_c (id int PRIMARY KEY, name varchar(10) NOT NULL); CREATE TABLE packed_d LIKE packed_c;
      INSERT INTO packed_c VALUES (7, 'before'); INSERT INTO packed_d VALUES (7, 'before')`);
    const records: ConnectorRecord[] = Array.from({ length: 200 }, (_, i) => ({
      id: i + 1,
      name: i === 50 ? 'far too long for it' : `n${i}`,
    }));
    const packed = await conn.writePacked('Create', 'packed_c', packRecords(records, ['id', 'name']));
    const plain = await conn.write('Create', 'packed_d', records);
    const failedAt = (rs: WriteResult[]): [number, string][] =>
      rs.flatMap((r, i) => (r.ok ? [] : [[i + 1, r.error.code] as [number, string]]));
    expect(failedAt(packed)).toEqual([
      [7, 'DuplicateKey'],
      [51, 'InvalidValue'],
    ]);
    expect(failedAt(packed)).toEqual(failedAt(plain));
    const [n] = await db.exec<{ n: number }>('SELECT COUNT(*) AS n FROM packed_c');
    expect(Number(n?.n)).toBe(199);
  });

  it('a packed batch with a cell it does not write as it is goes the records way, the part already loaded undone', async () => {
    await db.exec('CREATE TABLE packed_e (id int PRIMARY KEY, qty int, pad text)');
    // Far enough into the batch (1 MB of it) that parts have gone to the server before the odd cell is met.
    const records: ConnectorRecord[] = Array.from({ length: 10_000 }, (_, i) => ({
      id: i + 1,
      qty: i === 9_000 ? ' 42 ' : i,
      pad: 'x'.repeat(100),
    }));
    const results = await conn.writePacked('Create', 'packed_e', packRecords(records, ['id', 'qty', 'pad']));
    expect(results.every((r) => r.ok)).toBe(true);
    const [row] = await db.exec<{ n: number; q: number }>(
      'SELECT COUNT(*) AS n, (SELECT qty FROM packed_e WHERE id = 9001) AS q FROM packed_e',
    );
    expect([Number(row?.n), Number(row?.q)]).toEqual([10_000, 42]);
  });

  it('names the failure to connect by the server: unknown database, access denied, no TLS, unreachable', async () => {
    const open = (props: Record<string, string>) =>
      host.open({ connectorId: 'MariaDB', connectionId: `bad-${Math.random()}`, properties: props });
    await expect(open({ ...db.properties, database: 'no_such_db_here' })).rejects.toMatchObject({
      code: 'CON_PROPERTIES_INVALID',
    });
    await expect(open({ ...db.properties, user: 'nobody_here', password: 'secret-pw-123' })).rejects.toMatchObject({
      code: 'CON_AUTH_FAILED',
    });
    // The test server has TLS switched off (Debian's default): asking for it is a setting to change, said so.
    const [ssl] = await db.exec<{ v: string }>('SELECT @@have_ssl AS v');
    if (ssl?.v !== 'YES')
      await expect(open({ ...db.properties, tls: 'require' })).rejects.toMatchObject({
        code: 'CON_PROPERTIES_INVALID',
        message: expect.stringContaining('does not offer TLS') as string,
      });
    const refused = await open({ ...db.properties, port: '1' }).catch((e: unknown) => e as Error & { code?: string });
    expect(refused).toMatchObject({ code: 'CON_UNREACHABLE' });
    expect(JSON.stringify(refused)).not.toContain('secret-pw-123');
  });
});

describe.skipIf(Boolean(MARIADB_SKIP))('the packaged mariadb plugin', () => {
  it(
    "runs from the bundled index.mjs, its driver found through the Agent's node_modules",
    { timeout: 60_000 },
    async () => {
      const dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-maria-package-'));
      const host = new ConnectorHost({ dir: path.join(dir, 'connectors'), log: pino({ level: 'silent' }) });
      const db = await createMariaDatabase();
      try {
        await seedPeople(db);
        const pkg = await new PackageStore(ConnectorCatalogue.fromDirs(), path.join(dir, 'packages')).get(
          'ce52e23b-a1b9-4dd7-aaab-efd3e77c1efb',
        );
        await fsp.mkdir(path.join(dir, 'connectors'));
        await writeFiles(path.join(dir, 'connectors', 'mariadb'), unpackFiles(await fsp.readFile(pkg.file)));
        await fsp.symlink(sharedModulesDir() as string, path.join(dir, 'connectors', 'node_modules'));
        const { loaded } = await host.loadAll();
        expect(loaded.map((l) => l.folder)).toEqual([path.join(dir, 'connectors', 'mariadb')]);
        const c = await host.open({
          connectorId: 'MariaDB',
          connectionId: 'maria-packaged',
          properties: db.properties,
        });
        const { records } = await collect(c.query('people', undefined, { batchSize: 3 }));
        expect(records.map((r) => r['id'])).toEqual(PEOPLE.map((p) => p['id']));
        expect((await c.write('Create', 'people', [{ id: 100, name: 'from the package' }])).map((r) => r.ok)).toEqual([
          true,
        ]);
      } finally {
        await host.close();
        await db.drop();
        await fsp.rm(dir, { recursive: true, force: true });
      }
    },
  );
});
