import { sql, type Insertable, type RawBuilder } from 'kysely';
import type { Db } from '../sql.js';
import type { ExecutionErrorRow, ExecutionErrorsTable, ExecutionRow, ExecutionUpdate, NewExecutionRow, ScheduleSkipRow, ScheduleSkipsTable } from '../schema.js';

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
 * A page of the execution's errors in order of arrival. Deep offsets stay cheap: the `seq` at the
 * offset is found by walking the (execution_id, seq) index alone (no row is read), and the page
 * is then read by key from there.
 */
export async function listErrors(db: Db, executionId: number, page: { limit: number; offset: number }): Promise<{ rows: ExecutionErrorRow[]; total: number }> {
  const { n } = await db
    .selectFrom('executionErrors')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('executionId', '=', executionId)
    .executeTakeFirstOrThrow();
  const total = Number(n);
  if (page.limit === 0 || page.offset >= total) return { rows: [], total };
  const first = await db.selectFrom('executionErrors').select('seq').where('executionId', '=', executionId).orderBy('seq').limit(1).offset(page.offset).executeTakeFirst();
  if (!first) return { rows: [], total };
  const rows = await db
    .selectFrom('executionErrors')
    .selectAll()
    .where('executionId', '=', executionId)
    .where('seq', '>=', first.seq)
    .orderBy('seq')
    .limit(page.limit)
    .execute();
  return { rows: rows.map((r) => ({ ...r, executionId: Number(r.executionId), seq: Number(r.seq) })), total };
}

export async function getError(db: Db, executionId: number, id: string): Promise<ExecutionErrorRow | undefined> {
  const row = await db.selectFrom('executionErrors').selectAll().where('executionId', '=', executionId).where('id', '=', id.toLowerCase()).executeTakeFirst();
  return row && { ...row, executionId: Number(row.executionId), seq: Number(row.seq) };
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
