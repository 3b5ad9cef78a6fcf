/**
 * Replication by change capture from PostgreSQL (docs/change-capture.md): the first copy, then
 * inserts, updates (a key changed, a TOASTed value left as it was) and deletes in commit order,
 * into PostgreSQL and SQLite; changes made while the first copy runs; the slot confirmed as the
 * target has the changes; the Solution's capture dropped.
 */
import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../helpers/stores.js';
import { captureDb, captureRun, makeOrders, openCapture, pgSummary, type CaptureDb } from './capture-helpers.js';
import { snapshot, tempDir } from './replicate-helpers.js';
import pg from 'pg';
import path from 'node:path';

const PG_URL = process.env['FERRY_TEST_DATABASE_URL'];
/** Slot names are the server's, not a database's: each run of the file has its own. */
const RUN = randomBytes(4).toString('hex');

describe.skipIf(!PG_URL)('replication by change capture from PostgreSQL', () => {
  let src: CaptureDb;
  let dst: { url: string; drop: () => Promise<void> };
  beforeAll(async () => {
    src = await captureDb();
    dst = await createTestDatabase();
  });
  afterAll(async () => {
    await src?.drop();
    await dst?.drop();
  });

  it('copies first, then applies inserts, updates and deletes in commit order; the slot moves as the target has them', async () => {
    await makeOrders(src, 3000);
    const dir = tempDir();
    const c = await openCapture(src.url, { connector: 'PostgreSQL', properties: { connectionString: dst.url } });
    try {
      const first = await captureRun(c, dir, ['orders'], { name: `ferry_t_pg_${RUN}` });
      expect(first.fatal).toBeUndefined();
      expect(first.processed).toBe(3000);
      expect(await pgSummary(dst.url, 'orders')).toEqual(await pgSummary(src.url, 'orders'));

      // Changes: inserts, updates, deletes, a key changed, a large value left as it was, one row
      // changed several times within a transaction and across transactions.
      const big = 'B'.repeat(200_000);
      await src.q(`UPDATE orders SET note = $1 WHERE id = 7`, [big]);
      await src.q(`INSERT INTO orders (id, name, amount) SELECT i, 'new' || i, 1.5 FROM generate_series(3001, 3500) i`);
      await src.q(`UPDATE orders SET amount = amount + 1, name = 'u' || id WHERE id % 10 = 0`);
      await src.q(`DELETE FROM orders WHERE id % 13 = 0`);
      await src.q(`UPDATE orders SET id = 99999 WHERE id = 1`);
      await src.q(`UPDATE orders SET name = 'toast kept' WHERE id = 7`);
      await src.q(
        `BEGIN; UPDATE orders SET name = 'a' WHERE id = 2; UPDATE orders SET name = 'b' WHERE id = 2; DELETE FROM orders WHERE id = 3; INSERT INTO orders (id, name) VALUES (3, 'back'); COMMIT`,
      );
      const second = await captureRun(c, dir, ['orders'], { name: `ferry_t_pg_${RUN}` });
      expect(second.fatal).toBeUndefined();
      expect(second.errors).toEqual([]);
      expect(second.processed).toBeGreaterThan(500);
      expect(await pgSummary(dst.url, 'orders')).toEqual(await pgSummary(src.url, 'orders'));
      const seven = await src.q<{ note: string }>('SELECT note FROM orders WHERE id = 7');
      expect(seven[0]?.note.length).toBe(200_000);

      // Confirmed as soon as applied: the slot's position is the run's, and little WAL is kept.
      const slot = await src.q<{ lsn: string }>(
        'SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1',
        [`ferry_t_pg_${RUN}`],
      );
      const saved = JSON.parse(fs.readFileSync(path.join(dir, 'capture.json'), 'utf8')) as { position: string };
      expect(slot[0]?.lsn).toBeDefined();
      expect(lsnNum(slot[0]?.lsn ?? '0/0')).toBeGreaterThanOrEqual(lsnNum(saved.position));
      expect(second.retainedBytes).toBeLessThan(64 * 1024 * 1024);

      // A run with nothing new ends at once and applies nothing; the slot still moves past the log
      // that other tables' writes made meanwhile (an idle slot holds no WAL).
      await src.q(
        'CREATE TABLE other (x text); INSERT INTO other SELECT repeat(md5(i::text), 20) FROM generate_series(1, 20000) i',
      );
      const [{ lsn: before } = { lsn: '0/0' }] = await src.q<{ lsn: string }>(
        'SELECT pg_current_wal_lsn()::text AS lsn',
      );
      const third = await captureRun(c, dir, ['orders'], { name: `ferry_t_pg_${RUN}` });
      expect(third.fatal).toBeUndefined();
      expect(third.processed).toBe(0);
      const [moved] = await src.q<{ lsn: string }>(
        'SELECT confirmed_flush_lsn::text AS lsn FROM pg_replication_slots WHERE slot_name = $1',
        [`ferry_t_pg_${RUN}`],
      );
      expect(lsnNum(moved?.lsn ?? '0/0')).toBeGreaterThanOrEqual(lsnNum(before));

      await c.source.dropChangeCapture(`ferry_t_pg_${RUN}`);
      expect(await src.q('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [`ferry_t_pg_${RUN}`])).toEqual([]);
      expect(await src.q('SELECT 1 FROM pg_publication WHERE pubname = $1', [`ferry_t_pg_${RUN}`])).toEqual([]);
    } finally {
      await c.close();
    }
  }, 60_000);

  it('changes made while the first copy runs end in the target as in the source (SQLite target)', async () => {
    await makeOrders(src, 20_000, 'busy');
    const dir = tempDir();
    const file = path.join(dir, 'target.sqlite');
    const c = await openCapture(src.url, { connector: 'SQLite', properties: { file, create: 'true' } });
    let writing = true;
    const writer = (async () => {
      let i = 0;
      while (writing) {
        i++;
        await src.q(`UPDATE busy SET amount = amount + 1, name = 'w${i}' WHERE id % 97 = $1`, [i % 97]);
        await src.q(`DELETE FROM busy WHERE id = $1`, [(i * 7919) % 20_000]);
        await src.q(`INSERT INTO busy (id, name) VALUES ($1, 'ins') ON CONFLICT (id) DO UPDATE SET name = 'again'`, [
          20_000 + i,
        ]);
      }
    })();
    try {
      const first = await captureRun(c, dir, ['busy'], { name: `ferry_t_busy_${RUN}`, batchSize: 500 });
      writing = false;
      await writer;
      expect(first.fatal).toBeUndefined();
      const second = await captureRun(c, dir, ['busy'], { name: `ferry_t_busy_${RUN}` });
      expect(second.fatal).toBeUndefined();
      expect(await snapshot(c.target, 'busy')).toEqual(await snapshot(c.source, 'busy'));
      await c.source.dropChangeCapture(`ferry_t_busy_${RUN}`);
    } finally {
      writing = false;
      await writer;
      await c.close();
    }
  }, 90_000);

  it('refuses a table without a primary key, naming it', async () => {
    await src.q('CREATE TABLE loose (a int, b text)');
    const c = await openCapture(src.url, {
      connector: 'SQLite',
      properties: { file: path.join(tempDir(), 't.sqlite'), create: 'true' },
    });
    try {
      const r = await captureRun(c, tempDir(), ['loose'], { name: `ferry_t_loose_${RUN}` });
      expect(r.fatal).toMatch(/loose has no primary key/);
      expect(await src.q('SELECT 1 FROM pg_replication_slots WHERE slot_name = $1', [`ferry_t_loose_${RUN}`])).toEqual(
        [],
      );
    } finally {
      await c.close();
    }
  });

  it('a continuous capture rides out dropped source and target connections, and ends equal to the source', async () => {
    await makeOrders(src, 2000, 'flaky');
    const dir = tempDir();
    const name = `ferry_t_flaky_${RUN}`;
    const c = await openCapture(src.url, { connector: 'PostgreSQL', properties: { connectionString: dst.url } });
    const stop = new AbortController();
    const running = captureRun(c, dir, ['flaky'], { name, continuous: true, signal: stop.signal });
    const admin = new pg.Client({ connectionString: src.url });
    await admin.connect();
    try {
      // The first copy ends before the outages: a failure in it ends the run (the next run resumes it).
      for (let waited = 0; waited < 30_000; waited += 100) {
        const row = await pgSummary(dst.url, 'flaky').catch(() => undefined);
        if (row?.n === 2000) break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const dbs = [new URL(src.url).pathname.slice(1), new URL(dst.url).pathname.slice(1)];
      for (let round = 0; round < 4; round++) {
        for (let i = 0; i < 50; i++)
          await src.q("UPDATE flaky SET amount = amount + 1, name = 'r' || $1 WHERE id % 50 = $2", [round, i]);
        await src.q('DELETE FROM flaky WHERE id % 97 = $1', [round]);
        // Every session of the capture and of the target's pool, the walsender included.
        await admin.query(
          "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = ANY($1) AND pid <> pg_backend_pid() AND application_name LIKE 'ferry%'",
          [dbs],
        );
        await new Promise((r) => setTimeout(r, 300));
      }
      const want = await pgSummary(src.url, 'flaky');
      for (let waited = 0; waited < 30_000; waited += 200) {
        if (JSON.stringify(await pgSummary(dst.url, 'flaky').catch(() => null)) === JSON.stringify(want)) break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(await pgSummary(dst.url, 'flaky')).toEqual(want);
      stop.abort();
      const r = await running;
      expect(r.fatal).toBeUndefined();
      expect(r.cancelled).toBe(true);
      expect(r.errors).toEqual([]);
    } finally {
      stop.abort();
      await running.catch(() => undefined);
      await admin.end();
      await c.source.dropChangeCapture(name).catch(() => undefined);
      await c.close();
    }
  }, 60_000);

  it('a slot the server invalidated stops the run with CON_CAPTURE_LOST and the re-snapshot it needs', async () => {
    await makeOrders(src, 100, 'lossy');
    const name = `ferry_t_lossy_${RUN}`;
    const dir = tempDir();
    const c = await openCapture(src.url, { connector: 'PostgreSQL', properties: { connectionString: dst.url } });
    const admin = new pg.Client({ connectionString: src.url });
    await admin.connect();
    try {
      expect((await captureRun(c, dir, ['lossy'], { name })).fatal).toBeUndefined();
      // The server may keep 1 MB of log for a slot: a few WAL segments later it drops this one's.
      await admin.query("ALTER SYSTEM SET max_slot_wal_keep_size = '1MB'");
      await admin.query('SELECT pg_reload_conf()');
      try {
        for (let i = 0; i < 40; i++) {
          const { rows } = await admin.query<{ s: string }>(
            'SELECT wal_status AS s FROM pg_replication_slots WHERE slot_name = $1',
            [name],
          );
          if (rows[0]?.s === 'lost') break;
          await admin.query(
            "CREATE TEMP TABLE IF NOT EXISTS pad (x text); INSERT INTO pad SELECT repeat('x', 1000) FROM generate_series(1, 2000)",
          );
          await admin.query('SELECT pg_switch_wal()');
          await admin.query('CHECKPOINT');
        }
      } finally {
        await admin.query('ALTER SYSTEM RESET max_slot_wal_keep_size');
        await admin.query('SELECT pg_reload_conf()');
      }
      await src.q("UPDATE lossy SET name = 'after' WHERE id = 1");
      const r = await captureRun(c, dir, ['lossy'], { name });
      expect(r.fatal).toMatch(/invalidated/);
      expect(r.fatal).toContain(`pg_drop_replication_slot('${name}')`);
      expect(await pgSummary(dst.url, 'lossy')).not.toEqual(await pgSummary(src.url, 'lossy'));
      // The re-snapshot the error names: the slot dropped, the next run copies everything again.
      await admin.query('SELECT pg_drop_replication_slot($1)', [name]);
      const again = await captureRun(c, dir, ['lossy'], { name });
      expect(again.fatal).toBeUndefined();
      expect(await pgSummary(dst.url, 'lossy')).toEqual(await pgSummary(src.url, 'lossy'));
    } finally {
      await admin.end();
      await c.source.dropChangeCapture(name).catch(() => undefined);
      await c.close();
    }
  }, 60_000);
});

function lsnNum(lsn: string): number {
  const [h = '0', l = '0'] = lsn.split('/');
  return parseInt(h, 16) * 2 ** 32 + parseInt(l, 16);
}
