import type { Db } from '../sql.js';
import type { FailedRecordRow, FailedRecordsTable } from '../schema.js';

/** Stores failed records; one already stored (a report sent again) is left as it is. */
export async function insertFailedRecords(db: Db, rows: readonly FailedRecordsTable[]): Promise<void> {
  if (rows.length === 0) return;
  await db.insertInto('failedRecords').values([...rows]).onConflict((oc) => oc.column('id').doNothing()).execute();
}

export async function getFailedRecord(db: Db, solutionId: string, id: string): Promise<FailedRecordRow | undefined> {
  return db.selectFrom('failedRecords').selectAll().where('solutionId', '=', solutionId).where('id', '=', id.toLowerCase()).executeTakeFirst();
}
