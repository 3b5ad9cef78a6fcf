/**
 * The shared fixed-window counts (service/store/limit-windows.ts) on a real PostgreSQL, from two
 * pools of connections as two replicas hold them: exact under concurrency, refusals counted on
 * nothing, a second window counted only after the first, ended windows started again and swept.
 */
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LimitWindows, NO_LIMIT } from '../../../../service/store/limit-windows.js';
import type { Store } from '../../../../service/store/store.js';
import { replicaStores } from '../../../helpers/replica-stores.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

describe.skipIf(!STORE_TARGETS.some((t) => t.name === 'postgres'))('limit windows on PostgreSQL', () => {
  let stores: Store[];
  let close: (() => Promise<void>) | undefined;
  let a: LimitWindows;
  let b: LimitWindows;
  const NOW = Date.parse('2030-01-01T00:00:00Z');

  beforeAll(async () => {
    ({ stores, close } = await replicaStores(2));
    const [sa, sb] = stores as [Store, Store];
    // No sweep beside the takes: the one test of sweeping calls it.
    a = new LimitWindows(sa.db, { sweepEveryMs: Number.MAX_SAFE_INTEGER });
    b = new LimitWindows(sb.db, { sweepEveryMs: Number.MAX_SAFE_INTEGER });
  });
  afterAll(async () => {
    await close?.();
  });

  it('lets exactly the limit of 60 parallel takes through, from two replicas', async () => {
    const w = { key: 'test:parallel', endMs: NOW + 60_000, limit: 17 };
    const results = await Promise.all(Array.from({ length: 60 }, (_, i) => (i % 2 ? a : b).take(NOW, [w])));
    const counts = results.map(([c]) => c).filter((c) => c !== undefined);
    expect(counts.sort((x, y) => x - y)).toEqual(Array.from({ length: 17 }, (_, i) => i + 1));
    // Refused takes counted on nothing: the window holds its limit, not 60.
    expect(await b.read(NOW, w.key)).toEqual({ count: 17, endMs: NOW + 60_000 });
  });

  it('takes in each window of one statement that has room, and refuses in the others', async () => {
    const small = { key: 'test:each-small', endMs: NOW + 60_000, limit: 1 };
    const large = { key: 'test:each-large', endMs: NOW + 86_400_000, limit: 5 };
    expect(await a.take(NOW, [small, large])).toEqual([1, 1]);
    expect(await b.take(NOW, [small, large])).toEqual([undefined, 2]);
    expect(await b.read(NOW, small.key)).toEqual({ count: 1, endMs: NOW + 60_000 });
  });

  it('takes a limit above what the column counts to as no limit', async () => {
    const huge = { key: 'test:huge', endMs: NOW + 60_000, limit: 1e10 };
    expect(await a.take(NOW, [huge])).toEqual([1]);
    expect(await a.takeThen(NOW, { ...huge, key: 'test:huge-2' }, huge)).toEqual([1, 2]);
  });

  it('counts the second window of takeThen only when the first took the call', async () => {
    const first = { key: 'test:first', endMs: NOW + 60_000, limit: 1 };
    const second = { key: 'test:second', endMs: NOW + 86_400_000, limit: 5 };
    expect(await a.takeThen(NOW, first, second)).toEqual([1, 1]);
    expect(await b.takeThen(NOW + 1, first, second)).toEqual([undefined, undefined]);
    expect((await a.read(NOW + 1, second.key))?.count).toBe(1);
    const full = { ...second, key: 'test:second-full', limit: 1 };
    await b.take(NOW, [full]);
    expect(await a.takeThen(NOW, { ...first, key: 'test:first-2' }, full)).toEqual([1, undefined]);
  });

  it('starts an ended window again in place, and clears and takes back within a running one', async () => {
    const w = { key: 'test:again', endMs: NOW + 1_000, limit: 2 };
    await a.take(NOW, [w]);
    await b.take(NOW, [w]);
    expect(await a.take(NOW + 999, [w])).toEqual([undefined]);
    expect(await a.read(NOW + 1_000, w.key)).toBeUndefined();
    expect(await b.take(NOW + 1_000, [{ ...w, endMs: NOW + 2_000 }])).toEqual([1]);
    expect(await a.read(NOW + 1_000, w.key)).toEqual({ count: 1, endMs: NOW + 2_000 });

    const other = { key: 'test:other', endMs: NOW + 60_000, limit: NO_LIMIT };
    await a.take(NOW, [other]);
    await a.take(NOW, [other]);
    await b.clear(w.key);
    expect(await a.read(NOW + 1_000, w.key)).toBeUndefined();
    await b.takeBack(NOW + 1_000, other.key);
    expect((await a.read(NOW + 1_000, other.key))?.count).toBe(1);
    await b.takeBack(NOW + 1_000, other.key);
    await b.takeBack(NOW + 1_000, other.key);
    expect((await a.read(NOW + 1_000, other.key))?.count).toBe(0);
  });

  it('keeps its counts in an unlogged table: a counted call waits for no WAL flush', async () => {
    const [store] = stores as [Store];
    const { rows } = await sql<{
      relpersistence: string;
    }>`SELECT relpersistence FROM pg_class WHERE relname = 'limit_windows'`.execute(store.db);
    expect(rows).toEqual([{ relpersistence: 'u' }]);
  });

  it('sweeps the rows of ended windows only', async () => {
    await a.take(NOW, [{ key: 'test:sweep-ended', endMs: NOW + 10, limit: 5 }]);
    await a.take(NOW, [{ key: 'test:sweep-running', endMs: NOW + 10_000, limit: 5 }]);
    const [store] = stores as [Store];
    const keys = async (): Promise<string[]> =>
      (await store.db.selectFrom('limitWindows').select('key').where('key', 'like', 'test:sweep%').execute()).map(
        (r) => r.key,
      );
    expect((await keys()).sort()).toEqual(['test:sweep-ended', 'test:sweep-running']);
    expect(await b.sweep(NOW + 10)).toBeGreaterThanOrEqual(1);
    expect(await keys()).toEqual(['test:sweep-running']);
    // A row a take holds is skipped, not waited for; the next sweep takes it.
    await a.take(NOW, [{ key: 'test:sweep-held', endMs: NOW + 10, limit: 5 }]);
    const [store2] = stores.slice(1) as [Store];
    await store2.db.transaction().execute(async (tx) => {
      await sql`SELECT 1 FROM limit_windows WHERE key = 'test:sweep-held' FOR UPDATE`.execute(tx);
      expect(await a.sweep(NOW + 10)).toBe(0);
    });
    expect(await a.sweep(NOW + 10)).toBe(1);
  });
});
