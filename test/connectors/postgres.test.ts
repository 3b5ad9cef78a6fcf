import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Importing the store helper applies its rule: in CI (CI=true) a missing FERRY_TEST_DATABASE_URL fails the run.
import { createTestDatabase, withClient } from '../helpers/stores.js';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection } from '../../src/connectors/connection.js';
import type { ConnectorRecord } from '../../src/connectors/sdk.js';
import { CONNECTORS_DIR, PEOPLE, PEOPLE_FIELDS, collect, runConformance } from './conformance.js';

const URL_SET = Boolean(process.env['FERRY_TEST_DATABASE_URL']);
const SKIP = URL_SET
  ? undefined
  : 'FERRY_TEST_DATABASE_URL is not set: the postgres connector tests need a PostgreSQL server (postgres://…) and are skipped.';
if (SKIP) process.stderr.write(`${SKIP}\n`);

const PEOPLE_DDL = `CREATE TABLE people (
  id integer PRIMARY KEY, name text NOT NULL, email varchar(100), score double precision, balance numeric(12,2),
  active boolean, born date, updated_at timestamptz, big bigint)`;

runConformance({
  connector: 'PostgreSQL',
  ...(SKIP ? { skip: SKIP } : {}),
  async setup() {
    const db = await createTestDatabase();
    await withClient(db.url, async (c) => {
      await c.query(PEOPLE_DDL);
      const names = PEOPLE_FIELDS.map((f) => f.name);
      for (const p of PEOPLE) {
        await c.query(
          `INSERT INTO people (${names.join(', ')}) VALUES (${names.map((_, i) => `$${i + 1}`).join(', ')})`,
          names.map((n) => p[n] ?? null),
        );
      }
    });
    return { properties: { connectionString: db.url }, cleanup: db.drop };
  },
  async createLarge(properties, rows) {
    await withClient(properties['connectionString'] as string, async (c) => {
      await c.query(`CREATE TABLE big (id integer PRIMARY KEY, payload text)`);
      await c.query(`INSERT INTO big SELECT g, repeat('x', 90) || g FROM generate_series(1, $1::int) g`, [rows]);
    });
  },
  enforcesUniqueKeys: true,
  nativeQuery: { statement: 'SELECT id, name FROM people WHERE id > $1 ORDER BY id', params: [4] },
  ensureEntity: true,
  interrupt: {
    // The write's session is terminated (as by a failover or an administrator) while a lock holds it.
    async during(properties, write) {
      const url = properties['connectionString'] as string;
      const locker = new pg.Client({ connectionString: url });
      const admin = new pg.Client({ connectionString: url });
      await locker.connect();
      await admin.connect();
      try {
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE people IN EXCLUSIVE MODE');
        const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
        const call = write();
        call.catch(() => undefined);
        let waiting: number | undefined;
        for (let i = 0; i < 400 && waiting === undefined; i++) {
          const r = await admin.query<{ pid: number }>(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1",
            [lockerPid],
          );
          waiting = r.rows[0]?.pid;
          if (waiting === undefined) await new Promise((resolve) => setTimeout(resolve, 25));
        }
        expect(waiting, 'the write waits on the lock').toBeDefined();
        await admin.query('SELECT pg_terminate_backend($1)', [waiting]);
        const [outcome] = await Promise.allSettled([call]);
        return outcome;
      } finally {
        await locker.query('ROLLBACK').catch(() => undefined);
        await locker.end();
        await admin.end();
      }
    },
  },
});

describe.skipIf(!URL_SET)('postgres connector', () => {
  let host: ConnectorHost;
  let db: { url: string; drop: () => Promise<void> };
  let conn: HostConnection;

  beforeAll(async () => {
    host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    await host.loadAll();
    db = await createTestDatabase();
    await withClient(db.url, (c) =>
      c.query(`
        CREATE SCHEMA sales;
        CREATE TYPE mood AS ENUM ('happy', 'sad');
        CREATE TABLE customers (id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY, "Full Name" text NOT NULL, email text UNIQUE, mood mood, doc jsonb, photo bytea, uid uuid, seen timestamp, tags text[]);
        COMMENT ON TABLE customers IS 'people who buy';
        COMMENT ON COLUMN customers.email IS 'where to write';
        CREATE TABLE sales.orders (order_no int, line int, customer_id bigint REFERENCES customers(id), total numeric(10,2), PRIMARY KEY (order_no, line));
        CREATE TABLE sales.shipments (id serial PRIMARY KEY, order_no int, line int, FOREIGN KEY (order_no, line) REFERENCES sales.orders (order_no, line));
        CREATE VIEW sales.big_orders AS SELECT * FROM sales.orders WHERE total > 100;
        CREATE TABLE notes (body text, tag text);
      `),
    );
    conn = await host.open({
      connectorId: 'PostgreSQL',
      connectionId: 'pg-own',
      properties: { connectionString: db.url },
    });
  });
  afterAll(async () => {
    await host?.close();
    await db?.drop();
  });

  it('a write waiting on a lock is cancelled on the server when its signal fires (a stop, a restart): the call ends at once and no statement stays behind', async () => {
    const locker = new pg.Client({ connectionString: db.url });
    await locker.connect();
    try {
      await locker.query('BEGIN');
      await locker.query('LOCK TABLE notes IN EXCLUSIVE MODE');
      const lockerPid = (await locker.query<{ pid: number }>('SELECT pg_backend_pid() AS pid')).rows[0]?.pid;
      const waiting = (): Promise<number> =>
        withClient(
          db.url,
          async (c) =>
            (
              await c.query(
                "SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = current_database() AND wait_event_type = 'Lock' AND pid <> $1",
                [lockerPid],
              )
            ).rows[0]?.n as number,
        );
      const ac = new AbortController();
      const rows = Array.from({ length: 500 }, (_, i) => ({ body: `held ${i}`, tag: 'lock' }));
      const call = conn.write('Create', 'notes', rows, { signal: ac.signal });
      call.catch(() => undefined);
      for (let i = 0; i < 200 && (await waiting()) === 0; i++) await new Promise((r) => setTimeout(r, 25));
      expect(await waiting()).toBe(1);
      const t0 = performance.now();
      ac.abort();
      await expect(call).rejects.toMatchObject({ code: 'CON_ABORTED' });
      expect(performance.now() - t0).toBeLessThan(500);
      // The statement is gone from the server while the lock is still held: it did not wait for it.
      let left = 1;
      for (let i = 0; i < 80 && left > 0; i++) {
        left = await waiting();
        if (left > 0) await new Promise((r) => setTimeout(r, 25));
      }
      expect(left).toBe(0);
    } finally {
      await locker.query('ROLLBACK');
      await locker.end();
    }
    const { n } = await withClient(
      db.url,
      async (c) =>
        (await c.query<{ n: number }>("SELECT count(*)::int AS n FROM notes WHERE tag = 'lock'")).rows[0] as {
          n: number;
        },
    );
    expect(n).toBe(0);
    // The connection pool goes on: the next write works.
    expect((await conn.write('Create', 'notes', [{ body: 'after', tag: 'after-lock' }])).map((r) => r.ok)).toEqual([
      true,
    ]);
  });

  it('matches the catalogue: tables, columns, primary keys and foreign keys as relationships', async () => {
    const md = await conn.metadata();
    const catalogue = await withClient(db.url, async (c) => ({
      tables: (
        await c.query<{ t: string }>(
          `SELECT table_schema || '.' || table_name AS t FROM information_schema.tables WHERE table_schema IN ('public', 'sales') ORDER BY 1`,
        )
      ).rows.map((r) => r.t),
      columns: (
        await c.query<{ t: string; c: string; nn: boolean }>(
          `SELECT table_schema || '.' || table_name AS t, column_name AS c, is_nullable = 'NO' AS nn FROM information_schema.columns WHERE table_schema IN ('public', 'sales') ORDER BY table_schema, table_name, ordinal_position`,
        )
      ).rows,
      keys: (
        await c.query<{ t: string; c: string }>(
          `SELECT k.table_schema || '.' || k.table_name AS t, k.column_name AS c FROM information_schema.key_column_usage k JOIN information_schema.table_constraints tc USING (constraint_schema, constraint_name) WHERE tc.constraint_type = 'PRIMARY KEY' AND k.table_schema IN ('public', 'sales') ORDER BY 1, k.ordinal_position`,
        )
      ).rows,
    }));
    expect(md.entities.map((e) => e.originalName).sort()).toEqual(catalogue.tables);
    for (const e of md.entities) {
      const cols = catalogue.columns.filter((c) => c.t === e.originalName);
      expect(e.fields.map((f) => [f.originalName, !f.nullable])).toEqual(cols.map((c) => [c.c, c.nn]));
      expect(e.fields.filter((f) => f.isPrimaryKey).map((f) => f.originalName)).toEqual(
        catalogue.keys.filter((k) => k.t === e.originalName).map((k) => k.c),
      );
    }
    expect(md.entities.map((e) => e.fullName)).toEqual(
      ['customers', 'notes', 'people', 'sales_big_orders', 'sales_orders', 'sales_shipments'].filter((n) =>
        md.entities.some((e) => e.fullName === n),
      ),
    );
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
      ['tags', 'string'],
    ]);
    expect(customers?.fields.find((f) => f.fullName === 'email')?.description).toBe('where to write');
    expect(customers?.fields.find((f) => f.fullName === 'id')).toMatchObject({
      hasDefault: true,
      usedInActionInput: false,
    });
    const shipments = md.entities.find((e) => e.fullName === 'sales_shipments');
    expect(shipments?.relationships).toEqual([
      expect.objectContaining({
        relationshipType: 'ManyToOne',
        relatedEntityFullName: 'sales_orders',
        thisProperties: ['order_no', 'line'],
        relatedProperties: ['order_no', 'line'],
      }),
    ]);
    const orders = md.entities.find((e) => e.fullName === 'sales_orders');
    expect(orders?.fields.find((f) => f.fullName === 'total')).toMatchObject({
      propertyType: 'decimal',
      size: 10,
      scale: 2,
      nativeType: 'numeric(10,2)',
    });
    expect(orders?.relationships.map((r) => [r.relationshipType, r.relatedEntityFullName]).sort()).toEqual([
      ['ManyToOne', 'customers'],
      ['OneToMany', 'sales_shipments'],
    ]);
    expect(md.entities.find((e) => e.fullName === 'sales_big_orders')?.actions.map((a) => a.action)).toEqual(['Query']);
  });

  it('round-trips json, bytea, uuid, enums, arrays and timestamps without a zone in the value model', async () => {
    const rec: ConnectorRecord = {
      Full_Name: 'Ann',
      email: 'ann@x',
      mood: 'happy',
      doc: '{"a": [1, 2]}',
      photo: Buffer.from([0, 1, 2, 255]).toString('base64'),
      uid: '0b7c1d9e-6f2a-4c1b-9a3e-5d8f7e6c4b2a',
      seen: '2024-05-06T07:08:09.123456',
      tags: '{red,"light blue"}',
    };
    const res = await conn.write('Create', 'customers', [rec, { Full_Name: 'Id given', id: 5 }]);
    expect(res[0]).toEqual({ ok: true, affected: 1 });
    expect(res[1]).toMatchObject({ ok: false, error: { code: 'InvalidValue' } });
    const { records } = await collect(conn.query('customers'));
    expect(records).toEqual([{ id: 1, ...rec, doc: '{"a": [1, 2]}' }]);
  });

  it('queries with bound parameters only: a value with SQL in it is just a value', async () => {
    const { records } = await collect(conn.query('customers', { op: '=', field: 'Full_Name', value: "x' OR '1'='1" }));
    expect(records).toEqual([]);
  });

  it('writes into other schemas by composite key, bulk-upserts through unnest and refuses views', async () => {
    const rows = Array.from({ length: 3000 }, (_, i) => ({
      order_no: Math.floor(i / 3),
      line: i % 3,
      customer_id: 1,
      total: `${i}.25`,
    }));
    rows[1234] = { order_no: 9999, line: 0, customer_id: 42, total: '1' };
    const res = await conn.write('Upsert', 'sales_orders', rows);
    expect(res.map((r, i) => (r.ok ? -1 : i)).filter((i) => i >= 0)).toEqual([1234]);
    expect(res[1234]).toMatchObject({ ok: false, error: { code: 'ConstraintViolation', nativeCode: '23503' } });
    const again = await conn.write('Upsert', 'sales_orders', [{ order_no: 0, line: 0, customer_id: 1, total: '1.00' }]);
    expect(again).toEqual([{ ok: true, affected: 1 }]);
    const { records } = await collect(conn.query('sales_big_orders', { op: '<', field: 'order_no', value: 34 }));
    // Only i = 100 and 101 (totals 100.25 and 101.25) of order numbers below 34 pass the view's filter.
    expect(records.map((r) => r['total']).sort()).toEqual(['100.25', '101.25']);
    await expect(conn.write('Create', 'sales_big_orders', [{ order_no: 1, line: 9 }])).rejects.toMatchObject({
      code: 'CON_UNSUPPORTED',
    });
  });

  it('refuses an Upsert whose key has no unique constraint with CON_QUERY_INVALID', async () => {
    await expect(
      conn.write('Upsert', 'notes', [{ body: 'x', tag: 'a' }], { keyFields: ['tag'] }),
    ).rejects.toMatchObject({ code: 'CON_QUERY_INVALID' });
  });

  it('cancels a running statement when the call is aborted', async () => {
    const ac = new AbortController();
    const started = Date.now();
    setTimeout(() => ac.abort(), 200);
    await expect(
      collect(conn.nativeQuery('SELECT pg_sleep(30) AS slept', [], { signal: ac.signal })),
    ).rejects.toMatchObject({ code: 'CON_ABORTED' });
    expect(Date.now() - started).toBeLessThan(5000);
    // The server-side statement was cancelled too: the pool's connection is usable at once.
    const { records } = await collect(conn.nativeQuery('SELECT 1 AS one'));
    expect(records).toEqual([{ one: 1 }]);
    const active = await withClient(
      db.url,
      async (c) =>
        (
          await c.query(
            `SELECT count(*)::int AS n FROM pg_stat_activity WHERE query LIKE 'SELECT pg_sleep(30)%' AND state = 'active'`,
          )
        ).rows[0] as { n: number },
    );
    expect(active.n).toBe(0);
  });

  it('reports an unreachable server and an unknown database with their codes', async () => {
    await expect(
      host.open({
        connectorId: 'PostgreSQL',
        connectionId: 'pg-down',
        properties: { host: '127.0.0.1', port: '1', database: 'x', user: 'x' },
      }),
    ).rejects.toMatchObject({ code: 'CON_UNREACHABLE', kind: 'transient' });
    const url = new URL(db.url);
    url.pathname = '/ferry_no_such_database';
    await expect(
      host.open({
        connectorId: 'PostgreSQL',
        connectionId: 'pg-nodb',
        properties: { connectionString: url.toString() },
      }),
    ).rejects.toMatchObject({ code: 'CON_PROPERTIES_INVALID', details: { nativeCode: '3D000' } });
  });

  it('saves the first checkpoints of several sessions at once: creating the checkpoint table never fails a batch', async () => {
    const fresh = await createTestDatabase();
    try {
      await withClient(fresh.url, (c) => c.query('CREATE TABLE events (id integer NOT NULL, note text)'));
      const sessions = await Promise.all(
        Array.from({ length: 8 }, (_, i) =>
          host.open({
            connectorId: 'PostgreSQL',
            connectionId: `pg-cp-${i}`,
            properties: { connectionString: fresh.url },
          }),
        ),
      );
      try {
        const results = await Promise.all(
          sessions.map((s, i) =>
            s.write('Create', 'events', [{ id: i, note: `n${i}` }], { checkpoint: { key: `k${i}`, value: `v${i}` } }),
          ),
        );
        expect(results.flat().every((r) => r.ok)).toBe(true);
        expect(await Promise.all(sessions.map((s, i) => s.readCheckpoint(`k${i}`)))).toEqual(
          sessions.map((_, i) => `v${i}`),
        );
      } finally {
        await Promise.all(sessions.map((s) => s.close()));
      }
    } finally {
      await fresh.drop();
    }
  });
});
