import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql, type Kysely } from 'kysely';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isUniqueViolation } from '../../../../service/store/sql.js';
import { preinstalledConnectors } from '../../../../service/marketplace/catalogue.js';
import { openStore, type Store } from '../../../../service/store/store.js';

/**
 * The SQLite store's two extra paths: reads outside a transaction on a reader connection, and
 * long write transactions (Store.bulkTransaction) on a worker thread's connection.
 */
describe('SQLite store', () => {
  let dir: string;
  let store: Store;

  beforeEach(async () => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-sqlite-store-'));
    store = await openStore({ dataDir: dir, preinstalledConnectors: preinstalledConnectors() });
    await sql`create table scratch (id integer primary key, name text not null unique)`.execute(store.db);
  });
  afterEach(async () => {
    await store.close();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  const addRow = (db: Store['db'], name: string): Promise<unknown> =>
    sql`insert into scratch (name) values (${name})`.execute(db);
  // Raw SQL, as some of the Service's reads are (the guard's role check): it is a read all the same.
  const rowNames = async (): Promise<string[]> =>
    (await sql<{ name: string }>`select name from scratch order by id`.execute(store.db)).rows.map((r) => r.name);
  const builtRowNames = async (): Promise<string[]> =>
    (
      await (store.db as unknown as Kysely<{ scratch: { id: number; name: string } }>)
        .selectFrom('scratch')
        .select('name')
        .orderBy('id')
        .execute()
    ).map((r) => r.name);

  it('runs a bulk transaction off the event loop: timers fire while one of its statements runs', async () => {
    let ticks = 0;
    const timer = setInterval(() => (ticks += 1), 5);
    try {
      // A statement of a few hundred milliseconds; on the Service's own connection no timer could fire during it.
      const counted = await store.bulkTransaction(async (tx) => {
        const before = ticks;
        const { rows } = await sql<{
          n: number;
        }>`with recursive c(x) as (select 1 union all select x + 1 from c where x < 3000000) select count(*) as n from c`.execute(
          tx,
        );
        return { n: rows[0]?.n, ticksDuring: ticks - before };
      });
      expect(counted.n).toBe(3_000_000);
      expect(counted.ticksDuring).toBeGreaterThan(3);
    } finally {
      clearInterval(timer);
    }
  });

  it('commits a bulk transaction for every reader, and rolls back a failed one entirely', async () => {
    await store.bulkTransaction(async (tx) => {
      await addRow(tx, 'bulk one');
      await addRow(tx, 'bulk two');
    });
    expect(await rowNames()).toEqual(expect.arrayContaining(['bulk one', 'bulk two']));

    await expect(
      store.bulkTransaction(async (tx) => {
        await addRow(tx, 'never seen');
        throw new Error('the import found a bad line');
      }),
    ).rejects.toThrow('the import found a bad line');
    expect(await rowNames()).not.toContain('never seen');
  });

  it('reports SQLite errors with their codes from the worker', async () => {
    const err = await store
      .bulkTransaction(async (tx) => {
        await addRow(tx, 'twice');
        await addRow(tx, 'twice');
      })
      .catch((e: unknown) => e);
    expect(isUniqueViolation(err)).toBe(true);
  });

  it('lets reads go on during a bulk transaction and queues other writes until it ends', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const bulk = store.bulkTransaction(async (tx) => {
      await addRow(tx, 'from the bulk transaction');
      await held;
    });
    // Its row is written but not committed: a reader is answered at once, without it.
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(await rowNames()).not.toContain('from the bulk transaction');
    expect(await builtRowNames()).not.toContain('from the bulk transaction');
    let written = false;
    const other = addRow(store.db, 'an ordinary write').then(() => (written = true));
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(written).toBe(false);
    release();
    await bulk;
    await other;
    expect(await rowNames()).toEqual(expect.arrayContaining(['from the bulk transaction', 'an ordinary write']));
  });
});
