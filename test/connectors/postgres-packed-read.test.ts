/**
 * PostgreSQL's packed reads (connectors/postgres/copy-out.ts): `COPY (SELECT …) TO STDOUT` turned
 * into packed cells must give exactly what `query` gives in records — every type the value model
 * tells apart, escapes, NULLs, filters with bound values, order, a field list, a limit — and a
 * reader that stops early leaves the pool working.
 */
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../helpers/stores.js';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection } from '../../src/connectors/connection.js';
import type { Filter } from '../../src/connectors/sdk.js';
import { CONNECTORS_DIR, collect, readBothWays } from './conformance.js';

const URL_SET = Boolean(process.env['FERRY_TEST_DATABASE_URL']);

describe.skipIf(!URL_SET)('PostgreSQL packed reads', () => {
  let db: { url: string; drop: () => Promise<void> };
  let host: ConnectorHost;
  let conn: HostConnection;

  beforeAll(async () => {
    db = await createTestDatabase();
    const c = new pg.Client({ connectionString: db.url });
    await c.connect();
    await c.query(`
      CREATE TYPE mood AS ENUM ('sad', 'ok', 'happy');
      CREATE DOMAIN posint AS integer CHECK (VALUE > 0);
      CREATE TABLE t (id integer PRIMARY KEY, name text, amount numeric(14,4), qty int2, price float8, ratio real,
        active boolean, born date, updated timestamp(6), seen timestamptz, big bigint, data bytea, doc jsonb,
        tags text[], uid uuid, m mood, p posint, at time, iv interval, "odd col" varchar(20));
      INSERT INTO t VALUES
        (1, 'plain', 12.5, 3, 1.25, 0.5, true, '2024-02-29', '2024-03-01 10:11:12.345678', '2024-03-01 10:11:12+02', 9007199254740993, '\\x010203', '{"a": [1, "x\\ty"]}', '{a,"b c",NULL}', 'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'happy', 5, '10:11:12', '1 day 02:00', 'x'),
        (2, E'tab\\there\\nnewline \\\\ back "q" ''s'' Zoë 😀', -0.0001, -7, 'NaN', '-Infinity', false, '0001-01-01 BC', '1999-12-31 23:59:59', '1970-01-01 00:00:00+00', -42, '\\x', 'null', '{}', NULL, 'sad', 1, NULL, NULL, E'\\\\N'),
        (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        (4, '', 0, 0, 1e300, 3.4e38, true, 'infinity', 'infinity', '-infinity', 9223372036854775807, E'\\\\x5c6e', '[]', '{"\\\\"}', NULL, 'ok', 2, '00:00', '0', E'\\\\');
      INSERT INTO t (id, name, qty, price) SELECT i, 'row ' || i, i % 100, i / 3.0 FROM generate_series(5, 5004) i;`);
    await c.end();
    host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    await host.loadAll();
    conn = await host.open({
      connectorId: 'PostgreSQL',
      connectionId: 'packed-read',
      properties: { connectionString: db.url },
    });
  });

  afterAll(async () => {
    await host?.close();
    await db?.drop();
  });

  it('gives the values query gives, for every type, escape and NULL', async () => {
    const [packed, records] = await readBothWays(conn, 't');
    expect(packed.length).toBe(5004);
    expect(packed).toEqual(records);
    expect(packed[1]?.['name']).toBe('tab\there\nnewline \\ back "q" \'s\' Zoë 😀');
    expect(packed[0]?.['big']).toBe('9007199254740993');
    expect(packed[0]?.['seen']).toBe('2024-03-01T08:11:12Z');
  });

  it('with a filter of bound values, a field list, and a limit', async () => {
    const filter: Filter = {
      op: 'and',
      args: [
        { op: '>=', field: 'id', value: 2 },
        { op: 'like', field: 'name', pattern: 'row 1%' },
      ],
    };
    const [packed, records] = await readBothWays(conn, 't', filter, { fields: ['id', 'name', 'price'], limit: 300 });
    expect(packed.length).toBe(300);
    expect(packed).toEqual(records);
    const quoted = await readBothWays(conn, 't', { op: '=', field: 'name', value: "it's" });
    expect(quoted[0]).toEqual([]);
  });

  it('a reader that stops early leaves the connection usable', async () => {
    const it = conn.queryPacked('t', undefined, { batchSize: 500 });
    if (!it) throw new Error('not read packed');
    for await (const b of it) {
      expect(b.rows).toBe(500);
      break;
    }
    expect(
      (await collect(conn.query('t', { op: '=', field: 'id', value: 7 }, { batchSize: 10 }))).records,
    ).toHaveLength(1);
  });
});
