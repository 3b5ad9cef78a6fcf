import type { PoolClient } from 'pg';
import {
  OK_ONE,
  throwIfAborted,
  type CallContext,
  type ConnectorRecord,
  type WriteResult,
} from '../../../src/connectors/sdk.js';
import { qualified, quoteIdent, type PgColumn, type PgTable } from '../catalogue.js';
import { sqlState, connectionLost } from '../errors.js';
import { bisect } from './bisect.js';
import { writingClient, type WritingClient } from './client.js';
import { copySender } from './copy-sender.js';
import { splitByKey, uniqueKeySegments, type Group } from './groups.js';
import { keyedStatements } from './keyed.js';
import { backOff, backOffOf, type WriterState } from './state.js';

/**
 * Upsert:
 *
 *   bulk (at least STAGE_MIN records)  COPY into the table while no key exists yet (upsertByCopy),
 *                                      else COPY into a stage table and INSERT … SELECT … ON CONFLICT,
 *                                      on up to UPSERT_LANES connections (stagedUpsertLanes)
 *   small                              INSERT … SELECT FROM unnest($1::text[], …) ON CONFLICT (key) DO UPDATE
 */

/** Connections a bulk Upsert of existing keys runs on at once, and the least records for a second. */
const UPSERT_LANES = 3;
const LANE_MIN_RECORDS = 2000;

/** A bulk Upsert of a group: one COPY into the table when it works, else the staged upsert in lanes. */
export async function upsertBulk(
  w: WriterState,
  client: PoolClient,
  table: PgTable,
  keys: PgColumn[],
  g: Group,
  batch: readonly ConnectorRecord[],
  results: WriteResult[],
  ctx: CallContext,
): Promise<void> {
  if (await upsertByCopy(w, client, table, keys, g, batch, results)) return;
  // A COPY the call's own cancel ended is not retried another way.
  throwIfAborted(ctx.signal);
  await stagedUpsertLanes(w, client, table, keys, g, batch, results, ctx);
}

/**
 * Upsert of a bulk batch whose keys are all new is a Create: one COPY into the table, no stage
 * and no conflict check per row. The COPY fails as a whole at the first key that exists (or any
 * other error), nothing is written, and the caller runs the staged upsert. After a failure the
 * table's next batches go straight to the stage, for twice as many batches each time (at most
 * COPY_BACKOFF_MAX), so a table whose keys mostly exist seldom pays the failed attempt.
 * Only for the primary key: an Upsert on other fields must still be refused when they have no
 * unique constraint.
 */
async function upsertByCopy(
  w: WriterState,
  client: PoolClient,
  table: PgTable,
  keys: PgColumn[],
  g: Group,
  batch: readonly ConnectorRecord[],
  results: WriteResult[],
): Promise<boolean> {
  const pk = table.columns.filter((c) => c.pk > 0);
  if (keys.length !== pk.length || !keys.every((k) => k.pk > 0)) return false;
  const state = backOffOf(w.copyBackoff, table.oid);
  if (state.skip > 0) {
    state.skip--;
    return false;
  }
  const sql = `COPY ${qualified(table)} (${g.cols.map((c) => quoteIdent(c.name)).join(', ')}) FROM STDIN`;
  try {
    await copySender(g, batch)(
      client,
      sql,
      g.indices.map((_, k) => k),
    );
  } catch (err) {
    if (connectionLost(err)) throw err;
    backOff(state);
    return false;
  }
  state.backoff = 0;
  for (const i of g.indices) results[i] = OK_ONE;
  return true;
}

/**
 * The staged upsert of a bulk batch on up to {@link UPSERT_LANES} connections at once. The
 * server's conflict work (finding, locking and rewriting each existing row) bounds an upsert of
 * existing keys, and one backend does it on one core; lanes put more backends beside it (three
 * measured best on two cores: a lane waiting for its COPY or commit leaves the core to another). Records are
 * split by key, so records with one key stay in one lane, in order, and two lanes never touch
 * one row. Each lane runs its own stage and transactions. A lane that meets another on some
 * other unique constraint or a trigger's rows (deadlock, serialization failure) runs again after
 * the others, alone; an upsert is idempotent, so its parts already committed are simply written
 * again. Without a second connection (the pool or the server has none to give) one lane runs.
 */
async function stagedUpsertLanes(
  w: WriterState,
  client: PoolClient,
  table: PgTable,
  keys: PgColumn[],
  g: Group,
  batch: readonly ConnectorRecord[],
  results: WriteResult[],
  ctx: CallContext,
): Promise<void> {
  const run = async (c: PoolClient, indices: number[]): Promise<void> => {
    for (const seg of uniqueKeySegments({ cols: g.cols, indices }, keys, batch))
      await stagedUpsert(w, c, table, keys, { cols: g.cols, indices: seg }, batch, results);
  };
  if (g.indices.length < LANE_MIN_RECORDS) return run(client, g.indices);
  const extras: WritingClient[] = [];
  // Only connections the pool can give at once: waiting for one another call holds (a query's
  // cursor) would stall the batch, or never end.
  const spare = (): boolean =>
    w.pool.waitingCount === 0 && (w.pool.idleCount > 0 || w.pool.totalCount < (w.pool.options.max ?? 10));
  while (extras.length < UPSERT_LANES - 1 && spare()) {
    try {
      // Cancelled with the call, as its own client is (client.ts).
      extras.push(await writingClient(w.pool, ctx));
    } catch {
      break;
    }
  }
  const clients = [client, ...extras.map((e) => e.client)];
  const broken = new Map<PoolClient, Error>();
  try {
    const lanes = splitByKey(g, keys, batch, clients.length);
    const settled = await Promise.allSettled(lanes.map((indices, i) => run(clients[i] as PoolClient, indices)));
    // Every lane's outcome first, so that each broken connection is known before anything throws.
    const again: number[][] = [];
    let fatal: Error | undefined;
    for (const [i, s] of settled.entries()) {
      if (s.status === 'fulfilled') continue;
      const state = sqlState(s.reason);
      if (connectionLost(s.reason)) broken.set(clients[i] as PoolClient, s.reason as Error);
      if (state === '40P01' || state === '40001') again.push(lanes[i] as number[]);
      else fatal ??= s.reason instanceof Error ? s.reason : new Error(String(s.reason));
    }
    if (fatal !== undefined) throw fatal;
    for (const indices of again) await run(client, indices);
  } finally {
    for (const e of extras) e.release(broken.get(e.client));
  }
}

/**
 * Upsert of a bulk batch: COPY into a temporary stage table (no WAL, no index), then one
 * `INSERT … SELECT … ON CONFLICT DO UPDATE` from it, in one transaction; the stage empties on
 * commit. Twice as fast as unnest arrays: values are parsed by COPY, once.
 */
async function stagedUpsert(
  w: WriterState,
  client: PoolClient,
  table: PgTable,
  keys: PgColumn[],
  g: Group,
  batch: readonly ConnectorRecord[],
  results: WriteResult[],
): Promise<void> {
  const stage = `pg_temp.${quoteIdent(`ferry_stage_${table.oid}_${table.columns.length}`)}`;
  let known = w.stages.get(client);
  if (!known) w.stages.set(client, (known = new Set()));
  if (!known.has(stage)) {
    // Column types only: no NOT NULL or defaults, the target checks those on INSERT.
    await client.query(
      `CREATE TEMP TABLE IF NOT EXISTS ${stage.slice('pg_temp.'.length)} ON COMMIT DELETE ROWS AS SELECT * FROM ${qualified(table)} WITH NO DATA`,
    );
    known.add(stage);
  }
  const list = g.cols.map((c) => quoteIdent(c.name)).join(', ');
  const setCols = g.cols.filter((c) => !keys.includes(c));
  const onConflict = setCols.length
    ? `DO UPDATE SET ${setCols.map((c) => `${quoteIdent(c.name)} = EXCLUDED.${quoteIdent(c.name)}`).join(', ')}`
    : 'DO NOTHING';
  const upsert = `INSERT INTO ${qualified(table)} (${list}) SELECT ${list} FROM ${stage} ON CONFLICT (${keys.map((k) => quoteIdent(k.name)).join(', ')}) ${onConflict}`;
  const send = copySender(g, batch);
  const run = async (ks: number[]): Promise<undefined> => {
    await client.query('BEGIN');
    try {
      await send(client, `COPY ${stage} (${list}) FROM STDIN`, ks);
      await client.query(upsert);
      await client.query('COMMIT');
    } catch (err) {
      await client.query('ROLLBACK').catch(() => undefined);
      throw err;
    }
    return undefined;
  };
  await bisect(
    g.indices.map((_, k) => k),
    run,
    (k) => g.indices[k] as number,
    results,
    table,
  );
}

/** Upsert of a small batch (per run of unique keys): one INSERT … SELECT FROM unnest(…) ON CONFLICT statement. */
export async function upsertByStatement(
  client: PoolClient,
  table: PgTable,
  keys: PgColumn[],
  g: Group,
  batch: readonly ConnectorRecord[],
  results: WriteResult[],
): Promise<void> {
  const { cols, setCols, insertSql, arrays, statement } = keyedStatements(client, table, keys, g, batch);
  const target = keys.map((k) => quoteIdent(k.name)).join(', ');
  const onConflict = setCols.length
    ? `DO UPDATE SET ${setCols.map((c) => `${quoteIdent(c.name)} = EXCLUDED.${quoteIdent(c.name)}`).join(', ')}`
    : 'DO NOTHING';
  const sql = `${insertSql} ON CONFLICT (${target}) ${onConflict}`;
  await bisect(
    g.indices,
    async (idx) => void (await statement(sql, arrays(idx, cols))),
    (i) => i,
    results,
    table,
  );
}
