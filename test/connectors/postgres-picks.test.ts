/**
 * A refused large Create batch written "picks first" (connectors/postgres/write/picks-first.ts):
 * the rows its NOT NULL and CHECK constraints refuse are found from only the columns they read,
 * and one COPY writes the others; whatever that cannot tell goes to rowByRow. Each case writes the
 * same batch through a writer with the picks and one without (rowByRow only), into tables of one
 * name in two schemas, and compares every per-row result and the rows written.
 */
import pg from 'pg';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
// Importing the store helper applies its rule: in CI (CI=true) a missing FERRY_TEST_DATABASE_URL fails the run.
import { createTestDatabase } from '../helpers/stores.js';
import {
  packRecords,
  type CallContext,
  type ConnectorRecord,
  type WriteOptions,
  type WriteResult,
} from '../../src/connectors/sdk.js';
import { readCatalogue, type PgTable } from '../../connectors/postgres/catalogue.js';
import { parseProps } from '../../connectors/postgres/properties.js';
import { PgWriter } from '../../connectors/postgres/write/index.js';
import type * as rows from '../../connectors/postgres/write/row-by-row.js';
import { rowByRow } from '../../connectors/postgres/write/row-by-row.js';

// rowByRow as it is, counted: how often a writer fell back to it.
vi.mock('../../connectors/postgres/write/row-by-row.js', async (original) => {
  const m = await original<typeof rows>();
  return { ...m, rowByRow: vi.fn(m.rowByRow) };
});

const URL_SET = Boolean(process.env['FERRY_TEST_DATABASE_URL']);

const ctx: CallContext = {
  log: pino({ level: 'silent' }),
  signal: new AbortController().signal,
  progress: () => undefined,
};

/** Text with every kind of character the arrays, COPY and the messages must carry. */
const TEXTS = [
  'plain',
  '',
  'NULL',
  'null',
  'tab\there',
  'new\nline',
  'cr\rx',
  'back\\slash',
  '"quoted"',
  "it's",
  '{braces}',
  'a,b',
  ' spaced ',
  'Zoë — ünïcödé',
  '😀 emoji',
  '\\N',
  'x'.repeat(300),
];

describe.skipIf(!URL_SET)('postgres: a refused large Create, picks first', () => {
  let db: { url: string; drop: () => Promise<void> };
  let pool: pg.Pool;
  let admin: pg.Client;
  let on: PgWriter;
  let off: PgWriter;

  beforeAll(async () => {
    db = await createTestDatabase();
    pool = new pg.Pool(parseProps({ connectionString: db.url }).pool);
    admin = new pg.Client({ connectionString: db.url });
    await admin.connect();
    on = new PgWriter(pool, 'public');
    off = new PgWriter(pool, 'public', { picksFirst: false });
  });

  afterAll(async () => {
    await admin?.end();
    await pool?.end();
    await db?.drop();
  });

  /** Runs `ddl` in schemas s_on and s_off (search_path set); the two tables named `name`. */
  const tables = async (ddl: string, name = 't'): Promise<{ a: PgTable; b: PgTable }> => {
    await admin.query(`DROP SCHEMA IF EXISTS s_on CASCADE; DROP SCHEMA IF EXISTS s_off CASCADE; CREATE SCHEMA s_on; CREATE SCHEMA s_off;
      SET search_path TO s_on; ${ddl}; SET search_path TO s_off; ${ddl}; RESET search_path`);
    const client = await pool.connect();
    try {
      const all = await readCatalogue(client, ['s_on', 's_off']);
      const find = (schema: string): PgTable => {
        const t = all.find((x) => x.schema === schema && x.name === name);
        if (!t) throw new Error(`no table ${schema}.${name}`);
        return t;
      };
      return { a: find('s_on'), b: find('s_off') };
    } finally {
      client.release();
    }
  };
  const contents = async (t: PgTable): Promise<unknown[]> =>
    (await admin.query(`SELECT * FROM ${t.schema}.${t.name} ORDER BY 1, 2`)).rows;
  const rowByRowCalls = (): number => vi.mocked(rowByRow).mock.calls.length;

  /** Writes each batch through both writers (records, or packed), compares, and says how often the picks writer went to rowByRow. */
  const compare = async (
    ddl: string,
    batches: ConnectorRecord[][],
    opts: { packed?: boolean; options?: WriteOptions } = {},
  ): Promise<{ results: WriteResult[][]; fallbacks: number; rows: unknown[] }> => {
    const { a, b } = await tables(ddl);
    const results: WriteResult[][] = [];
    let fallbacks = 0;
    for (const batch of batches) {
      const write = (w: PgWriter, t: PgTable): Promise<WriteResult[]> => {
        if (!opts.packed) return w.write('Create', t, batch, opts.options ?? {}, ctx);
        return w.writePacked(
          'Create',
          t,
          packRecords(batch, Object.keys(batch[0] as ConnectorRecord)),
          opts.options ?? {},
          ctx,
        );
      };
      const before = rowByRowCalls();
      const got = await write(on, a);
      fallbacks += rowByRowCalls() - before;
      const want = await write(off, b);
      expect(got).toHaveLength(batch.length);
      expect(got).toEqual(want);
      results.push(got);
    }
    const rows = await contents(a);
    expect(rows).toEqual(await contents(b));
    return { results, fallbacks, rows };
  };
  const refusedAt = (rs: WriteResult[]): number[] => rs.flatMap((r, i) => (r.ok ? [] : [i]));

  const CHECKED = `CREATE TABLE t (id integer PRIMARY KEY, name text NOT NULL, email varchar(400), qty integer NOT NULL, amount numeric(12,2),
    note text, CONSTRAINT z_tens CHECK (id % 10 <> 0), CONSTRAINT a_sevens CHECK (id % 7 <> 0), CHECK (amount >= 0),
    CHECK (email IS NULL OR position('"' in email) = 0), CHECK (note IS NULL OR note <> 'NULL'))`;
  const checkedRows = (base: number, n: number): ConnectorRecord[] =>
    Array.from({ length: n }, (_, i) => {
      const id = base + i;
      const text = TEXTS[i % TEXTS.length] as string;
      return {
        id,
        // Several refusals in one row: NOT NULL by column position, then CHECKs by name.
        name: i % 13 === 5 ? null : `${text} ${id}`,
        email: i % 11 === 3 ? text : null,
        qty: i % 17 === 4 ? null : i,
        amount: i % 19 === 2 ? '-0.004' : i % 19 === 3 ? -1 : i % 23 === 1 ? null : `${i}.5`,
        note: i % 29 === 6 ? 'NULL' : i % 3 === 0 ? null : text,
      };
    });

  for (const packed of [false, true]) {
    it(`${packed ? 'packed' : 'records'}: NOT NULL and CHECK refusals, several in a row, text with every kind of character, nulls — as rowByRow, without it`, async () => {
      // Three batches: the first COPY is refused, the next ones come in the back-off.
      const batches = [checkedRows(1, 1000), checkedRows(2001, 1000), checkedRows(4001, 500)];
      const { results, fallbacks, rows } = await compare(CHECKED, batches, { packed });
      expect(fallbacks).toBe(0);
      const first = results[0] as WriteResult[];
      expect(refusedAt(first).length).toBeGreaterThan(300);
      // id 70: both CHECKs on id break; a_sevens comes first by name.
      expect(first[69]).toMatchObject({
        ok: false,
        error: {
          code: 'ConstraintViolation',
          nativeCode: '23514',
          message: 'new row for relation "t" violates check constraint "a_sevens"',
        },
      });
      // A null name and a false CHECK: the NOT NULL, with its field.
      expect(first[5 + 13 * 5]).toMatchObject({
        ok: false,
        error: {
          nativeCode: '23502',
          field: 'name',
          message: 'null value in column "name" of relation "t" violates not-null constraint',
        },
      });
      // -0.004 rounds to 0.00 in numeric(12,2): written.
      expect(first[40]).toEqual({ ok: true, affected: 1 });
      expect(rows.length).toBe(2500 - results.reduce((n, r) => n + refusedAt(r).length, 0));
      expect(rows).toContainEqual(expect.objectContaining({ name: 'NULL 37', email: 'NULL', note: null }));
    });
  }

  it('inside a checkpoint transaction (savepoints) the same', async () => {
    const { fallbacks, results } = await compare(CHECKED, [checkedRows(1, 700)], {
      options: { checkpoint: { key: 'k', value: 'v' } },
    });
    expect(fallbacks).toBe(0);
    expect(refusedAt(results[0] as WriteResult[]).length).toBeGreaterThan(100);
  });

  it('keys the table or the batch holds fall back to rowByRow: the same results', async () => {
    const ddl = `CREATE TABLE t (id integer PRIMARY KEY, code text UNIQUE, n integer CHECK (n >= 0)); INSERT INTO t VALUES (5, 'held', 1)`;
    const rows = (): ConnectorRecord[] =>
      Array.from({ length: 200 }, (_, i) => ({ id: 1000 + i, code: `c${i}`, n: i % 10 === 0 ? -1 : i }));
    // A key the table holds.
    const held = rows();
    held[7] = { id: 5, code: 'c7', n: 7 };
    let r = await compare(ddl, [held]);
    expect(refusedAt(r.results[0] as WriteResult[])).toEqual(
      [...Array.from({ length: 20 }, (_, k) => k * 10), 7].sort((x, y) => x - y),
    );
    expect(r.fallbacks).toBe(1);
    // A key twice in the batch, neither refused: the second is.
    const twice = rows();
    twice[21] = { id: 1011, code: 'c21', n: 21 };
    r = await compare(ddl, [twice]);
    expect(refusedAt(r.results[0] as WriteResult[])).toContain(21);
    expect(r.fallbacks).toBe(1);
    // The key of a refused row again: written, in the place rowByRow gives it.
    const again = rows();
    again[31] = { id: 1030, code: 'c30', n: 31 };
    r = await compare(ddl, [again]);
    expect(refusedAt(r.results[0] as WriteResult[])).not.toContain(31);
    expect(r.fallbacks).toBe(1);
  });

  it('a missing parent falls back; a table that refers to itself goes to rowByRow at once', async () => {
    const ddl = `CREATE TABLE p (id integer PRIMARY KEY); INSERT INTO p SELECT g FROM generate_series(0, 49) g;
      CREATE TABLE t (id integer PRIMARY KEY, parent integer REFERENCES p(id), n integer CHECK (n <> 13))`;
    const rows = Array.from({ length: 300 }, (_, i): ConnectorRecord => ({
      id: i,
      parent: i === 77 ? 500 : i % 50,
      n: i % 20 === 0 ? 13 : i,
    }));
    let r = await compare(ddl, [rows]);
    expect(refusedAt(r.results[0] as WriteResult[])).toContain(77);
    expect(r.results[0]?.[77]).toMatchObject({ ok: false, error: { nativeCode: '23503' } });
    expect(r.fallbacks).toBe(1);
    const self = `CREATE TABLE t (id integer PRIMARY KEY, up integer REFERENCES t(id), n integer CHECK (n <> 13))`;
    // Row 2 refers to row 3, which refers to row 4: rowByRow tries them in order.
    const chain = Array.from({ length: 100 }, (_, i): ConnectorRecord => ({
      id: i,
      up: i >= 2 && i <= 3 ? i + 1 : null,
      n: i % 20 === 0 ? 13 : i,
    }));
    r = await compare(self, [chain]);
    expect(r.fallbacks).toBe(1);
  });

  it('what the picks miss — a trigger that refuses rows — fails the COPY, and rowByRow writes the right rows', async () => {
    const ddl = `CREATE TABLE t (id integer PRIMARY KEY, n integer CHECK (n >= 0));
      CREATE FUNCTION no_sevens() RETURNS trigger LANGUAGE plpgsql AS $$
      BEGIN IF NEW.n % 7 = 0 THEN RAISE EXCEPTION 'no sevens: %', NEW.n USING ERRCODE = '23514'; END IF; RETURN NEW; END $$;
      CREATE TRIGGER t_no_sevens BEFORE INSERT ON t FOR EACH ROW EXECUTE FUNCTION no_sevens()`;
    for (const packed of [false, true]) {
      const rows = Array.from({ length: 150 }, (_, i): ConnectorRecord => ({ id: i, n: i % 10 === 0 ? -1 : i }));
      const r = await compare(ddl, [rows], { packed });
      expect(refusedAt(r.results[0] as WriteResult[])).toEqual(
        rows.flatMap((x, i) => ((x['n'] as number) < 0 || (x['n'] as number) % 7 === 0 ? [i] : [])),
      );
      expect(r.fallbacks).toBe(1);
    }
  });

  it('a CHECK on a varchar(n) column with a value too long for it, and a column collated otherwise than its type', async () => {
    const ddl = `CREATE TABLE t (id integer PRIMARY KEY, code varchar(5) CHECK (code <> 'abc'), tag text COLLATE "und-x-icu" CHECK (tag >= 'b'))`;
    const rows = Array.from({ length: 100 }, (_, i): ConnectorRecord => ({
      id: i,
      code: i === 50 ? 'abcdefg' : i % 10 === 0 ? 'abc' : 'x',
      tag: i % 9 === 0 ? 'a' : 'B',
    }));
    const r = await compare(ddl, [rows]);
    expect(r.results[0]?.[50]).toMatchObject({ ok: false, error: { nativeCode: '22001' } });
    expect(r.results[0]?.[9]).toMatchObject({ ok: false, error: { nativeCode: '23514' } });
    expect(r.results[0]?.[1]).toMatchObject({ ok: true });
    const fine = Array.from({ length: 100 }, (_, i): ConnectorRecord => ({
      id: i,
      code: i % 10 === 0 ? 'abc' : 'x',
      tag: i % 9 === 0 ? 'a' : 'B',
    }));
    const f = await compare(ddl, [fine]);
    expect(f.fallbacks).toBe(0);
    // 'B' >= 'b' in the column's collation (not in C): only the tens and the nines are refused.
    expect(refusedAt(f.results[0] as WriteResult[])).toEqual(
      fine.flatMap((_, i) => (i % 10 === 0 || i % 9 === 0 ? [i] : [])),
    );
  });
});
