/**
 * MariaDB's packed reads (connectors/mariadb/read-packed.ts): the text protocol's row packets turned
 * into packed cells must give exactly what `query` gives in records — every column type the
 * Connector reads (integers near and past 2^53, unsigned, floats, decimals, booleans as tinyint(1)
 * and bit(1), bits, dates and zero dates, datetimes and timestamps with fractions, time, year,
 * text with escapes and 4-byte UTF-8, long text past the 2- and 3-byte length prefixes, enum, set,
 * JSON, binary, NULLs) — with filters of bound values, a field list, order and a limit; a table with
 * a spatial column is read as records and packed; a reader that stops early leaves the pool working.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MARIADB_SKIP, createMariaDatabase, type MariaTestDatabase } from '../helpers/mariadb.js';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection } from '../../src/connectors/connection.js';
import type { Filter } from '../../src/connectors/sdk.js';
import { CONNECTORS_DIR, collect, readBothWays } from './conformance.js';

describe.skipIf(MARIADB_SKIP !== undefined)('MariaDB packed reads', () => {
  let db: MariaTestDatabase;
  let host: ConnectorHost;
  let conn: HostConnection;
  const long70k = 'L'.repeat(70_000);
  const long300 = 'é'.repeat(150);

  beforeAll(async () => {
    db = await createMariaDatabase();
    await db.exec(`
      CREATE TABLE t (id int PRIMARY KEY, name varchar(200), body mediumtext, amount decimal(14,4),
        qty smallint, tiny tinyint, med mediumint, price double, ratio float, active tinyint(1), flag bit(1),
        bits bit(12), born date, updated datetime(6), seen timestamp(3) NULL DEFAULT NULL, big bigint,
        ubig bigint unsigned, yr year, at time(2), data varbinary(20), blobby blob, doc json,
        m enum('sad','ok','happy'), s set('a','b','c'), uid uuid, \`odd col\` char(10));
      CREATE TABLE shapes (id int PRIMARY KEY, name varchar(20), pos point);`);
    await db.exec(
      `INSERT INTO t VALUES
        (1, 'plain', ?, 12.5, 3, -128, 8388607, 1.25, 0.5, 1, b'1', b'101010101010', '2024-02-29',
          '2024-03-01 10:11:12.345678', '2024-03-01 08:11:12.345', 9007199254740993, 18446744073709551615,
          2024, '-838:59:59', x'010203', x'00ff', '{"a": [1, "x\\\\ty"]}', 'happy', 'a,c',
          'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'x'),
        (2, ?, ?, -0.0001, -7, 0, -1, 1e300, -3.4e38, 0, b'0', b'0', '0000-00-00', '0000-00-00 00:00:00',
          '1970-01-01 00:00:01', -9223372036854775808, 0, 1901, '00:00:00.5', x'', x'', 'null', 'sad', '',
          NULL, '\\\\N'),
        (3, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL,
          NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL),
        (4, '', '', 0, 0, 127, 0, -0.0, 3.5, 5, b'1', b'111111111111', '9999-12-31', '1000-01-01 00:00:00',
          '2038-01-19 03:14:07.999', 9007199254740991, 9007199254740992, 2155, '838:59:59', x'5c6e', x'00',
          '[]', 'ok', 'a,b,c', NULL, '')`,
      [long70k, 'tab\there\nnewline \\ back "q" \'s\' Zoë 😀 \0 nul', long300],
    );
    // Many rows with every kind, across batches.
    await db.exec(`INSERT INTO t (id, name, qty, price, active, born, updated, big, data)
      SELECT seq, CONCAT('row ', seq), seq % 100, seq / 3.0, seq % 2, '2024-01-01' + INTERVAL (seq % 365) DAY,
        '2024-01-01 00:00:00' + INTERVAL seq SECOND, seq * 1000003, UNHEX(HEX(seq))
      FROM seq_5_to_5004`);
    await db.exec(`SET sql_mode = ''; INSERT INTO shapes VALUES (1, 'a', POINT(1, 2)), (2, 'b', NULL)`);
    host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    await host.loadAll();
    conn = await host.open({ connectorId: 'MariaDB', connectionId: 'packed-read', properties: db.properties });
  });

  afterAll(async () => {
    await host?.close();
    await db?.drop();
  });

  it('gives the values query gives, for every type, escape, length and NULL', async () => {
    const [packed, records] = await readBothWays(conn, 't');
    expect(packed.length).toBe(5004);
    // Row by row, field by field: a difference names its row and field (a diff of the whole would be slow).
    for (let r = 0; r < records.length; r++)
      for (const [k, v] of Object.entries(records[r] ?? {})) expect([r, k, packed[r]?.[k]]).toEqual([r, k, v]);
    expect(packed).toEqual(records);
    const [one, two, , four] = packed;
    expect(one?.['body']).toBe(long70k);
    expect(one?.['big']).toBe('9007199254740993');
    expect(one?.['ubig']).toBe('18446744073709551615');
    expect(one?.['updated']).toBe('2024-03-01T10:11:12.345678Z');
    expect(one?.['flag']).toBe(true);
    expect(one?.['data']).toBe(Buffer.from([1, 2, 3]).toString('base64'));
    expect(two?.['name']).toBe('tab\there\nnewline \\ back "q" \'s\' Zoë 😀 \0 nul');
    expect(two?.['body']).toBe(long300);
    expect(two?.['born']).toBeNull();
    expect(two?.['big']).toBe('-9223372036854775808');
    expect(two?.['active']).toBe(false);
    expect(four?.['active']).toBe(true);
    expect(four?.['ubig']).toBe('9007199254740992');
    expect(four?.['big']).toBe(9007199254740991);
  });

  it('with a filter of bound values, a field list, and a limit', async () => {
    const filter: Filter = {
      op: 'and',
      args: [
        { op: '>=', field: 'id', value: 2 },
        { op: 'like', field: 'name', pattern: 'row 1%' },
      ],
    };
    const [packed, records] = await readBothWays(conn, 't', filter, {
      fields: ['id', 'name', 'price', 'updated'],
      limit: 300,
    });
    expect(packed.length).toBe(300);
    expect(packed).toEqual(records);
    expect(Object.keys(packed[0] ?? {})).toEqual(['id', 'name', 'price', 'updated']);
    const quoted = await readBothWays(conn, 't', { op: '=', field: 'name', value: "it's" });
    expect(quoted[0]).toEqual([]);
  });

  it('reads a table with a spatial column as records, packed', async () => {
    const [packed, records] = await readBothWays(conn, 'shapes');
    expect(packed).toHaveLength(2);
    expect(packed).toEqual(records);
  });

  it('a slow reader to the end leaves every connection usable (none given back paused)', async () => {
    for (let round = 0; round < 6; round++) {
      const it = conn.queryPacked('t', undefined, { batchSize: 1000 });
      if (!it) throw new Error('not read packed');
      let rows = 0;
      for await (const b of it) {
        rows += b.rows;
        // The server's rows pile up meanwhile: the connection is paused with two batches waiting.
        await new Promise((resolve) => setTimeout(resolve, 30));
      }
      expect(rows).toBe(5004);
      const sum = await collect(conn.query('t', { op: '<=', field: 'id', value: 4 }, { batchSize: 10 }));
      expect(sum.records).toHaveLength(4);
    }
  });

  it('a reader that stops early leaves the connection usable', async () => {
    for (let round = 0; round < 6; round++) {
      const it = conn.queryPacked('t', undefined, { batchSize: 500 });
      if (!it) throw new Error('not read packed');
      for await (const b of it) {
        expect(b.rows).toBe(500);
        break;
      }
    }
    expect(
      (await collect(conn.query('t', { op: '=', field: 'id', value: 7 }, { batchSize: 10 }))).records,
    ).toHaveLength(1);
  });
});
