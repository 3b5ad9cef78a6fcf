import type { Db } from '../sql.js';
import type { FailedRecordRow, FailedRecordsTable } from '../schema.js';

/** Stores failed records; one already stored (a report sent again) is left as it is. */
export async function insertFailedRecords(db: Db, rows: readonly FailedRecordsTable[]): Promise<void> {
  if (rows.length === 0) return;
  await db
    .insertInto('failedRecords')
    .values([...rows])
    .onConflict((oc) => oc.column('id').doNothing())
    .execute();
}

export async function getFailedRecord(db: Db, solutionId: string, id: string): Promise<FailedRecordRow | undefined> {
  return db
    .selectFrom('failedRecords')
    .selectAll()
    .where('solutionId', '=', solutionId)
    .where('id', '=', id.toLowerCase())
    .executeTakeFirst();
}

// ── Retention (service/jobs/history-retention.ts) ─────────────────────────────────

/** Deletes up to `chunk` of the cloud failed records of a run; answers how many went. */
export async function deleteFailedRecordsOfRun(db: Db, runId: string, chunk: number): Promise<number> {
  const res = await db
    .deleteFrom('failedRecords')
    .where('id', 'in', (eb) => eb.selectFrom('failedRecords').select('id').where('runId', '=', runId).limit(chunk))
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

/**
 * Deletes up to `chunk` cloud failed records that came before `before` and belong to no
 * execution the History keeps: their execution was removed, or never came. Those of a run still
 * going, or of one that started inside the window, stay.
 */
export async function deleteOrphanFailedRecords(db: Db, before: string, chunk: number): Promise<number> {
  const res = await db
    .deleteFrom('failedRecords')
    .where('id', 'in', (eb) =>
      eb
        .selectFrom('failedRecords as f')
        .select('f.id')
        .where('f.created', '<', before)
        .where((w) =>
          w.not(
            w.exists(
              w
                .selectFrom('executions as x')
                .select('x.id')
                .whereRef('x.runId', '=', 'f.runId')
                .where((x) => x.or([x('x.result', 'is', null), x('x.start', '>=', before)])),
            ),
          ),
        )
        .limit(chunk),
    )
    .executeTakeFirst();
  return Number(res.numDeletedRows);
}

/** The Solution's cloud failed records with these IDs (those stored; the others are absent). */
export async function getFailedRecords(db: Db, solutionId: string, ids: readonly string[]): Promise<FailedRecordRow[]> {
  if (ids.length === 0) return [];
  return db
    .selectFrom('failedRecords')
    .selectAll()
    .where('solutionId', '=', solutionId)
    .where('id', 'in', [...ids])
    .execute();
}
