import { CompiledQuery, sql, type Insertable, type RawBuilder } from 'kysely';
import type { StoreDialect } from '../dialect.js';
import type { Db } from '../sql.js';
import type {
  ExecutionErrorRow,
  ExecutionErrorsTable,
  ExecutionRow,
  ExecutionUpdate,
  Flag,
  NewExecutionRow,
  ScheduleSkipRow,
  ScheduleSkipsTable,
} from '../schema.js';

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
  return {
    ...row,
    id: Number(row.id),
    recordsProcessed: Number(row.recordsProcessed),
    recordsFailed: Number(row.recordsFailed),
  };
}

export async function getExecutionByRunId(db: Db, runId: string): Promise<ExecutionRow | undefined> {
  const row = await db.selectFrom('executions').selectAll().where('runId', '=', runId).executeTakeFirst();
  return row && normalize(row);
}

/** An execution of the Solution by its integer ID or its run ID. */
export async function getExecution(
  db: Db,
  solutionId: string,
  ref: number | string,
): Promise<ExecutionRow | undefined> {
  const q = db.selectFrom('executions').selectAll().where('solutionId', '=', solutionId.toLowerCase());
  const row = await (typeof ref === 'number' ? q.where('id', '=', ref) : q.where('runId', '=', ref)).executeTakeFirst();
  return row && normalize(row);
}

/** The Solution's execution that started last, if it ever ran. */
export async function latestExecution(db: Db, solutionId: string): Promise<ExecutionRow | undefined> {
  const row = await db
    .selectFrom('executions')
    .selectAll()
    .where('solutionId', '=', solutionId.toLowerCase())
    .orderBy('start', 'desc')
    .orderBy('id', 'desc')
    .limit(1)
    .executeTakeFirst();
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
export async function updateExecution(
  db: Db,
  runId: string,
  patch: ExecutionUpdate,
  onlyInProgress: boolean,
): Promise<boolean> {
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
export async function listExecutions(
  db: Db,
  solutionId: string,
  filter: ExecutionListFilter,
): Promise<{ rows: ExecutionRow[]; total: number }> {
  let base = db
    .selectFrom('executions')
    .where('solutionId', '=', solutionId.toLowerCase())
    .where('start', '>=', filter.startFrom);
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

/**
 * Which of these error IDs are stored already. With the store's dialect the statement's text is
 * fixed (one array parameter on PostgreSQL, one per ID on SQLite, cached by count), so nothing is
 * built per call: the runErrors handler asks this for every report.
 */
export async function existingErrorIds(db: Db, ids: readonly string[], dialect?: StoreDialect): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  if (dialect === undefined) {
    const rows = await db
      .selectFrom('executionErrors')
      .select('id')
      .where('id', 'in', [...ids])
      .execute();
    return new Set(rows.map((r) => r.id));
  }
  const query =
    dialect === 'postgres'
      ? CompiledQuery.raw('select id from execution_errors where id = any($1::text[])', [ids])
      : CompiledQuery.raw(sqliteExistingIds(ids.length), [...ids]);
  const { rows } = await db.executeQuery<{ id: string }>(query);
  return new Set(rows.map((r) => r.id));
}

/** The highest `seq` of the execution's errors; 0 when it has none. */
export async function lastErrorSeq(db: Db, executionId: number): Promise<number> {
  const row = await db
    .selectFrom('executionErrors')
    .select('seq')
    .where('executionId', '=', executionId)
    .orderBy('seq', 'desc')
    .limit(1)
    .executeTakeFirst();
  return row ? Number(row.seq) : 0;
}

/** A new error as RunReports stores it: every column but `reprocessRunId`, which a reprocess run sets later. */
export type NewExecutionError = Required<Omit<Insertable<ExecutionErrorsTable>, 'reprocessRunId'>>;

/**
 * Inserts errors. With the store's dialect (the runErrors handler, for every report), in statements
 * whose text is built once, not through Kysely's builder (docs/benchmarks.md "Solutions"): on
 * SQLite {@link SQLITE_ERRORS_PER_INSERT} rows a prepared statement (the connection caches it by
 * its text) and the rest one row a statement; on PostgreSQL all rows as one JSON parameter
 * expanded by `jsonb_array_elements`. Without it, through the builder (any rows: the benches' seeding).
 */
export async function insertErrors(db: Db, rows: readonly NewExecutionError[], dialect?: StoreDialect): Promise<void> {
  if (rows.length === 0) return;
  if (dialect === 'sqlite') {
    const full = rows.length - (rows.length % SQLITE_ERRORS_PER_INSERT);
    for (let i = 0; i < full; i += SQLITE_ERRORS_PER_INSERT)
      await db.executeQuery(CompiledQuery.raw(SQLITE_INSERT_CHUNK, errorParams(rows, i, i + SQLITE_ERRORS_PER_INSERT)));
    for (let i = full; i < rows.length; i++)
      await db.executeQuery(CompiledQuery.raw(SQLITE_INSERT_ONE, errorParams(rows, i, i + 1)));
    return;
  }
  const json = dialect === 'postgres' ? postgresErrorsJson(rows) : undefined;
  if (json !== undefined) await db.executeQuery(CompiledQuery.raw(POSTGRES_INSERT_JSON, [json]));
  else
    await db
      .insertInto('executionErrors')
      .values([...rows])
      .execute();
}

/** The columns insertErrors writes, in order: the row's property, the column, its PostgreSQL type. */
const ERROR_COLUMNS = [
  ['id', 'id', 'text'],
  ['executionId', 'execution_id', 'integer'],
  ['seq', 'seq', 'integer'],
  ['mapId', 'map_id', 'integer'],
  ['mapName', 'map_name', 'text'],
  ['sourceEntity', 'source_entity', 'text'],
  ['blockId', 'block_id', 'text'],
  ['blockName', 'block_name', 'text'],
  ['code', 'code', 'text'],
  ['errorMessage', 'error_message', 'text'],
  ['errorDetail', 'error_detail', 'text'],
  ['canReprocess', 'can_reprocess', 'integer'],
  ['marked', 'marked', 'integer'],
  ['failedRecordId', 'failed_record_id', 'text'],
  ['created', 'created', 'text'],
  ['sourceKey', 'source_key', 'text'],
  ['sourceRow', 'source_row', 'integer'],
] as const satisfies ReadonlyArray<readonly [keyof NewExecutionError, string, string]>;

/**
 * Rows a prepared multi-row INSERT takes on SQLite. Measured (100,000 errors, 500 reports of 200):
 * one 200-row statement cost SQLite ≈ 12 µs an error, 25- or 50-row statements ≈ 10.7, a one-row
 * statement run 200 times ≈ 9.7, but each statement run costs a trip through Kysely's executor.
 */
const SQLITE_ERRORS_PER_INSERT = 50;

const ERROR_COLUMN_LIST = ERROR_COLUMNS.map(([, column]) => column).join(', ');

/** `?, ?, …` for `count` rows of `width` parameters, one row a tuple when `width` > 1. */
function sqliteMarks(count: number, width: number): string {
  const tuple = width === 1 ? '?' : `(${Array.from({ length: width }, () => '?').join(', ')})`;
  return Array.from({ length: count }, () => tuple).join(', ');
}

/**
 * existingErrorIds' SQLite statement for `count` IDs, built once for each count up to 1,000 (a
 * report has at most 200): the same string object each time, so the connection's statement cache
 * finds it without hashing a new text.
 */
const existingIdsSql: string[] = [];
function sqliteExistingIds(count: number): string {
  const build = (): string => `select id from execution_errors where id in (${sqliteMarks(count, 1)})`;
  return count > 1000 ? build() : (existingIdsSql[count] ??= build());
}

const SQLITE_INSERT_CHUNK = `insert into execution_errors (${ERROR_COLUMN_LIST}) values ${sqliteMarks(SQLITE_ERRORS_PER_INSERT, ERROR_COLUMNS.length)}`;
const SQLITE_INSERT_ONE = `insert into execution_errors (${ERROR_COLUMN_LIST}) values ${sqliteMarks(1, ERROR_COLUMNS.length)}`;

/** The parameters of rows `from` … `to` − 1, row after row, in the order of ERROR_COLUMNS. */
function errorParams(rows: readonly NewExecutionError[], from: number, to: number): unknown[] {
  const params: unknown[] = [];
  for (let i = from; i < to; i++) {
    const r = rows[i] as NewExecutionError;
    params.push(
      r.id,
      r.executionId,
      r.seq,
      r.mapId,
      r.mapName,
      r.sourceEntity,
      r.blockId,
      r.blockName,
      r.code,
      r.errorMessage,
      r.errorDetail,
      r.canReprocess,
      r.marked,
      r.failedRecordId,
      r.created,
      r.sourceKey,
      r.sourceRow,
    );
  }
  return params;
}

const POSTGRES_INSERT_JSON =
  `insert into execution_errors (${ERROR_COLUMN_LIST}) select ` +
  `${ERROR_COLUMNS.map(([, , type], i) => (type === 'text' ? `e->>${i}` : `(e->>${i})::${type}`)).join(', ')} from jsonb_array_elements($1::jsonb) as e`;

/**
 * The rows for POSTGRES_INSERT_JSON: one JSON parameter, a row an array (serialized natively,
 * parsed by the server), instead of 17 parameters a row. Measured against those (100,000 errors):
 * the Service's CPU 0.41 s against 0.55 s, the server's 1.4 s against 2.0 s. JSON carries two
 * things a text parameter does not: `\u0000` (a NUL, which PostgreSQL refuses in text either way)
 * and a lone surrogate escaped as `\ud800`…`\udfff`, which the server refuses where a text parameter
 * stores U+FFFD. For rows whose JSON has either, undefined: they go through the builder, as before.
 */
function postgresErrorsJson(rows: readonly NewExecutionError[]): string | undefined {
  const json = JSON.stringify(rows.map((_, i) => errorParams(rows, i, i + 1)));
  return json.includes('\\u0000') || json.includes('\\ud') ? undefined : json;
}

/**
 * A page of the execution's errors in order of arrival, at any offset in the time of the first
 * page. `seq` numbers an execution's errors 1, 2, … n with no gap (RunReports gives each new
 * error the next number, and errors are only ever removed with their execution, from the top:
 * see deleteErrorsChunk), so the count is the highest `seq` and offset N is `seq > N`: both are
 * read from the (execution_id, seq) index by key, without walking the entries before the page.
 */
export async function listErrors(
  db: Db,
  executionId: number,
  page: { limit: number; offset: number },
): Promise<{ rows: ExecutionErrorRow[]; total: number }> {
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
      'e.id',
      'e.executionId',
      'e.seq',
      'e.mapId',
      'e.mapName',
      'e.sourceEntity',
      'e.blockId',
      'e.blockName',
      'e.code',
      'e.errorMessage',
      'e.errorDetail',
      'e.canReprocess',
      'e.failedRecordId',
      'e.created',
      'e.sourceKey',
      'e.sourceRow',
      'e.reprocessRunId',
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
export async function errorsAfter(
  db: Db,
  executionId: number,
  afterSeq: number,
  limit: number,
): Promise<ExecutionErrorRow[]> {
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
export async function listScheduleSkips(
  db: Db,
  solutionId: string,
  page: { limit: number; offset: number },
): Promise<{ rows: ScheduleSkipRow[]; total: number }> {
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
  const res = await db
    .deleteFrom('executionErrors')
    .where('executionId', '=', executionId)
    .where('seq', '>', top - chunk)
    .executeTakeFirst();
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
  const edge = await db
    .selectFrom('scheduleSkips')
    .select('dueAt')
    .where('dueAt', '<', before)
    .orderBy('dueAt')
    .limit(1)
    .offset(chunk - 1)
    .executeTakeFirst();
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
export async function unendedReprocessRuns(
  db: Db,
  agentId: string,
  startedBefore: string,
  limit: number,
): Promise<UnendedReprocessRun[]> {
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
