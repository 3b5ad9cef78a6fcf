/**
 * The postgres connector's writes against a real server: COPY binary against the text format,
 * numbers and decimal texts into numeric columns, bulk upserts (the stage, parallel lanes), and
 * the records a large Create batch refuses, each with its own error.
 */
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
// Importing the store helper applies its rule: in CI (CI=true) a missing FERRY_TEST_DATABASE_URL fails the run.
import { createTestDatabase, withClient } from '../helpers/stores.js';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection } from '../../src/connectors/connection.js';
import { CELL_DECIMAL, packRecords, type ConnectorRecord } from '../../src/connectors/sdk.js';
import { CONNECTORS_DIR } from './conformance.js';
import { binaryWriter, encodeBinary } from '../../connectors/postgres/binary-copy.js';

const URL_SET = Boolean(process.env['FERRY_TEST_DATABASE_URL']);

describe.skipIf(!URL_SET)('postgres connector: writes', () => {
  let host: ConnectorHost;
  let db: { url: string; drop: () => Promise<void> };
  let conn: HostConnection;

  beforeAll(async () => {
    host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
    await host.loadAll();
    db = await createTestDatabase();
    conn = await host.open({
      connectorId: 'PostgreSQL',
      connectionId: 'pg-writes',
      properties: { connectionString: db.url },
    });
  });
  afterAll(async () => {
    await host?.close();
    await db?.drop();
  });

  it('writes every type through COPY binary exactly as the text format does', async () => {
    const values: Record<string, unknown[]> = {
      i2: [-32768, 32767, '12'],
      i4: [-2147483648, 2147483647, 0],
      i8: ['9223372036854775807', -9007199254740991, '9007199254740993', '-9223372036854775808'],
      num: [
        '0',
        '-0.001',
        '12345678901234567890.123456789',
        '100',
        '0.0001',
        1.5,
        '00012.50',
        '-99999999.00000001',
        '10000',
      ],
      num2: ['1.555', '-0.005', '9999.99'],
      f8: [0.1, -0, 1e300, -2.5e-308, 123.456],
      b: [true, false],
      t: ['héllo ✓ 𝄞', '', 'tab\tnew\nline\\ "q"', 42, true],
      vc: ['abcdefghij', 'é'],
      ch: ['ab', 'abcde'],
      d: ['2024-02-29', '1999-12-31', '0001-01-01', '9999-12-31', '2000-01-01'],
      ts: [
        '2024-05-06T07:08:09.123456',
        '1900-01-01T00:00:00',
        '2000-01-01T00:00:00Z',
        '2024-05-06 07:08:09.1',
        '2024-05-06',
        '1969-12-31T23:59:59.999999',
      ],
      tz: [
        '2024-05-06T07:08:09.5Z',
        '1969-12-31T23:59:59.999999Z',
        '2024-05-06T07:08:09',
        '1800-03-01T12:00:00Z',
        '2284-12-31T23:59:59Z',
      ],
      u: ['a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11', 'A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A12'],
      jb: ['{"b": 1, "a": [1, 2.50]}', '"x"'],
      js: [' {"x" :1} ', '[]'],
      by: [Buffer.from([0, 1, 2, 255, 10]).toString('base64'), ''],
    };
    const records: ConnectorRecord[] = [];
    let n = 0;
    for (const [field, vs] of Object.entries(values))
      for (const v of vs) records.push({ n: ++n, [field]: v as string });
    records.push({ n: ++n, i4: null, t: null, d: null });
    const cols = ['n', ...Object.keys(values)];
    await withClient(db.url, (c) =>
      c.query(`
        CREATE TABLE typed (n int PRIMARY KEY, i2 int2, i4 int4, i8 int8, num numeric, num2 numeric(6,2), f8 float8, b bool, t text, vc varchar(10), ch char(5),
          d date, ts timestamp, tz timestamptz, u uuid, jb jsonb, js json, by bytea);
        CREATE TABLE typed_text (LIKE typed INCLUDING ALL, f4 real);`),
    );
    const md = await conn.metadata({ reload: true });
    expect(md.entities.some((e) => e.fullName === 'typed')).toBe(true);
    // Each record on its own, so that every one that has a binary form is sent in it.
    for (const rec of records) {
      const names = Object.keys(rec);
      const typnames: Record<string, string> = {
        n: 'int4',
        i2: 'int2',
        i4: 'int4',
        i8: 'int8',
        num: 'numeric',
        num2: 'numeric',
        f8: 'float8',
        b: 'bool',
        t: 'text',
        vc: 'varchar',
        ch: 'bpchar',
        d: 'date',
        ts: 'timestamp',
        tz: 'timestamptz',
        u: 'uuid',
        jb: 'jsonb',
        js: 'json',
        by: 'bytea',
      };
      const writers = names.map((f) => binaryWriter(typnames[f] as string));
      expect(writers.every(Boolean), names.join()).toBe(true);
      expect(
        encodeBinary([rec], names, writers as NonNullable<(typeof writers)[number]>[]),
        JSON.stringify(rec),
      ).toBeDefined();
      expect(await conn.write('Create', 'typed', [rec]), JSON.stringify(rec)).toEqual([{ ok: true, affected: 1 }]);
      expect(await conn.write('Create', 'typed_text', [{ ...rec, f4: 1.5 }]), JSON.stringify(rec)).toEqual([
        { ok: true, affected: 1 },
      ]);
    }
    const list = cols.map((c) => `${c}::text`).join(', ');
    const [bin, txt] = await withClient(db.url, async (c) => [
      (await c.query(`SELECT ${list} FROM typed ORDER BY n`)).rows,
      (await c.query(`SELECT ${list} FROM typed_text ORDER BY n`)).rows,
    ]);
    expect(bin).toHaveLength(records.length);
    expect(bin).toEqual(txt);
    // Values the binary writers leave to the text format still arrive, or fail as the server says.
    const other = await conn.write('Create', 'typed', [
      {
        n: 1001,
        tz: '2024-05-06T07:08:09+02:00',
        num: '1e3',
        i4: '12',
        d: '2024-05-06T00:00:00Z',
        ts: '2024-05-06T07:08:09.1234567',
      },
      { n: 1002, i2: 40000 },
      { n: 1003, d: '2023-02-29' },
      { n: 1004, tz: '0001-01-01T00:00:00Z' },
    ]);
    expect(other.map((r) => (r.ok ? 'ok' : r.error.code))).toEqual(['ok', 'InvalidValue', 'InvalidValue', 'ok']);
    const [row] = await withClient(
      db.url,
      async (c) => (await c.query(`SELECT tz::text, num::text, i4, d::text FROM typed WHERE n = 1001`)).rows,
    );
    expect(row).toEqual({ tz: '2024-05-06 05:08:09+00', num: '1000', i4: 12, d: '2024-05-06' });
  });

  it('writes numbers and decimal cells into numeric columns as their text says, packed as in records', async () => {
    await withClient(db.url, (c) =>
      c.query(
        `CREATE TABLE nums (n int PRIMARY KEY, a numeric, b numeric(12,2)); CREATE TABLE nums_text (LIKE nums INCLUDING ALL)`,
      ),
    );
    await conn.metadata({ reload: true });
    // Every one with a binary form (a number whose text has an exponent, 1e-7 or 1e21, sends its whole batch as text).
    const xs = [
      0,
      -0,
      1,
      -1,
      0.5,
      12.34,
      -12.345,
      1.005,
      9999,
      10000,
      99999999.99,
      123456.7891,
      0.0001,
      0.00001,
      0.1 + 0.2,
      1 / 3,
      2147483647.5,
      2 ** 31,
      -(2 ** 40),
    ];
    const records = xs.map((x, i) => ({ n: i + 1, a: x, b: Math.abs(x) < 1e9 ? x : null }));
    const packed = packRecords(records, ['n', 'a', 'b']);
    // A decimal cell (CELL_DECIMAL) holds the number whose text is the value: every `a` cell as one.
    const decimals = packRecords(
      records.map((r) => ({ ...r, n: r.n + 100 })),
      ['n', 'a', 'b'],
    );
    for (let r = 0; r < decimals.rows; r++) decimals.tags[r * 3 + 1] = CELL_DECIMAL;
    expect((await conn.writePacked('Create', 'nums', packed)).every((r) => r.ok)).toBe(true);
    expect((await conn.writePacked('Create', 'nums', decimals)).every((r) => r.ok)).toBe(true);
    const asText = [...records, ...records.map((r) => ({ ...r, n: r.n + 100 }))].map((r) => ({
      n: r.n,
      a: String(r.a),
      b: r.b === null ? null : String(r.b),
    }));
    expect((await conn.write('Create', 'nums_text', asText)).every((r) => r.ok)).toBe(true);
    const [bin, txt] = await withClient(db.url, async (c) => [
      (await c.query('SELECT n, a::text, b::text FROM nums ORDER BY n')).rows,
      (await c.query('SELECT n, a::text, b::text FROM nums_text ORDER BY n')).rows,
    ]);
    expect(bin).toHaveLength(2 * xs.length);
    expect(bin).toEqual(txt);
    expect(bin.slice(0, 6).map((r) => r.a)).toEqual(['0', '0', '1', '-1', '0.5', '12.34']);
  });

  it('writes decimal texts into numeric columns from their bytes, as PostgreSQL reads the same texts', async () => {
    await withClient(db.url, (c) =>
      c.query(
        `CREATE TABLE dec_bin (n int PRIMARY KEY, a numeric, b numeric(12,2)); CREATE TABLE dec_sql (LIKE dec_bin INCLUDING ALL)`,
      ),
    );
    await conn.metadata({ reload: true });
    const texts = [
      '0',
      '-0',
      '007',
      '0.0000',
      '1.5',
      '-12.345',
      '123456789012345678901234567890.123456789',
      '0.00001',
      '9999.9999',
      '10000',
      '-0.5',
      '1.005',
      '99999999.99',
      `5${'0'.repeat(40)}`,
      `0.${'1'.repeat(30)}`,
    ];
    // Batches of 64 rows or more go by COPY (fewer take one statement with text parameters).
    const rows = (list: string[], from: number) =>
      Array.from({ length: 80 }, (_, i) => ({
        n: from + i,
        a: list[i % list.length] as string,
        b: (list[i % list.length] as string).length < 12 ? (list[i % list.length] as string) : null,
      }));
    const records = rows(texts, 1);
    // Forms the bytes path leaves to the text format (the batch goes as text, which PostgreSQL parses).
    const others = rows(['1e5', '.5', '1.', ' 2.5', '3'], 1000);
    for (const batch of [records, others]) {
      expect(
        (await conn.writePacked('Create', 'dec_bin', packRecords(batch, ['n', 'a', 'b']))).every((r) => r.ok),
      ).toBe(true);
      await withClient(db.url, (c) =>
        c.query(
          `INSERT INTO dec_sql SELECT n, a::numeric, b::numeric FROM json_to_recordset($1::json) AS x(n int, a text, b text)`,
          [JSON.stringify(batch)],
        ),
      );
    }
    const [bin, sql] = await withClient(db.url, async (c) => [
      (await c.query('SELECT n, a::text, b::text FROM dec_bin ORDER BY n')).rows,
      (await c.query('SELECT n, a::text, b::text FROM dec_sql ORDER BY n')).rows,
    ]);
    expect(bin).toHaveLength(160);
    expect(bin).toEqual(sql);
    expect(bin.slice(0, 5).map((r) => r.a)).toEqual(['0', '0', '7', '0.0000', '1.5']);
  });

  it('bulk-upserts new keys by COPY and falls back to the stage for existing ones, record by record', async () => {
    await withClient(db.url, (c) => c.query(`CREATE TABLE up (id int PRIMARY KEY, v text NOT NULL, x numeric(6,2))`));
    await conn.metadata({ reload: true });
    const fresh = Array.from({ length: 200 }, (_, i) => ({ id: i + 1, v: `a${i + 1}`, x: '1.00' }));
    expect((await conn.write('Upsert', 'up', fresh)).every((r) => r.ok)).toBe(true);
    const mixed: ConnectorRecord[] = Array.from({ length: 200 }, (_, i) => ({
      id: 101 + i,
      v: `b${101 + i}`,
      x: '2.00',
    }));
    mixed[10] = { id: 111, v: 'bad', x: '123456789' };
    mixed[20] = { id: 105, v: 'again' };
    const res = await conn.write('Upsert', 'up', mixed);
    expect(res.map((r, i) => (r.ok ? -1 : i)).filter((i) => i >= 0)).toEqual([10]);
    expect(res[10]).toMatchObject({ ok: false, error: { code: 'InvalidValue', nativeCode: '22003' } });
    // Straight to the stage after a conflict: new keys still go in.
    const more = Array.from({ length: 100 }, (_, i) => ({ id: 1001 + i, v: `c${i}` }));
    expect((await conn.write('Upsert', 'up', more)).every((r) => r.ok)).toBe(true);
    const rows = await withClient(
      db.url,
      async (c) =>
        (await c.query(`SELECT id, v, x::text FROM up WHERE id IN (1, 105, 111, 112, 300, 1001) ORDER BY id`)).rows,
    );
    expect(rows).toEqual([
      { id: 1, v: 'a1', x: '1.00' },
      { id: 105, v: 'again', x: '2.00' },
      { id: 111, v: 'a111', x: '1.00' },
      { id: 112, v: 'b112', x: '2.00' },
      { id: 300, v: 'b300', x: '2.00' },
      { id: 1001, v: 'c0', x: null },
    ]);
    const count = await withClient(
      db.url,
      async (c) => (await c.query(`SELECT count(*)::int AS n FROM up`)).rows[0] as { n: number },
    );
    expect(count.n).toBe(400);
  });

  it('upserts a large batch of existing keys on parallel connections: same-key records in order, a bad record alone, a deadlocked lane again', async () => {
    await withClient(db.url, (c) =>
      c.query(`
        CREATE TABLE lanes (id int PRIMARY KEY, v text NOT NULL, n int);
        INSERT INTO lanes SELECT i, 'old', 0 FROM generate_series(1, 6000) i;
        CREATE SEQUENCE lanes_once;
        CREATE FUNCTION lanes_trip() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN
            IF NEW.id = 4321 AND nextval('lanes_once') = 1 THEN RAISE EXCEPTION 'simulated deadlock' USING ERRCODE = '40P01'; END IF;
            RETURN NEW;
          END $$;
        CREATE TRIGGER lanes_trip BEFORE UPDATE ON lanes FOR EACH ROW EXECUTE FUNCTION lanes_trip();
      `),
    );
    await conn.metadata({ reload: true });
    const batch: ConnectorRecord[] = Array.from({ length: 6000 }, (_, i) => ({ id: i + 1, v: `new ${i + 1}`, n: 1 }));
    batch[99] = { id: 100, v: 'bad', n: 2 ** 40 };
    batch.push({ id: 7, v: 'seven again', n: 2 });
    // The server takes '0042' for 42: one row, so one lane, in order.
    batch.push({ id: '0042', v: 'forty-two again', n: 3 });
    const res = await conn.write('Upsert', 'lanes', batch);
    expect(res.flatMap((r, i) => (r.ok ? [] : [[i, r.error.code]]))).toEqual([[99, 'InvalidValue']]);
    const rows = await withClient(
      db.url,
      async (c) => (await c.query(`SELECT id, v, n FROM lanes WHERE id IN (7, 42, 100, 4321, 6000) ORDER BY id`)).rows,
    );
    expect(rows).toEqual([
      { id: 7, v: 'seven again', n: 2 },
      { id: 42, v: 'forty-two again', n: 3 },
      { id: 100, v: 'old', n: 0 },
      { id: 4321, v: 'new 4321', n: 1 },
      { id: 6000, v: 'new 6000', n: 1 },
    ]);
    const counts = await withClient(
      db.url,
      async (c) =>
        (
          await c.query(
            `SELECT count(*) FILTER (WHERE v LIKE 'new %')::int AS fresh, (SELECT last_value FROM lanes_once)::int AS trips FROM lanes`,
          )
        ).rows[0] as { fresh: number; trips: number },
    );
    // Every row but 7 and 42 (their second records) and 100 (the bad one) holds its new value; the
    // lane with 4321 failed once as deadlocked and ran again.
    expect(counts).toEqual({ fresh: 5997, trips: 2 });
  });

  it('gives each refused record of a large Create batch its own error, many of them, inside and outside a checkpoint transaction', async () => {
    await withClient(db.url, (c) =>
      c.query('CREATE TABLE checked (id integer NOT NULL, n integer CHECK (n % 10 <> 0), note text NOT NULL)'),
    );
    const other = await host.open({
      connectorId: 'PostgreSQL',
      connectionId: 'pg-checked',
      properties: { connectionString: db.url },
    });
    try {
      for (const checkpoint of [undefined, { key: 'checked', value: 'v1' }]) {
        const base = checkpoint ? 1000 : 0;
        // 1 record in 10 breaks the CHECK, one more has a null note: far too many to find by halving.
        const records: ConnectorRecord[] = Array.from({ length: 1000 }, (_, i) => ({
          id: base + i,
          n: i,
          note: i === 7 ? null : `r${i}`,
        }));
        const results = await other.write('Create', 'checked', records, checkpoint ? { checkpoint } : {});
        const refused = results.flatMap((r, i) =>
          r.ok ? [] : [{ i, code: r.error.code, native: r.error.nativeCode }],
        );
        expect(refused.map((r) => r.i)).toEqual(
          [...Array.from({ length: 100 }, (_, k) => k * 10), 7].sort((a, b) => a - b),
        );
        expect(refused.find((r) => r.i === 10)).toMatchObject({ code: 'ConstraintViolation', native: '23514' });
        expect(refused.find((r) => r.i === 7)).toMatchObject({ native: '23502' });
        // The server's own words, and the column, whether it tried the record or its constraints told.
        expect(results[7]).toMatchObject({
          ok: false,
          error: {
            message: 'null value in column "note" of relation "checked" violates not-null constraint',
            field: 'note',
          },
        });
        expect(results[20]).toMatchObject({
          ok: false,
          error: { message: 'new row for relation "checked" violates check constraint "checked_n_check"' },
        });
        const written = await withClient(db.url, (c) =>
          c.query<{ id: number }>('SELECT id FROM checked WHERE id >= $1 AND id < $2 ORDER BY id', [base, base + 1000]),
        );
        expect(written.rows.map((r) => r.id - base)).toEqual(
          records.map((_, i) => i).filter((i) => i % 10 !== 0 && i !== 7),
        );
      }
      expect(await other.readCheckpoint('checked')).toBe('v1');
    } finally {
      await other.close();
    }
  });

  it('keeps every batch exact while a load alternates between batches with refused records and clean ones', async () => {
    await withClient(db.url, (c) =>
      c.query('CREATE TABLE alternating (id integer PRIMARY KEY, n integer CHECK (n <> 13))'),
    );
    const other = await host.open({
      connectorId: 'PostgreSQL',
      connectionId: 'pg-alternating',
      properties: { connectionString: db.url },
    });
    try {
      // Batches after one with refused records go to the stage at once; a clean one there ends that.
      const plan = [true, true, false, false, true, false, false, false];
      for (const [b, bad] of plan.entries()) {
        const records: ConnectorRecord[] = Array.from({ length: 100 }, (_, i) => ({
          id: b * 100 + i,
          n: bad && i % 25 === 0 ? 13 : 100 + i,
        }));
        const results = await other.write('Create', 'alternating', records, {});
        expect(results.flatMap((r, i) => (r.ok ? [] : [i]))).toEqual(bad ? [0, 25, 50, 75] : []);
      }
      const n = await withClient(db.url, (c) => c.query<{ n: string }>('SELECT count(*) AS n FROM alternating'));
      expect(Number(n.rows[0]?.n)).toBe(800 - 3 * 4);
    } finally {
      await other.close();
    }
  });

  it('refuses, in a large Create batch, exactly the records the server refuses: keys held by the table or an earlier record, missing parents, and what only a trigger refuses', async () => {
    await withClient(db.url, (c) =>
      c.query(`
        CREATE TABLE parents (id integer PRIMARY KEY);
        INSERT INTO parents SELECT g FROM generate_series(0, 99) g;
        CREATE TABLE kids (id integer PRIMARY KEY, code text UNIQUE, parent integer REFERENCES parents(id), n integer CHECK (n >= 0), note text);
        INSERT INTO kids (id, code, parent, n) VALUES (5, 'held', 1, 1);
      `),
    );
    const other = await host.open({
      connectorId: 'PostgreSQL',
      connectionId: 'pg-kids',
      properties: { connectionString: db.url },
    });
    try {
      const records: ConnectorRecord[] = Array.from({ length: 200 }, (_, i) => ({
        id: 1000 + i,
        code: `c${i}`,
        parent: i % 100,
        n: i,
        note: null,
      }));
      records[3] = { id: 5, code: 'c3', parent: 1, n: 3, note: null }; // the table holds id 5
      records[4] = { id: 1004, code: 'held', parent: 1, n: 4, note: null }; // and code 'held'
      records[20] = { id: 1010, code: 'c20', parent: 1, n: 20, note: null }; // record 10 has id 1010 already
      records[30] = { id: 1030, code: 'c30', parent: 500, n: 30, note: null }; // no parent 500
      records[31] = { id: 1031, code: 'c31', parent: null, n: 31, note: null }; // no parent needed
      records[40] = { id: 1040, code: 'c40', parent: 1, n: -1, note: null }; // CHECK
      records[41] = { id: 1040, code: 'c41', parent: 1, n: 41, note: null }; // the same id as the refused record before it: written
      const results = await other.write('Create', 'kids', records, {});
      const refused = results.flatMap((r, i) => (r.ok ? [] : [{ i, native: r.error.nativeCode }]));
      expect(refused).toEqual([
        { i: 3, native: '23505' },
        { i: 4, native: '23505' },
        { i: 20, native: '23505' },
        { i: 30, native: '23503' },
        { i: 40, native: '23514' },
      ]);
      const ids = await withClient(db.url, (c) =>
        c.query<{ id: number; code: string }>('SELECT id, code FROM kids WHERE id >= 1000 ORDER BY id'),
      );
      expect(ids.rows).toHaveLength(195);
      expect(ids.rows.find((r) => r.id === 1040)?.code).toBe('c41');
      expect(ids.rows.find((r) => r.id === 1010)?.code).toBe('c10');

      // A trigger refuses what no constraint says: every record is then tried on its own, and only its own are refused.
      await withClient(db.url, (c) =>
        c.query(`
          CREATE FUNCTION no_sevens() RETURNS trigger LANGUAGE plpgsql AS $$
          BEGIN IF NEW.n % 7 = 0 THEN RAISE EXCEPTION 'no sevens: %', NEW.n USING ERRCODE = '23514'; END IF; RETURN NEW; END $$;
          CREATE TRIGGER kids_no_sevens BEFORE INSERT ON kids FOR EACH ROW EXECUTE FUNCTION no_sevens();
        `),
      );
      const more: ConnectorRecord[] = Array.from({ length: 100 }, (_, i) => ({
        id: 5000 + i,
        code: `m${i}`,
        parent: 1,
        n: i + 1,
        note: null,
      }));
      more[50] = { id: 5050, code: 'm50', parent: 1, n: -5, note: null };
      const second = await other.write('Create', 'kids', more, {});
      const refusedMore = second.flatMap((r, i) => (r.ok ? [] : [i]));
      expect(refusedMore).toEqual([6, 13, 20, 27, 34, 41, 48, 50, 55, 62, 69, 76, 83, 90, 97]);
      expect(second[6]).toMatchObject({ ok: false, error: { message: expect.stringMatching(/no sevens: 7/) } });
      const count = await withClient(db.url, (c) =>
        c.query<{ n: string }>('SELECT count(*) AS n FROM kids WHERE id >= 5000'),
      );
      expect(Number(count.rows[0]?.n)).toBe(85);

      // A small batch is halved instead: the same words, a key's detail kept, the row's values never.
      const few = await other.write(
        'Create',
        'kids',
        [
          { id: 6000, code: 'f0', parent: 1, n: -1, note: 'secret' },
          { id: 5, code: 'f1', parent: 1, n: 1, note: null },
          { id: 6002, code: 'f2', parent: 1, n: 2, note: null },
        ],
        {},
      );
      expect(few[0]).toMatchObject({
        ok: false,
        error: { message: 'new row for relation "kids" violates check constraint "kids_n_check"', nativeCode: '23514' },
      });
      expect(few[1]).toMatchObject({
        ok: false,
        error: {
          message: expect.stringMatching(
            /^duplicate key value violates unique constraint "kids_pkey" Key \(id\)=\(5\) already exists\.$/,
          ),
        },
      });
      expect(few[2]).toMatchObject({ ok: true });
    } finally {
      await other.close();
    }
  });
});
