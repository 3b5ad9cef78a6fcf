/**
 * A Replication's first copy stopped or killed part-way and resumed (docs/solutions.md
 * "Replication", src/solutions/first-copy.ts): every record changed before, between or during its
 * parts arrives, and neither the part that resumes it nor the run after it reads more than what
 * changed. SQLite → SQLite, and SQLite → PostgreSQL when FERRY_TEST_DATABASE_URL names a server;
 * each test has a source of its own.
 */
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import {
  FileReplicationState,
  MemoryReplicationState,
  type ReplicationStateStore,
} from '../../../src/solutions/replicate.js';
import {
  ORDERS,
  count,
  later,
  makeSource,
  open,
  run,
  sqlite,
  stamp,
  tempDir,
  type Conns,
  type Run,
} from './replicate-helpers.js';
import { TARGETS, expectEqual, type Target } from './replicate-targets.js';

/** Marks 1,000 orders (every twentieth id, all over the key range) changed at `at`. */
const CHANGE_1000 = (at: string): string =>
  `UPDATE orders SET qty = qty + 1000, modified_at = '${at}' WHERE id % 20 = 0`;

describe.each(TARGETS)('a resumed first copy, sqlite → $name', (kind) => {
  const dir = tempDir();
  const targets: Target[] = [];
  const opened: Conns[] = [];
  let n = 0;
  /** A new source (orders: 20,000 rows, customers: 300 with text keys) and an empty target. */
  const fresh = async (
    opts: { wal?: boolean } = {},
  ): Promise<{ conns: Conns; source: string; target: Target; stateDir: string }> => {
    const i = n++;
    const source = path.join(dir, `source-${i}.db`);
    makeSource(source);
    // WAL: a test can write while a part's query holds its snapshot.
    if (opts.wal) sqlite(source, 'PRAGMA journal_mode = WAL');
    const target = await kind.make(dir, i);
    targets.push(target);
    const conns = await open(source, target);
    opened.push(conns);
    return { conns, source, target, stateDir: path.join(dir, `state-${i}`) };
  };
  /** A run of one entity stopped once it has processed `at` records; `during(processed)` after each batch. */
  interface PartOptions {
    batchSize: number;
    checkForBulk?: boolean;
    during?: (processed: number) => void;
  }
  const partUntil = async (
    conns: Conns,
    state: ReplicationStateStore,
    entity: string,
    at: number,
    o: PartOptions,
  ): Promise<Run> => {
    const stop = new AbortController();
    return run(conns, state, [entity], {
      batchSize: o.batchSize,
      ...(o.checkForBulk !== undefined ? { checkForBulk: o.checkForBulk } : {}),
      signal: stop.signal,
      onProgress: (p) => {
        o.during?.(p.processed);
        if (p.processed >= at) stop.abort();
      },
    });
  };

  afterAll(async () => {
    for (const o of opened) await o.close();
    for (const t of targets) await t.drop();
    fs.rmSync(dir, { recursive: true, force: true });
  });

  it('stopped after 5 batches and resumed, the copy leaves its last part’s watermark: 1,000 changes later, the next run reads those 1,000', async () => {
    const { conns, source, stateDir } = await fresh();
    const st = new FileReplicationState(stateDir);
    const part1 = await partUntil(conns, st, 'orders', 5000, { batchSize: 1000 });
    expect(part1.cancelled).toBe(true);
    expect(await count(conns.target, 'orders')).toBe(5000);

    // Nothing changed in between: the resumed part reads the rest and nothing again (the records at
    // the first part's newest stamp that it copied are remembered).
    const part2 = await run(conns, st, ['orders']);
    expect(part2.cancelled).toBe(false);
    expect(part2.by).toEqual({ orders: ORDERS - 5000 });
    await expectEqual(conns, 'orders');

    sqlite(source, CHANGE_1000(later(1)));
    const next = await run(conns, st, ['orders']);
    // 1,000 exactly here; before, the first part's watermark made this run read every order copied
    // after it (about 16,000).
    expect(next.by['orders']).toBeGreaterThanOrEqual(1000);
    expect(next.by['orders']).toBeLessThanOrEqual(1010);
    await expectEqual(conns, 'orders');
    expect((await run(conns, st, ['orders'])).by).toEqual({ orders: 0 });
  });

  it('records changed while the copy was stopped arrive with the part that resumes it, which reads no other copied record again', async () => {
    const { conns, source } = await fresh();
    const st = new MemoryReplicationState();
    await partUntil(conns, st, 'orders', 5000, { batchSize: 1000 });
    const firstMark = stamp(5000);
    // Copied records change (one at exactly the first part's newest stamp), records not copied yet
    // change, and two are added.
    sqlite(source, `UPDATE orders SET qty = 4242, modified_at = '${later(1)}' WHERE id IN (10, 2500, 8000, 19000)`);
    sqlite(source, `UPDATE orders SET qty = 4343, modified_at = '${firstMark}' WHERE id = 100`);
    for (const id of [ORDERS + 1, ORDERS + 2])
      sqlite(source, 'INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)', id, 'between', '1.50', 1, 2.5, later(2));

    const part2 = await run(conns, st, ['orders']);
    // The rest (15,000 and the 2 added) and the 3 copied records that changed: 10, 2500 and 100.
    expect(part2.by).toEqual({ orders: ORDERS - 5000 + 2 + 3 });
    await expectEqual(conns, 'orders');
    expect((await run(conns, st, ['orders'])).by).toEqual({ orders: 0 });
  });

  it('records changed while each part runs arrive with the next part or the next run: none is missed', async () => {
    const { conns, source } = await fresh({ wal: true });
    const st = new MemoryReplicationState();
    let changed1 = false;
    await partUntil(conns, st, 'orders', 5000, {
      batchSize: 1000,
      during: (processed) => {
        if (changed1 || processed < 2000) return;
        changed1 = true;
        // Copied by this part, not read by it yet (a key it reaches before it stops), past its stop; and one added.
        sqlite(source, `UPDATE orders SET qty = 111, modified_at = '${later(1)}' WHERE id IN (500, 3500, 15000)`);
        sqlite(source, 'INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)', ORDERS + 1, 'part 1', '1.50', 1, 2.5, later(1));
      },
    });
    expect(await count(conns.target, 'orders')).toBe(5000);
    let changed2 = false;
    const part2 = await run(conns, st, ['orders'], {
      batchSize: 1000,
      onProgress: (p) => {
        if (changed2 || p.processed < 3000) return;
        changed2 = true;
        // Copied by the first part, by this one, not read by this one yet; and one added.
        sqlite(source, `UPDATE orders SET qty = 222, modified_at = '${later(2)}' WHERE id IN (700, 6000, 18000)`);
        sqlite(source, 'INSERT INTO orders VALUES (?, ?, ?, ?, ?, ?)', ORDERS + 2, 'part 2', '1.50', 1, 2.5, later(2));
      },
    });
    expect(part2.cancelled).toBe(false);
    const next = await run(conns, st, ['orders']);
    // At most the 4 records changed during the second part (its snapshot may have held none of them).
    expect(next.by['orders']).toBeLessThanOrEqual(4);
    await expectEqual(conns, 'orders');
    expect((await run(conns, st, ['orders'])).by).toEqual({ orders: 0 });
  });

  it('text keys, one record per write, stopped three times with changes between: every part reads only the rest and what changed', async () => {
    const { conns, source } = await fresh();
    const st = new MemoryReplicationState();
    const opts = { batchSize: 20, checkForBulk: false };
    // Text order: c0, c1, c10, c100 … c109, c11, …: the first part copies all of these.
    const between = [
      ['c0', 'c1', 'c10', 'c100', 'c101'],
      ['c102', 'c103', 'c104', 'c105', 'c106'],
      ['c107', 'c108', 'c109', 'c11', 'c110'],
    ];
    let processed = 0;
    for (let part = 0; part < 3; part++) {
      const r = await partUntil(conns, st, 'customers', 60, opts);
      expect(r.cancelled).toBe(true);
      processed += r.by['customers'] ?? 0;
      const codes = (between[part] ?? []).map((c) => `'${c}'`).join(', ');
      sqlite(
        source,
        `UPDATE customers SET name = 'changed ${part}', updated = '${later(part + 1)}' WHERE code IN (${codes})`,
      );
    }
    const last = await run(conns, st, ['customers'], opts);
    expect(last.cancelled).toBe(false);
    processed += last.by['customers'] ?? 0;
    // Each of the 300 once, and each of the 15 changed records once more.
    expect(processed).toBe(300 + 15);
    await expectEqual(conns, 'customers');

    sqlite(
      source,
      `UPDATE customers SET name = 'later', updated = '${later(9)}' WHERE code IN (SELECT code FROM customers ORDER BY code LIMIT 30)`,
    );
    expect((await run(conns, st, ['customers'], opts)).by).toEqual({ customers: 30 });
    await expectEqual(conns, 'customers');
  });

  it('killed with SIGKILL twice and resumed from its files, the copy is exact and the next run reads only the 1,000 changed', async () => {
    const { conns, source, target, stateDir } = await fresh();
    for (const goal of [4000, 12_000]) {
      const args = JSON.stringify({ sourceFile: source, target, stateDir, entities: ['orders'], batchSize: 400 });
      const child = spawn(
        process.execPath,
        ['--import', 'tsx', path.join(import.meta.dirname, 'replicate-child.ts'), args],
        { stdio: ['ignore', 'ignore', 'inherit'] },
      );
      const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
      const deadline = Date.now() + 60_000;
      let seen = 0;
      while (Date.now() < deadline && child.exitCode === null) {
        seen = await count(conns.target, 'orders').catch(() => 0);
        if (seen >= goal) break;
        await new Promise((r) => setTimeout(r, 10));
      }
      child.kill('SIGKILL');
      await exited;
      expect(seen).toBeGreaterThanOrEqual(goal);
      expect(seen).toBeLessThan(ORDERS);
      // Changed between the parts: a copied record and one not copied yet.
      sqlite(
        source,
        `UPDATE orders SET qty = 777, modified_at = '${later(goal)}' WHERE id IN (${goal / 4}, ${ORDERS - goal / 4})`,
      );
    }
    const st = new FileReplicationState(stateDir);
    const rest = await run(conns, st, ['orders']);
    expect(rest.fatal).toBeUndefined();
    await expectEqual(conns, 'orders');

    sqlite(source, CHANGE_1000(later(20_000)));
    const next = await run(conns, st, ['orders']);
    expect(next.by['orders']).toBeGreaterThanOrEqual(1000);
    expect(next.by['orders']).toBeLessThanOrEqual(1010);
    await expectEqual(conns, 'orders');
  }, 120_000);
});
