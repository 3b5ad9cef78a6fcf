/**
 * A Replication's target that goes away mid-copy, on the real plugins: PostgreSQL's sessions
 * terminated (when FERRY_TEST_DATABASE_URL names a server), SQLite's file locked by another
 * process. The write is tried again with back-off and the copy goes on, exactly, none of its
 * records a record error; past the retry budget the entity ends RUN_TARGET_UNAVAILABLE at its last
 * written batch, the entities after it are left for the next run, and that run copies exactly the rest.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import mysql from 'mysql2/promise';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MemoryReplicationState } from '../../../src/solutions/replicate.js';
import { count, makeSource, open, run, tempDir, type Conns } from './replicate-helpers.js';
import { TARGETS, expectEqual, type Target } from './replicate-targets.js';

describe.each(TARGETS)('replication sqlite → $name when the target goes away', (kind) => {
  const dir = tempDir();
  const sourceFile = path.join(dir, 'source.db');
  const targets: Target[] = [];
  const opened: Conns[] = [];
  const fresh = async (): Promise<{ conns: Conns; target: Target }> => {
    const made = await kind.make(dir, targets.length);
    targets.push(made);
    // A short busy time-out: a held lock fails the SQLite write call soon instead of after 5 s.
    const target =
      made.connector === 'SQLite' ? { ...made, properties: { ...made.properties, busyTimeoutMs: '20' } } : made;
    const conns = await open(sourceFile, target);
    opened.push(conns);
    return { conns, target };
  };

  beforeAll(() => makeSource(sourceFile));
  afterAll(async () => {
    for (const o of opened) await o.close();
    for (const t of targets) await t.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  /** Makes the target unavailable; answers how to bring it back (after `ms`, or when called). */
  async function takeAway(target: Target): Promise<() => Promise<void>> {
    if (target.connector === 'PostgreSQL') {
      const url = target.properties['connectionString'] as string;
      const admin = new pg.Client({ connectionString: url });
      await admin.connect();
      const db = (await admin.query<{ d: string }>('SELECT current_database() AS d')).rows[0]?.d as string;
      const killed = await admin.query(
        'SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()',
        [db],
      );
      expect(killed.rowCount).toBeGreaterThan(0);
      await admin.end();
      return () => Promise.resolve();
    }
    if (target.connector === 'MariaDB') {
      // Every session of the target database is killed, as a failover or an administrator would.
      const p = target.properties;
      const admin = await mysql.createConnection({
        host: p['host'],
        port: Number(p['port']),
        user: p['user'],
        ...(p['password'] ? { password: p['password'] } : {}),
      });
      const [rows] = await admin.query(
        'SELECT ID AS id FROM information_schema.PROCESSLIST WHERE DB = ? AND ID <> CONNECTION_ID()',
        [p['database']],
      );
      const ids = (rows as { id: number }[]).map((r) => Number(r.id));
      expect(ids.length).toBeGreaterThan(0);
      for (const id of ids) await admin.query(`KILL CONNECTION ${id}`).catch(() => undefined);
      await admin.end();
      return () => Promise.resolve();
    }
    const db = new Database(target.properties['file']);
    db.exec('BEGIN EXCLUSIVE');
    return () => {
      db.exec('ROLLBACK');
      db.close();
      return Promise.resolve();
    };
  }

  it('is waited for: the copy goes on once it is back, every record once, none a record error', async () => {
    const { conns, target } = await fresh();
    let struck: Promise<() => Promise<void>> | undefined;
    const r = await run(conns, new MemoryReplicationState(), ['orders', 'events'], {
      batchSize: 1000,
      targetRetry: { budgetMs: 30_000, firstDelayMs: 100 },
      onProgress: (p) => {
        if (p.entity !== 'orders' || p.processed < 3000 || struck) return;
        // Back after 1.2 s: several tries fail first.
        struck = takeAway(target).then((back) => {
          setTimeout(() => void back(), 1_200);
          return back;
        });
      },
    });
    expect(struck, 'the fault was struck').toBeDefined();
    await struck;
    expect(r.fatal).toBeUndefined();
    expect(r.errors).toEqual([]);
    await expectEqual(conns, 'orders');
    await expectEqual(conns, 'events');
  }, 60_000);

  // On SQLite alone: a lock held as long as the test wants is a target away for good. PostgreSQL
  // refusing connections past the budget is the chaos suite's target-refuse (test/e2e/chaos).
  it.runIf(kind.name === 'sqlite')(
    'past the budget ends the entity RUN_TARGET_UNAVAILABLE at its last written batch, leaves the next entities, and the next run copies exactly the rest',
    async () => {
      const { conns, target } = await fresh();
      const st = new MemoryReplicationState();
      let back: (() => Promise<void>) | undefined;
      let struck: Promise<void> | undefined;
      let written = 0;
      const r = await run(conns, st, ['orders', 'events'], {
        batchSize: 1000,
        checkForBulk: false,
        targetRetry: { budgetMs: 600, firstDelayMs: 100 },
        onProgress: (p) => {
          if (p.entity !== 'orders' || p.processed < 3000 || struck) return;
          written = p.processed;
          struck = takeAway(target).then((b) => void (back = b));
        },
      });
      await struck;
      await back?.();
      expect(r.errors).toEqual([]);
      expect(r.fatal).toMatch(/^orders: .*the datastore stayed unavailable/);
      expect(r.fatal).toContain('Not copied in this run, as the target was unavailable: events.');
      expect(r.statistics.map((s) => s.entity)).toEqual(['orders']);
      // What was written stands; nothing after the last written batch.
      expect(await count(conns.target, 'orders')).toBeGreaterThanOrEqual(written);
      const again = await run(conns, st, ['orders', 'events']);
      expect(again.fatal).toBeUndefined();
      await expectEqual(conns, 'orders');
      await expectEqual(conns, 'events');
    },
    60_000,
  );
});
