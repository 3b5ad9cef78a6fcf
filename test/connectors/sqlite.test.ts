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

runConformance({
  connector: 'SQLite',
  async setup() {
    const { dir, file } = await tempDb();
    const db = new Database(file);
    db.exec(PEOPLE_DDL);
    const names = PEOPLE_FIELDS.map((f) => f.name);
    const ins = db.prepare(`INSERT INTO people (${names.join(', ')}) VALUES (${names.map(() => '?').join(', ')})`);
    for (const p of PEOPLE) ins.run(...names.map((n) => bind(p[n], n)));
    db.close();
    return { properties: { file }, cleanup: () => fsp.rm(dir, { recursive: true, force: true }) };
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
});

describe('sqlite connector', () => {
  let host: ConnectorHost;
  let dir: string;
  let file: string;
  let conn: HostConnection;

  beforeAll(async () => {
    host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    await host.loadAll();
    ({ dir, file } = await tempDb());
    const db = new Database(file);
    db.exec(`
      CREATE TABLE customers (id INTEGER PRIMARY KEY, "Full Name" TEXT NOT NULL, email TEXT UNIQUE, created DATETIME DEFAULT CURRENT_TIMESTAMP);
      CREATE TABLE orders (order_no INTEGER, line INTEGER, customer_id INTEGER REFERENCES customers(id), total NUMERIC(10,2), PRIMARY KEY (order_no, line));
      CREATE TABLE shipments (id INTEGER PRIMARY KEY, order_no INTEGER, line INTEGER, FOREIGN KEY (order_no, line) REFERENCES orders (order_no, line));
      CREATE TABLE notes (body TEXT, tag TEXT);
      CREATE VIEW big_orders AS SELECT * FROM orders WHERE total > 100;
      INSERT INTO customers (id, "Full Name", email, created) VALUES (1, 'Ann', 'ann@x', '2024-01-02 03:04:05');
    `);
    db.close();
    conn = await host.open({ connectorId: 'SQLite', connectionId: 'sqlite-own', properties: { file } });
  });
  afterAll(async () => {
    await host.close();
    await fsp.rm(dir, { recursive: true, force: true });
  });

  it("matches the catalogue: tables, views, columns, keys and foreign keys as relationships", async () => {
    const md = await conn.metadata();
    const db = new Database(file, { readonly: true });
    const tables = db.prepare("SELECT name FROM sqlite_schema WHERE type IN ('table', 'view') AND name NOT LIKE 'sqlite_%' ORDER BY name").pluck().all() as string[];
    expect(md.entities.map((e) => e.originalName)).toEqual(tables);
    for (const e of md.entities) {
      const cols = db.prepare('SELECT name, type, pk FROM pragma_table_info(?) ORDER BY cid').all(e.originalName) as { name: string; type: string; pk: number }[];
      expect(e.fields.map((f) => [f.originalName, f.nativeType, f.isPrimaryKey])).toEqual(cols.map((c) => [c.name, c.type, c.pk > 0]));
    }
    db.close();
    const customers = md.entities.find((e) => e.fullName === 'customers');
    expect(customers?.fields.map((f) => f.fullName)).toEqual(['id', 'Full_Name', 'email', 'created']);
    expect(customers?.fields.find((f) => f.fullName === 'created')?.hasDefault).toBe(true);
    const shipments = md.entities.find((e) => e.fullName === 'shipments');
    expect(shipments?.relationships).toEqual([
      expect.objectContaining({ relationshipType: 'ManyToOne', thisEntityFullName: 'shipments', relatedEntityFullName: 'orders', thisProperties: ['order_no', 'line'], relatedProperties: ['order_no', 'line'], path: 'shipments.orders' }),
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
    const res = await conn.write('Create', 'customers', [{ Full_Name: 'Bob' }, { Full_Name: 'Cy', email: 'ann@x' }, { email: 'no-name@x' }, { id: 1, Full_Name: 'Dup' }]);
    expect(res[0]).toMatchObject({ ok: true, affected: 1, key: { id: 2 } });
    expect(res.slice(1).map((r) => !r.ok && [r.error.code, r.error.nativeCode])).toEqual([
      ['DuplicateKey', 'SQLITE_CONSTRAINT_UNIQUE'],
      ['ConstraintViolation', 'SQLITE_CONSTRAINT_NOTNULL'],
      ['DuplicateKey', 'SQLITE_CONSTRAINT_PRIMARYKEY'],
    ]);
    const fk = await conn.write('Create', 'orders', [{ order_no: 1, line: 1, customer_id: 1, total: '150.00' }, { order_no: 1, line: 2, customer_id: 99, total: 5 }]);
    expect(fk.map((r) => (r.ok ? 'ok' : r.error.code))).toEqual(['ok', 'ConstraintViolation']);
  });

  it('writes by a composite key and refuses writes to views', async () => {
    expect(await conn.write('Update', 'orders', [{ order_no: 1, line: 1, total: '175.50' }])).toEqual([{ ok: true, affected: 1 }]);
    const { records } = await collect(conn.query('big_orders'));
    expect(records).toEqual([{ order_no: 1, line: 1, customer_id: 1, total: '175.5' }]);
    await expect(conn.write('Create', 'big_orders', [{ order_no: 2, line: 1 }])).rejects.toMatchObject({ code: 'CON_UNSUPPORTED' });
  });

  it('refuses an Upsert whose key has no unique constraint with CON_QUERY_INVALID, and needs a key on keyless tables', async () => {
    await expect(conn.write('Upsert', 'notes', [{ body: 'x', tag: 'a' }], { keyFields: ['tag'] })).rejects.toMatchObject({ code: 'CON_QUERY_INVALID' });
    await expect(conn.write('Delete', 'notes', [{ tag: 'a' }])).rejects.toMatchObject({ code: 'CON_UNSUPPORTED' });
    expect(await conn.write('Create', 'notes', [{ body: 'x', tag: 'a' }, { body: 'y', tag: 'a' }])).toHaveLength(2);
    expect(await conn.write('Delete', 'notes', [{ tag: 'a' }], { keyFields: ['tag'] })).toEqual([{ ok: true, affected: 2 }]);
  });

  it('runs writing native statements and reports their row count', async () => {
    const { records } = await collect(conn.nativeQuery('UPDATE customers SET email = ? WHERE id = ?', ['bob@x', 2]));
    expect(records).toEqual([{ affected: 1 }]);
    await expect(collect(conn.nativeQuery('SELEC nonsense'))).rejects.toMatchObject({ code: 'CON_QUERY_INVALID' });
  });

  it('reports a missing database file as CON_UNREACHABLE and a non-database as CON_PROPERTIES_INVALID', async () => {
    await expect(host.open({ connectorId: 'SQLite', connectionId: 'sqlite-missing', properties: { file: path.join(dir, 'nope.db') } })).rejects.toMatchObject({ code: 'CON_UNREACHABLE' });
    const junk = path.join(dir, 'junk.db');
    await fsp.writeFile(junk, 'this is not a database, just some text that is long enough to have a header');
    await expect(host.open({ connectorId: 'SQLite', connectionId: 'sqlite-junk', properties: { file: junk } })).rejects.toMatchObject({ code: 'CON_PROPERTIES_INVALID' });
  });
});
