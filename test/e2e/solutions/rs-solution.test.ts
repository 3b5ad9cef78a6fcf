import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import { killAll, serviceUnderTest, until, type ServiceUnderTest } from '../agent/harness.js';
import { createConnection, finished, POSTGRES, runningAgent, SQLITE } from './harness.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');
const ORDERS = 100_000;

interface SolutionView {
  id: string;
  status: string;
  lastRunTime: string | null;
}

/**
 * A Replication Solution through the API alone, run by a real Agent process: two SQLite tables
 * (one of 100,000 rows) copied into PostgreSQL — the Solution prepares itself, a start copies
 * everything, History records it; then 10 rows change and 5 are added at the source, and a
 * second run processes exactly those 15 and leaves the target equal to the source.
 */
describe.skipIf(!HAS_PG)(
  'an RS Solution on a real Agent: SQLite → PostgreSQL, full copy then net change (needs FERRY_TEST_DATABASE_URL)',
  () => {
    let sut: ServiceUnderTest;
    let db: { url: string; drop: () => Promise<void> };
    let client: pg.Client;
    let agent: Awaited<ReturnType<typeof runningAgent>>;
    let file: string;

    beforeAll(async () => {
      sut = serviceUnderTest();
      await sut.start();
      db = await createTestDatabase();
      client = new pg.Client({ connectionString: db.url });
      await client.connect();
      file = path.join(sut.dataDir, 'shop.db');
      const src = new Database(file);
      src.exec(`CREATE TABLE customers (id INTEGER PRIMARY KEY, name TEXT NOT NULL, city TEXT, updated_at DATETIME NOT NULL);
              CREATE TABLE orders (id INTEGER PRIMARY KEY, customer_id INTEGER NOT NULL, total NUMERIC, note TEXT, updated_at DATETIME NOT NULL);`);
      const addCustomer = src.prepare('INSERT INTO customers VALUES (?, ?, ?, ?)');
      const addOrder = src.prepare('INSERT INTO orders VALUES (?, ?, ?, ?, ?)');
      src.transaction(() => {
        for (let i = 1; i <= 500; i++)
          addCustomer.run(i, `Customer ${i}`, i % 3 === 0 ? null : `City ${i % 17}`, stamp(i));
        for (let i = 1; i <= ORDERS; i++)
          addOrder.run(
            i,
            (i % 500) + 1,
            `${(i * 7) % 1000}.${String(i % 100).padStart(2, '0')}`,
            i % 5 === 0 ? null : `note ${i}`,
            stamp(i % 5000),
          );
      })();
      src.close();
      agent = await runningAgent(sut);
    }, 180_000);

    afterAll(async () => {
      killAll();
      await client?.end();
      await sut?.dispose();
      await db?.drop();
    });

    it(
      'prepares itself, copies both tables, then copies exactly the 15 rows that changed',
      { timeout: 300_000 },
      async () => {
        const O = `/v1/orgs/${sut.orgId}`;
        const srcId = await createConnection(sut, 'Shop file', SQLITE, { file });
        const dstId = await createConnection(sut, 'Warehouse', POSTGRES, {
          connectionString: db.url,
          schemas: 'public',
        });
        const created = await sut.request<SolutionView>('POST', `${O}/solutions`, {
          body: {
            name: 'Shop to warehouse',
            solutionType: 'Replication',
            agentId: agent.agentId,
            connectionIdForSource: srcId,
            connectionIdForTarget: dstId,
            replicationSettings: { selectionType: 'Selected', entities: ['customers', 'orders'] },
            mapLinks: [],
            checkForBulk: true,
          },
        });
        expect(created.status, JSON.stringify(created.body)).toBe(201);
        const S = `${O}/solutions/${created.body.id}`;
        // Clients wait while it prepares itself, without calling prepare.
        const ready = await until(
          'the Solution prepared',
          async () => {
            const s = (await sut.request<SolutionView>('GET', S)).body;
            return s.status === 'OnDemand' || s.status === 'ProvisionError' ? s : undefined;
          },
          120_000,
        );
        expect(ready.status).toBe('OnDemand');

        const first = await sut.request<{ runId: string; started: boolean }>('POST', `${S}/start`);
        expect(first.body.started).toBe(true);
        const run1 = await finished(sut, created.body.id, first.body.runId);
        expect(run1, JSON.stringify(run1)).toMatchObject({
          result: 'CompletedSuccessfully',
          recordsProcessed: ORDERS + 500,
          recordsFailed: 0,
        });
        await expectEqual();
        const stats = await sut.request<{
          mapStatistics: Array<{ entityName?: string; mapName: string; recordsProcessed: number }>;
        }>('GET', `${S}/history/${run1.id}/statistics`);
        expect(stats.status).toBe(200);
        expect(stats.body.mapStatistics.map((m) => m.recordsProcessed).sort((a, b) => a - b)).toEqual([500, ORDERS]);
        expect((await sut.request<SolutionView>('GET', S)).body.lastRunTime).not.toBeNull();

        // 10 rows change and 5 are added, with later modification stamps.
        const src = new Database(file);
        src.transaction(() => {
          const later = stamp(10_000);
          for (let i = 1; i <= 10; i++)
            src.prepare('UPDATE orders SET note = ?, updated_at = ? WHERE id = ?').run(`changed ${i}`, later, i * 1000);
          for (let i = 1; i <= 5; i++)
            src.prepare('INSERT INTO orders VALUES (?, ?, ?, ?, ?)').run(ORDERS + i, 1, '1.00', 'new', later);
        })();
        src.close();
        const second = await sut.request<{ runId: string }>('POST', `${S}/start`);
        const run2 = await finished(sut, created.body.id, second.body.runId);
        expect(run2, JSON.stringify(run2)).toMatchObject({
          result: 'CompletedSuccessfully',
          recordsProcessed: 15,
          recordsFailed: 0,
        });
        await expectEqual();

        // A table created after the source's metadata was loaded: selecting it prepares with fresh metadata.
        const add = new Database(file);
        add.exec(
          "CREATE TABLE suppliers (id INTEGER PRIMARY KEY, name TEXT, updated_at DATETIME NOT NULL); INSERT INTO suppliers VALUES (1, 'Acme', '2024-01-01T00:00:00Z'), (2, 'Globex', '2024-01-01T00:00:01Z');",
        );
        add.close();
        const changed = await sut.request<SolutionView>('PUT', S, {
          body: {
            name: 'Shop to warehouse',
            solutionType: 'Replication',
            agentId: agent.agentId,
            connectionIdForSource: srcId,
            connectionIdForTarget: dstId,
            replicationSettings: { selectionType: 'Selected', entities: ['customers', 'orders', 'suppliers'] },
            mapLinks: [],
            checkForBulk: true,
          },
        });
        expect(changed.status, JSON.stringify(changed.body)).toBe(200);
        const again = await until(
          'the Solution prepared again',
          async () => {
            const s = (await sut.request<SolutionView>('GET', S)).body;
            return s.status === 'OnDemand' || s.status === 'ProvisionError' ? s : undefined;
          },
          120_000,
        );
        expect(again.status).toBe('OnDemand');
        const third = await sut.request<{ runId: string }>('POST', `${S}/start`);
        const run3 = await finished(sut, created.body.id, third.body.runId);
        expect(run3, JSON.stringify(run3)).toMatchObject({ result: 'CompletedSuccessfully', recordsProcessed: 2 });
        expect(Number((await client.query<{ n: string }>('SELECT count(*) AS n FROM suppliers')).rows[0]?.n)).toBe(2);
      },
    );

    /** Every row of both source tables is in PostgreSQL once, with the same values. */
    async function expectEqual(): Promise<void> {
      const src = new Database(file, { readonly: true });
      try {
        for (const table of ['customers', 'orders']) {
          const n = (src.prepare(`SELECT count(*) AS n FROM ${table}`).get() as { n: number }).n;
          const { rows } = await client.query<{ n: string; d: string }>(
            `SELECT count(*) AS n, count(DISTINCT id) AS d FROM ${table}`,
          );
          expect(Number(rows[0]?.n), table).toBe(n);
          expect(Number(rows[0]?.d), table).toBe(n);
        }
        const want = src
          .prepare('SELECT id, note FROM orders WHERE id % 1000 = 0 OR id > ? ORDER BY id')
          .all(ORDERS) as Array<{ id: number; note: string | null }>;
        const got = await client.query<{ id: string; note: string | null }>(
          'SELECT id, note FROM orders WHERE id % 1000 = 0 OR id > $1 ORDER BY id',
          [ORDERS],
        );
        expect(got.rows.map((r) => ({ id: Number(r.id), note: r.note }))).toEqual(want);
      } finally {
        src.close();
      }
    }
  },
);

/** A distinct modification stamp per value, a second apart. */
function stamp(i: number): string {
  return new Date(Date.UTC(2024, 0, 1) + i * 1000).toISOString().replace('.000Z', 'Z');
}
