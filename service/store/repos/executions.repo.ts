import { sql, type Insertable, type RawBuilder } from 'kysely';
import type { Db } from '../sql.js';
import type { ExecutionErrorRow, ExecutionErrorsTable, ExecutionRow, ExecutionUpdate, Flag, NewExecutionRow, ScheduleSkipRow, ScheduleSkipsTable } from '../schema.js';

/** The columns the History list sorts by. */
export type ExecutionSortColumn = 'start' | 'result' | 'recordsProcessed' | 'recordsFailed';

export interface ExecutionListFilter {
  /** Executions that started at or after this ISO time. */
  startFrom: string;
  /** A stored result, or null for the runs still going. */
  result?: string | null | undefined;
  sort: { column: ExecutionSortColumn; desc: boolean };
  page: { limit: number; offset: number };
}

/** Counts come back from PostgreSQL's bigint through the INT8 parser; make sure they are numbers. */
function normalize(row: ExecutionRow): ExecutionRow {
  return { ...row, id: Number(row.id), recordsProcessed: Number(row.recordsProcessed), recordsFailed: Number(row.recordsFailed) };
}

export async function getExecutionByRunId(db: Db, runId: string): Promise<ExecutionRow | undefined> {
  const row = await db.selectFrom('executions').selectAll().where('runId', '=', runId).executeTakeFirst();
  return row && normalize(row);
}

/** An execution of the Solution by its integer ID or its run ID. */
export async function getExecution(db: Db, solutionId: string, ref: number | string): Promise<ExecutionRow | undefined> {
  const q = db.selectFrom('executions').selectAll().where('solutionId', '=', solutionId.toLowerCase());
  const row = await (typeof ref === 'number' ? q.where('id', '=', ref) : q.where('runId', '=', ref)).executeTakeFirst();
  return row && normalize(row);
}

/** Inserts the execution unless one with its run ID exists; answers whether it did. */
export async function insertExecutionIfNew(db: Db, row: NewExecutionRow): Promise<boolean> {
  const inserted = await db
    .insertInto('executions')
    .values(row)
    .onConflict((oc) => oc.column('runId').doNothing())
    .returning('id')
    .executeTakeFirst();
  return inserted !== undefined;
}

/**
 * Patches the execution of a run; with `onlyInProgress`, only while it has no result. Answers
 * whether a row changed: the conditional form is how a run's end is applied exactly once, even by
 * two transactions at once (the second waits for the first's row lock, then finds a result).
 */
export async function updateExecution(db: Db, runId: string, patch: ExecutionUpdate, onlyInProgress: boolean): Promise<boolean> {
  let q = db.updateTable('executions').set(patch).where('runId', '=', runId);
  if (onlyInProgress) q = q.where('result', 'is', null);
  const res = await q.executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

const SORT_SQL: Record<ExecutionSortColumn, RawBuilder<unknown>> = {
  start: sql.ref('start'),
  // Runs still going have no result and are shown (and sorted) as InProgress.
  result: sql`coalesce(result, 'InProgress')`,
  recordsProcessed: sql.ref('records_processed'),
  recordsFailed: sql.ref('records_failed'),
};

/** The Solution's executions matching the filter, sorted (ties by ID in the same direction) and paged; `total` counts every match. */
export async function listExecutions(db: Db, solutionId: string, filter: ExecutionListFilter): Promise<{ rows: ExecutionRow[]; total: number }> {
  let base = db.selectFrom('executions').where('solutionId', '=', solutionId.toLowerCase()).where('start', '>=', filter.startFrom);
  if (filter.result === null) base = base.where('result', 'is', null);
  else if (filter.result !== undefined) base = base.where('result', '=', filter.result);
  const dir = filter.sort.desc ? 'desc' : 'asc';
  const rows = await base
    .selectAll()
    .orderBy(SORT_SQL[filter.sort.column], dir)
    .orderBy('id', dir)
    .limit(filter.page.limit)
    .offset(filter.page.offset)
    .execute();
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return { rows: rows.map(normalize), total: Number(n) };
}

/** How many errors of each execution can still be reprocessed (a count over a partial index); executions without any are absent. */
export async function reprocessableCounts(db: Db, executionIds: readonly number[]): Promise<Map<number, number>> {
  if (executionIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('executionErrors')
    .select((eb) => ['executionId', eb.fn.countAll<number>().as('n')])
    .where('executionId', 'in', [...executionIds])
    // A literal, not a parameter: only then may the planner use the partial index (… WHERE can_reprocess = 1).
    .where('canReprocess', '=', sql.lit(1))
    .groupBy('executionId')
    .execute();
  return new Map(rows.map((r) => [Number(r.executionId), Number(r.n)]));
}

/** Which of these error IDs are stored already. */
export async function existingErrorIds(db: Db, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await db.selectFrom('executionErrors').select('id').where('id', 'in', [...ids]).execute();
  return new Set(rows.map((r) => r.id));
}

/** The highest `seq` of the execution's errors; 0 when it has none. */
export async function lastErrorSeq(db: Db, executionId: number): Promise<number> {
  const row = await db.selectFrom('executionErrors').select('seq').where('executionId', '=', executionId).orderBy('seq', 'desc').limit(1).executeTakeFirst();
  return row ? Number(row.seq) : 0;
}

export async function insertErrors(db: Db, rows: ReadonlyArray<Insertable<ExecutionErrorsTable>>): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto('executionErrors').values([...rows]).execute();
}

/**
 * A page of the execution's errors in order of arrival, at any offset in the time of the first
 * page. `seq` numbers an execution's errors 1, 2, … n with no gap (RunReports gives each new
 * error the next number, and errors are only ever removed with their execution, from the top:
 * see deleteErrorsChunk), so the count is the highest `seq` and offset N is `seq > N`: both are
 * read from the (execution_id, seq) index by key, without walking the entries before the page.
 */
export async function listErrors(db: Db, executionId: number, page: { limit: number; offset: number }): Promise<{ rows: ExecutionErrorRow[]; total: number }> {
  const total = await lastErrorSeq(db, executionId);
  if (page.limit === 0 || page.offset >= total) return { rows: [], total };
  return { rows: await errorsAfter(db, executionId, page.offset, page.limit), total };
}

/**
 * The mark in effect of an error of the execution (migration 023): its own, else the execution's
 * default, and never on one that can no longer be reprocessed. The default is read once per
 * statement (an uncorrelated subquery), not once per row.
 */
const markInEffect = (executionId: number) =>
  sql<Flag>`case when ${sql.ref('e.canReprocess')} = 1 and coalesce(${sql.ref('e.marked')}, (select mark_default from executions where id = ${executionId})) = 1 then 1 else 0 end`;

/** The execution's errors as read (ExecutionErrorRow): every column, `marked` the mark in effect. */
function selectErrors(db: Db, executionId: number) {
  return db
    .selectFrom('executionErrors as e')
    .select([
      'e.id', 'e.executionId', 'e.seq', 'e.mapId', 'e.mapName', 'e.sourceEntity', 'e.blockId', 'e.blockName', 'e.code',
      'e.errorMessage', 'e.errorDetail', 'e.canReprocess', 'e.failedRecordId', 'e.created', 'e.reprocessRunId',
      markInEffect(executionId).as('marked'),
    ])
    .where('e.executionId', '=', executionId);
}

/**
 * Up to `limit` errors of the execution whose `seq` is above `afterSeq`, in order: keyset paging.
 * The numbers are dense, so the page is first read as the range (afterSeq, afterSeq + limit]: a
 * read of `limit` rows whatever plan the database picks. Without it, PostgreSQL working from no or
 * stale statistics (a table filled minutes ago) took every error after `afterSeq` and sorted them
 * for each page, so that an export of a million errors read the table once per page. A short range
 * (the last page, or a gap) is read again without the bound.
 */
export async function errorsAfter(db: Db, executionId: number, afterSeq: number, limit: number): Promise<ExecutionErrorRow[]> {
  const page = (bounded: boolean) => {
    const q = selectErrors(db, executionId).where('e.seq', '>', afterSeq);
    return (bounded ? q.where('e.seq', '<=', afterSeq + limit) : q).orderBy('e.seq').limit(limit).execute();
  };
  let rows = await page(true);
  if (rows.length < limit) rows = await page(false);
  return rows.map((r) => ({ ...r, executionId: Number(r.executionId), seq: Number(r.seq), marked: Number(r.marked) }));
}

export async function getError(db: Db, executionId: number, id: string): Promise<ExecutionErrorRow | undefined> {
  const row = await selectErrors(db, executionId).where('e.id', '=', id.toLowerCase()).executeTakeFirst();
  return row && { ...row, executionId: Number(row.executionId), seq: Number(row.seq), marked: Number(row.marked) };
}

/** Records a skipped due time unless it is recorded already; answers whether it was new. */
export async function insertScheduleSkip(db: Db, row: ScheduleSkipsTable): Promise<boolean> {
  const inserted = await db
    .insertInto('scheduleSkips')
    .values(row)
    .onConflict((oc) => oc.columns(['solutionId', 'dueAt']).doNothing())
    .returning('dueAt')
    .executeTakeFirst();
  return inserted !== undefined;
}

/** The Solution's skipped due times, newest first, paged; `total` counts them all. */
export async function listScheduleSkips(db: Db, solutionId: string, page: { limit: number; offset: number }): Promise<{ rows: ScheduleSkipRow[]; total: number }> {
  const base = db.selectFrom('scheduleSkips').where('solutionId', '=', solutionId.toLowerCase());
  const rows = await base.selectAll().orderBy('dueAt', 'desc').limit(page.limit).offset(page.offset).execute();
  const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
  return { rows, total: Number(n) };
}

// ── Retention (service/jobs/history-retention.ts) ─────────────────────────────────

/** An execution the retention job removes. */
export interface ExpiredExecution {
  readonly id: number;
  readonly runId: string;
  readonly solutionId: string;
}

/**
 * Up to `limit` executions that started before `before` and ended, oldest first. A run still going
 * (no result) is never among them, whatever its age; nor, while a run of the same Solution that
 * started inside the window is going (a reprocess run reads the errors of an older execution), any
 * execution of that Solution.
 */
export async function expiredExecutions(db: Db, before: string, limit: number): Promise<ExpiredExecution[]> {
  const rows = await db
    .selectFrom('executions as e')
    .select(['e.id', 'e.runId', 'e.solutionId'])
    .where('e.start', '<', before)
    .where('e.result', 'is not', null)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('executions as r')
            .select('r.id')
            .whereRef('r.solutionId', '=', 'e.solutionId')
            .where('r.result', 'is', null)
            .where('r.start', '>=', before),
        ),
      ),
    )
    .orderBy('e.start')
    .orderBy('e.id')
    .limit(limit)
    .execute();
  return rows.map((r) => ({ ...r, id: Number(r.id) }));
}

/**
 * Deletes up to `chunk` of the execution's record errors, the highest `seq` first, so that those
 * left stay numbered 1..n without a gap (listErrors relies on it); answers how many went.
 */
export async function deleteErrorsChunk(db: Db, executionId: number, chunk: number): Promise<number> {
  const top = await lastErrorSeq(db, executionId);
  if (top === 0) return 0;
  const res = await db.deleteFrom('executionErrors').where('executionId', '=', executionId).where('seq', '>', top - chunk).executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** Deletes an execution that has ended (what is left of its errors and its exports go with it); answers whether it did. */
export async function deleteEndedExecution(db: Db, id: number): Promise<boolean> {
  const res = await db.deleteFrom('executions').where('id', '=', id).where('result', 'is not', null).executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/**
 * Deletes skipped due times before `before`, about `chunk` at a time (all those on the due time
 * that ends the chunk go with it); answers how many went.
 */
export async function deleteScheduleSkipsChunk(db: Db, before: string, chunk: number): Promise<number> {
  const edge = await db.selectFrom('scheduleSkips').select('dueAt').where('dueAt', '<', before).orderBy('dueAt').limit(1).offset(chunk - 1).executeTakeFirst();
  const q = db.deleteFrom('scheduleSkips');
  const res = await (edge ? q.where('dueAt', '<=', edge.dueAt) : q.where('dueAt', '<', before)).executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** A reprocess run sent to an Agent that has not ended. */
export interface UnendedReprocessRun {
  readonly runId: string;
  readonly solutionId: string;
  readonly start: string;
}

/**
 * Up to `limit` of the Agent's reprocess runs that have no result and started before
 * `startedBefore`, oldest first, over the partial index of runs in progress (migration 024).
 */
export async function unendedReprocessRuns(db: Db, agentId: string, startedBefore: string, limit: number): Promise<UnendedReprocessRun[]> {
  return db
    .selectFrom('executions')
    .select(['runId', 'solutionId', 'start'])
    .where('agentId', '=', agentId)
    .where('result', 'is', null)
    .where('start', '<', startedBefore)
    .where('isReprocessJob', '=', 1)
    .orderBy('start')
    .limit(limit)
    .execute();
}
