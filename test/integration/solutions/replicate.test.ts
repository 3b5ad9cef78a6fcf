/**
 * The Replication engine on real datastores: SQLite → PostgreSQL (when FERRY_TEST_DATABASE_URL
 * names a server) and SQLite → SQLite. First copy, net change, a new column, a refused record, an
 * entity that cannot be replicated, a stop and a kill -9 part-way — after each the target equals
 * the source, with nothing lost and nothing doubled, keyed or not.
 */
import { spawn } from 'node:child_process';
import Database from 'better-sqlite3';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { FormulaEngine } from '../../../src/maps/formula/evaluator.js';
import { FileReplicationState, MemoryReplicationState } from '../../../src/solutions/replicate.js';
import {
  EVENTS,
  ORDERS,
  count,
  later,
  makeSource,
  open,
  run,
  snapshot,
  sqlite,
  tempDir,
  type Conns,
} from './replicate-helpers.js';
import { TARGETS, expectEqual, type Target } from './replicate-targets.js';

const ALL = ['orders', 'customers', 'events', 'regions', 'codes'];

describe.each(TARGETS)('replication sqlite → $name', (kind) => {
  const dir = tempDir();
  const sourceFile = path.join(dir, 'source.db');
  const targets: Target[] = [];
  const opened: Conns[] = [];
  let c: Conns;
  const state = new FileReplicationState(path.join(dir, 'state'));
  const fresh = async (): Promise<{ conns: Conns; target: Target }> => {
    const target = await kind.make(dir, targets.length);
    targets.push(target);
    const conns = await open(sourceFile, target);
    opened.push(conns);
    return { conns, target };
  };

  beforeAll(async () => {
    makeSource(sourceFile);
    c = (await fresh()).conns;
  });
  afterAll(async () => {
    for (const o of opened) await o.close();
    for (const t of targets) await t.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('the first run creates the tables and copies every record; an entity with neither key nor stamp fails alone', async () => {
    const packed = vi.spyOn(c.source, 'queryPacked');
    const sandbox = vi.spyOn(FormulaEngine, 'create');
    const r = await run(c, state, ALL);
    // Each entity is a plan the Map runtime runs (src/solutions/replication-plan.ts); it copies
    // fields as read, so no sandbox starts.
    expect(sandbox).not.toHaveBeenCalled();
    sandbox.mockRestore();
    // The first copies in key order, and the copy by key of an entity without a stamp, move packed
    // batches (src/connectors/packed.ts): no records. The Create of events checkpoints batch by batch.
    expect(packed.mock.calls.map((call) => call[0])).toEqual(['orders', 'customers', 'regions']);
    expect(packed.mock.results.map((x) => x.value !== undefined)).toEqual([true, true, true]);
    packed.mockRestore();
    expect(r.cancelled).toBe(false);
    expect(r.statistics.map((s) => s.entity)).toEqual(ALL);
    expect(r.by).toEqual({ orders: ORDERS, customers: 300, events: EVENTS, regions: 20, codes: 0 });
    expect(r.processed).toBe(ORDERS + 300 + EVENTS + 20);
    expect(r.failed).toBe(0);
    const codes = r.statistics.find((s) => s.entity === 'codes');
    expect(codes?.fatal).toMatch(/no primary key/);
    expect(r.fatal).toMatch(/^codes: /);
    for (const s of r.statistics.filter((x) => x.entity !== 'codes')) {
      expect(s.fatal).toBeUndefined();
      expect(s.mapName).toBe(s.entity);
      expect(s.blocks.map((b) => b.name)).toEqual(['Read', s.entity === 'events' ? 'Create' : 'Upsert']);
      expect(s.blocks[1]?.processed).toBe(s.processed);
    }
    for (const e of ['orders', 'customers', 'events', 'regions']) await expectEqual(c, e);
    // The checkpoint table of the keyless entity stays out of the target's metadata.
    const md = await c.target.metadata({ reload: true });
    expect(md.entities.map((e) => e.fullName).sort()).toEqual(['customers', 'events', 'orders', 'regions']);
  });

  it('a second run copies exactly the 10 changed and 5 added records; an entity without a stamp is copied again, not doubled', async () => {
    sqlite(
      sourceFile,
      `UPDATE orders SET qty = 999, modified_at = '${later(1)}' WHERE id IN (3, 500, 501, 502, 7000, 9999, 12000, 15000, 19999, 20000)`,
    );
    for (let i = 1; i <= 5; i++)
      sqlite(sourceFile, 'INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)', ORDERS + i, 'new', '1.50', 1, 2.5, later(2));
    const r = await run(c, state, ALL);
    expect(r.by).toEqual({ orders: 15, customers: 0, events: 0, regions: 20, codes: 0 });
    for (const e of ['orders', 'customers', 'events', 'regions']) await expectEqual(c, e);
    expect(await count(c.target, 'regions')).toBe(20);
  });

  it('a new source column appears on the target', async () => {
    sqlite(sourceFile, 'ALTER TABLE orders ADD COLUMN note TEXT');
    sqlite(sourceFile, `UPDATE orders SET note = 'hello', modified_at = '${later(3)}' WHERE id IN (1, 2, 3)`);
    const r = await run(c, state, ['orders']);
    expect(r.by).toEqual({ orders: 3 });
    const md = await c.target.entity('orders', { reload: true });
    expect(md.fields.map((f) => f.fullName)).toContain('note');
    await expectEqual(c, 'orders');
  });

  it('a record the target refuses becomes a record error, and the others arrive', async () => {
    if (kind.name === 'postgres' || kind.name === 'mariadb') {
      const alter = c.target.nativeQuery(`ALTER TABLE customers ADD CONSTRAINT not_bad CHECK (name <> 'bad')`);
      await alter[Symbol.asyncIterator]().next();
    } else {
      const file = targets[0]?.properties['file'] as string;
      sqlite(
        file,
        `CREATE TRIGGER not_bad_i BEFORE INSERT ON customers WHEN NEW.name = 'bad' BEGIN SELECT RAISE(ABORT, 'bad name'); END;
        CREATE TRIGGER not_bad_u BEFORE UPDATE ON customers WHEN NEW.name = 'bad' BEGIN SELECT RAISE(ABORT, 'bad name'); END;`,
      );
    }
    sqlite(sourceFile, `UPDATE customers SET name = 'bad', updated = '${later(4)}' WHERE code = 'c1'`);
    sqlite(sourceFile, `UPDATE customers SET name = 'good', updated = '${later(4)}' WHERE code IN ('c2', 'c3')`);
    sqlite(sourceFile, `INSERT INTO customers VALUES ('c900', 'bad', '${later(5)}'), ('c901', 'fine', '${later(5)}')`);
    const r = await run(c, state, ['customers']);
    expect(r.by).toEqual({ customers: 5 });
    expect(r.failed).toBe(2);
    expect(r.statistics[0]?.failed).toBe(2);
    expect(r.fatal).toBeUndefined();
    expect(r.errors).toHaveLength(2);
    for (const e of r.errors) {
      expect(e).toMatchObject({
        mapName: 'customers',
        sourceEntity: 'customers',
        code: 'RUN_WRITE_FAILED',
        canReprocess: false,
      });
      expect(e.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-/);
      expect(e.errorMessage).toMatch(/refused the record/);
    }
    expect(r.errors.map((e) => (JSON.parse(e.errorDetail) as { key: { code: string } }).key.code).sort()).toEqual([
      'c1',
      'c900',
    ]);
    // Which records: their key, as History shows it.
    expect(
      r.errors.map((e) => e.sourceKey).sort((a, b) => String(a?.['code']).localeCompare(String(b?.['code']))),
    ).toEqual([{ code: 'c1' }, { code: 'c900' }]);
    const target = await snapshot(c.target, 'customers');
    expect(target.filter((l) => l.includes('"good"'))).toHaveLength(2);
    expect(target.some((l) => l.includes('"c901"'))).toBe(true);
    expect(target.some((l) => l.includes('"c900"'))).toBe(false);
  });

  it('a run stopped part-way resumes where its checkpoint stands: nothing lost, nothing doubled, keyed or not', async () => {
    const { conns } = await fresh();
    const st = new MemoryReplicationState();
    const stop = new AbortController();
    const first = await run(conns, st, ['orders', 'events'], {
      batchSize: 1000,
      signal: stop.signal,
      onProgress: (p) => {
        if (p.processed >= 5000) stop.abort();
      },
    });
    expect(first.cancelled).toBe(true);
    expect(first.statistics.map((s) => s.entity)).toEqual(['orders']);
    const done = first.by['orders'] as number;
    expect(done).toBe(5000);
    expect(await count(conns.target, 'orders')).toBe(done);

    const second = await run(conns, st, ['orders']);
    // Exactly the rest: the records at the checkpoint's instant already copied are skipped.
    expect(second.by).toEqual({ orders: ORDERS + 5 - done });
    await expectEqual(conns, 'orders');

    const stopEvents = new AbortController();
    const third = await run(conns, st, ['events'], {
      batchSize: 700,
      signal: stopEvents.signal,
      onProgress: (p) => {
        if (p.processed >= 2100) stopEvents.abort();
      },
    });
    expect(third.cancelled).toBe(true);
    expect(await count(conns.target, 'events')).toBe(2100);
    const fourth = await run(conns, st, ['events']);
    expect(fourth.by).toEqual({ events: EVENTS - 2100 });
    await expectEqual(conns, 'events');
  });

  it(
    'a stop while a write waits on a lock ends the run within seconds, the write cancelled; the next run copies exactly the rest',
    { timeout: 60_000 },
    async () => {
      const { conns, target } = await fresh();
      const st = new MemoryReplicationState();
      const stop1 = new AbortController();
      await run(conns, st, ['orders'], {
        batchSize: 1000,
        signal: stop1.signal,
        onProgress: (p) => p.processed >= 2000 && stop1.abort(),
      });
      const before = await count(conns.target, 'orders');
      // Another session holds the table (PostgreSQL, MariaDB) or the file (SQLite) while the run writes.
      let release: () => Promise<void>;
      if (target.connector === 'PostgreSQL') {
        const pg = (await import('pg')).default;
        const locker = new pg.Client({ connectionString: target.properties['connectionString'] as string });
        await locker.connect();
        await locker.query('BEGIN');
        await locker.query('LOCK TABLE orders IN EXCLUSIVE MODE');
        release = async () => {
          await locker.query('ROLLBACK');
          await locker.end();
        };
      } else if (target.connector === 'MariaDB') {
        const mysql = (await import('mysql2/promise')).default;
        const p = target.properties;
        const locker = await mysql.createConnection({
          host: p['host'],
          port: Number(p['port']),
          user: p['user'],
          database: p['database'],
          ...(p['password'] ? { password: p['password'] } : {}),
        });
        await locker.query('LOCK TABLES orders WRITE');
        release = async () => {
          await locker.query('UNLOCK TABLES');
          await locker.end();
        };
      } else {
        const db = new Database(target.properties['file']);
        db.exec('BEGIN IMMEDIATE');
        release = () => {
          db.exec('ROLLBACK');
          db.close();
          return Promise.resolve();
        };
      }
      const stop2 = new AbortController();
      setTimeout(() => stop2.abort(), 300);
      const t0 = performance.now();
      const cut = await run(conns, st, ['orders'], { batchSize: 1000, signal: stop2.signal });
      const took = performance.now() - t0;
      await release();
      expect(cut.cancelled).toBe(true);
      // Not the 600 s write time-out: the grace (2.5 s) and the cancel.
      expect(took).toBeLessThan(10_000);
      expect(await count(conns.target, 'orders')).toBe(before);
      await run(conns, st, ['orders']);
      await expectEqual(conns, 'orders');
    },
  );

  it('killed with SIGKILL part-way, the copy resumes from its last finished batch without doubling a record', async () => {
    const target = await kind.make(dir, targets.length);
    targets.push(target);
    const stateDir = path.join(dir, `state-${targets.length}`);
    const conns = await open(sourceFile, target);
    opened.push(conns);
    for (const entity of ['events', 'orders']) {
      const child = spawn(
        process.execPath,
        [
          '--import',
          'tsx',
          path.join(import.meta.dirname, 'replicate-child.ts'),
          JSON.stringify({ sourceFile, target, stateDir, entities: [entity], batchSize: 400 }),
        ],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      );
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      // Killed once a fifth of the entity is in the target.
      const deadline = Date.now() + 60_000;
      const goal = (entity === 'events' ? EVENTS : ORDERS) / 5;
      let seen = 0;
      while (Date.now() < deadline && child.exitCode === null) {
        seen = await count(conns.target, entity).catch(() => 0);
        if (seen >= goal) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      child.kill('SIGKILL');
      await exited;
      expect(seen).toBeGreaterThanOrEqual(goal);
      const again = await run(conns, new FileReplicationState(stateDir), [entity]);
      expect(again.fatal).toBeUndefined();
      await expectEqual(conns, entity);
    }
  }, 120_000);

  it('without bulk writes the copy is the same, a batch per write call (not a record per call)', async () => {
    const { conns } = await fresh();
    const write = vi.spyOn(conns.target, 'write');
    const r = await run(conns, new MemoryReplicationState(), ['customers', 'notes'], {
      checkForBulk: false,
      batchSize: 50,
    });
    const customers = await count(conns.source, 'customers');
    const sizes = write.mock.calls.map((call) => call[2].length).filter((n) => n > 0);
    expect(sizes.reduce((a, b) => a + b, 0)).toBe(customers + 120);
    expect(Math.max(...sizes)).toBe(50);
    expect(sizes.length).toBeLessThanOrEqual(Math.ceil(customers / 50) + Math.ceil(120 / 50));
    write.mockRestore();
    expect(r.by).toEqual({ customers, notes: 120 });
    expect(r.statistics.map((s) => s.blocks[1]?.processed)).toEqual([customers, 120]);
    await expectEqual(conns, 'customers');
    await expectEqual(conns, 'notes');
    const again = await run(conns, new MemoryReplicationState(), ['notes'], { checkForBulk: false });
    expect(again.by).toEqual({ notes: 0 });
  });

  it('a first copy reads in key order from one snapshot: stopped, resumed after its last key, and a change made between the parts arrives with the part that resumes it', async () => {
    const { conns } = await fresh();
    const st = new MemoryReplicationState();
    const stop = new AbortController();
    const part1 = await run(conns, st, ['orders'], {
      batchSize: 1000,
      signal: stop.signal,
      onProgress: (p) => {
        if (p.processed >= 3000) stop.abort();
      },
    });
    expect(part1.cancelled).toBe(true);
    const copied = part1.by['orders'] as number;
    expect(copied).toBe(3000);
    // Key order: exactly the first ids, whatever their stamps (ids 1–3 carry the newest ones).
    const ids = (await snapshot(conns.target, 'orders'))
      .map((l) => (JSON.parse(l) as { id: number }).id)
      .sort((a, b) => a - b);
    expect(ids).toEqual(Array.from({ length: copied }, (_, i) => i + 1));
    const progress = await st.entity('orders', 'modified_at').loadInitial();
    expect(progress?.parts).toEqual([{ upTo: copied, since: progress?.mark }]);

    // Between the parts: a copied record changes (a stamp newer than any the first part read), and
    // a record is added whose stamp is newer still.
    sqlite(sourceFile, `UPDATE orders SET qty = 4242, modified_at = '${later(20)}' WHERE id = 10`);
    sqlite(
      sourceFile,
      'INSERT INTO orders (id, customer, amount, qty, price, modified_at) VALUES (?, ?, ?, ?, ?, ?)',
      ORDERS + 50,
      'between',
      '2.00',
      2,
      2.5,
      later(21),
    );
    const part2 = await run(conns, st, ['orders']);
    const total = await count(conns.source, 'orders');
    // The rest, and of those copied first only the one that changed: ids 1–3, copied at the first
    // part's newest stamp, are read again and not written again.
    expect(part2.by).toEqual({ orders: total - copied + 1 });
    expect(await st.entity('orders', 'modified_at').loadInitial()).toBeNull();
    await expectEqual(conns, 'orders');

    // The watermark is the second part's newest stamp: nothing is read again.
    const quiet = await run(conns, st, ['orders']);
    expect(quiet.by).toEqual({ orders: 0 });
  });
});
