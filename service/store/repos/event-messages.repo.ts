import type { Kysely } from 'kysely';
import type { StoreDialect } from '../dialect.js';
import type { Database } from '../schema.js';
import type { Db } from '../sql.js';

/** What one POST asks to store on one endpoint. */
export interface AcceptGroup {
  readonly endpointId: number;
  /** The messages, each a JSON object's text, in the order they arrived. */
  readonly bodies: readonly string[];
  /** The caller's `Idempotency-Key`: a second POST with it stores nothing and answers as the first. */
  readonly idempotencyKey?: string | undefined;
}

/** What became of a group. */
export type AcceptOutcome =
  | { readonly status: 'stored'; readonly count: number }
  | { readonly status: 'duplicate'; readonly count: number }
  | { readonly status: 'full'; readonly queued: number; readonly limit: number }
  | { readonly status: 'gone' };

/** A message as an Agent run takes it. */
export interface TakenMessage {
  readonly id: number;
  /** The message, a JSON object's text. */
  readonly body: string;
}

/** Rows of one multi-row INSERT: 4 parameters each, far below SQLite's 32,766. */
const INSERT_ROWS = 1000;

/** A row of `event_messages` as the flush writes it. */
type NewMessage = { endpointId: number; body: string; receivedMs: number; leaseRun: null; leaseUntilMs: null };

/**
 * Stores the groups in one transaction (one commit for every POST that arrived meanwhile: the
 * intake's group commit, service/events/intake.ts). Each group is all or nothing: it is refused
 * whole when the endpoint's queue would pass `limit`, answered as before when its idempotency key
 * was seen, and stored otherwise, its messages in order. The outcomes are in the order of `groups`.
 *
 * The groups are worked in the order of their endpoints (stable: an endpoint's POSTs keep their
 * order), so that two replicas' flushes lock endpoint rows in one order on PostgreSQL and never
 * deadlock; the endpoint's row lock also orders the idempotency keys of its POSTs. An endpoint
 * whose POSTs carry no key and fit under the limit together is counted in one statement, and
 * every message of the flush is written by one multi-row INSERT (per 1,000): a flush costs a few
 * statements whatever the number of POSTs in it, not two per POST.
 */
export async function acceptMessages(
  db: Kysely<Database>,
  groups: readonly AcceptGroup[],
  limit: number,
  nowMs: number,
): Promise<AcceptOutcome[]> {
  const order = groups.map((_, i) => i).sort((a, b) => groups[a]!.endpointId - groups[b]!.endpointId || a - b);
  const byEndpoint = new Map<number, number[]>();
  for (const i of order) {
    const e = groups[i]!.endpointId;
    byEndpoint.set(e, [...(byEndpoint.get(e) ?? []), i]);
  }
  return db.transaction().execute(async (tx) => {
    const out: AcceptOutcome[] = new Array<AcceptOutcome>(groups.length);
    const rows: NewMessage[] = [];
    const keep = (g: AcceptGroup) => {
      for (const body of g.bodies)
        rows.push({ endpointId: g.endpointId, body, receivedMs: nowMs, leaseRun: null, leaseUntilMs: null });
    };
    for (const [endpointId, idxs] of byEndpoint) {
      const mine = idxs.map((i) => groups[i]!);
      if (mine.every((g) => g.idempotencyKey === undefined)) {
        const total = mine.reduce((n, g) => n + g.bodies.length, 0);
        if (await count(tx, endpointId, total, limit)) {
          for (const i of idxs) out[i] = { status: 'stored', count: groups[i]!.bodies.length };
          mine.forEach(keep);
          continue;
        }
      }
      // Some carry a key, or not all fit: each on its own, in order.
      for (const i of idxs) {
        const outcome = await acceptGroup(tx, groups[i]!, limit, nowMs);
        out[i] = outcome;
        if (outcome.status === 'stored') keep(groups[i]!);
      }
    }
    for (let i = 0; i < rows.length; i += INSERT_ROWS)
      await tx
        .insertInto('eventMessages')
        .values(rows.slice(i, i + INSERT_ROWS))
        .execute();
    return out;
  });
}

/** Adds `n` to the endpoint's counts when its queue stays within `limit`; false (nothing changed) otherwise. */
async function count(tx: Db, endpointId: number, n: number, limit: number): Promise<boolean> {
  // The count and the limit in one statement: on PostgreSQL the row lock orders concurrent accepts.
  const counted = await tx
    .updateTable('messageEndpoints')
    .set((eb) => ({ queued: eb('queued', '+', n), messageCount: eb('messageCount', '+', n) }))
    .where('id', '=', endpointId)
    .where((eb) => eb(eb('queued', '+', n), '<=', limit))
    .returning('queued')
    .executeTakeFirst();
  return counted !== undefined;
}

/** One group's outcome, its counts taken when it is stored (its messages are written by the caller). */
async function acceptGroup(tx: Db, g: AcceptGroup, limit: number, nowMs: number): Promise<AcceptOutcome> {
  const key = g.idempotencyKey;
  if (key !== undefined) {
    const seen = await seenKey(tx, g.endpointId, key);
    if (seen !== undefined) return { status: 'duplicate', count: seen };
  }
  const n = g.bodies.length;
  if (!(await count(tx, g.endpointId, n, limit))) {
    const row = await tx
      .selectFrom('messageEndpoints')
      .select('queued')
      .where('id', '=', g.endpointId)
      .executeTakeFirst();
    return row ? { status: 'full', queued: Number(row.queued), limit } : { status: 'gone' };
  }
  if (key !== undefined) {
    // Under the endpoint's row lock: a POST with the same key that another replica committed while
    // this one waited for the lock is seen here (the check above was before the wait). Its answer
    // is given, and the count taken back, rather than a unique violation failing the whole flush.
    const kept = await tx
      .insertInto('eventIdempotency')
      .values({ endpointId: g.endpointId, key, messages: n, createdMs: nowMs })
      .onConflict((oc) => oc.columns(['endpointId', 'key']).doNothing())
      .returning('messages')
      .executeTakeFirst();
    if (!kept) {
      await tx
        .updateTable('messageEndpoints')
        .set((eb) => ({ queued: eb('queued', '-', n), messageCount: eb('messageCount', '-', n) }))
        .where('id', '=', g.endpointId)
        .execute();
      return { status: 'duplicate', count: (await seenKey(tx, g.endpointId, key)) ?? n };
    }
  }
  return { status: 'stored', count: n };
}

/** How many messages the POST with this key stored, when one did. */
async function seenKey(tx: Db, endpointId: number, key: string): Promise<number | undefined> {
  const row = await tx
    .selectFrom('eventIdempotency')
    .select('messages')
    .where('endpointId', '=', endpointId)
    .where('key', '=', key)
    .executeTakeFirst();
  return row ? Number(row.messages) : undefined;
}

/**
 * Leases up to `max` of the endpoint's oldest messages that `runId` does not hold already to it
 * until `nowMs + leaseMs`, oldest first: free ones, ones past their lease, and ones another run
 * holds (a Solution has one event run at a time, so that run is over). On PostgreSQL the candidates are locked with SKIP LOCKED, so two
 * takes at once get different messages; SQLite runs one write at a time.
 */
export async function takeMessages(
  db: Db,
  dialect: StoreDialect,
  take: { endpointId: number; runId: string; max: number; nowMs: number; leaseMs: number },
): Promise<TakenMessage[]> {
  if (take.max <= 0) return [];
  let candidates = db
    .selectFrom('eventMessages')
    .select('id')
    .where('endpointId', '=', take.endpointId)
    // Free, past its lease, or held by another run: a Solution's event runs follow one another on
    // its Agent, so another run's lease is one that run will never use (it ended, or was taken for a
    // run that never began: the Agent killed between its first take and the run's start).
    .where((eb) =>
      eb.or([eb('leaseUntilMs', 'is', null), eb('leaseUntilMs', '<', take.nowMs), eb('leaseRun', '!=', take.runId)]),
    )
    .orderBy('id')
    .limit(take.max);
  if (dialect === 'postgres') candidates = candidates.forUpdate().skipLocked();
  const rows = await db
    .updateTable('eventMessages')
    .set({ leaseRun: take.runId, leaseUntilMs: take.nowMs + take.leaseMs })
    .where('id', 'in', candidates)
    .returning(['id', 'body'])
    .execute();
  return rows.map((r) => ({ id: Number(r.id), body: r.body })).sort((a, b) => a.id - b.id);
}

/**
 * Removes the messages `runId` wrote (or recorded the errors of) from the queue; a message whose
 * lease passed to another run meanwhile is that run's now and stays. Returns how many left.
 */
export async function doneMessages(db: Kysely<Database>, endpointId: number, runId: string, ids: readonly number[]) {
  if (ids.length === 0) return 0;
  return db.transaction().execute(async (tx) => {
    // By primary key (and the run's lease): a plan that does not depend on the table's statistics.
    const r = await tx
      .deleteFrom('eventMessages')
      .where('id', 'in', [...ids])
      .where('leaseRun', '=', runId)
      .executeTakeFirst();
    const n = Number(r.numDeletedRows);
    if (n > 0)
      await tx
        .updateTable('messageEndpoints')
        .set((eb) => ({ queued: eb('queued', '-', n) }))
        .where('id', '=', endpointId)
        .execute();
    return n;
  });
}

/** Gives back every message `runId` still holds (the run ended, or ended with its Agent). */
export async function releaseRun(db: Db, runId: string): Promise<number> {
  const r = await db
    .updateTable('eventMessages')
    .set({ leaseRun: null, leaseUntilMs: null })
    .where('leaseRun', '=', runId)
    .executeTakeFirst();
  return Number(r.numUpdatedRows);
}

/** Forgets idempotency keys older than `beforeMs` (housekeeping); returns how many. */
export async function pruneIdempotencyKeys(db: Db, beforeMs: number): Promise<number> {
  const r = await db.deleteFrom('eventIdempotency').where('createdMs', '<', beforeMs).executeTakeFirst();
  return Number(r.numDeletedRows);
}
