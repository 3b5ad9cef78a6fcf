import type { Db } from '../sql.js';
import type { ConnectionMetadataRow, MetadataRequestRow, MetadataRequestsTable } from '../schema.js';

export async function getMetadataCache(db: Db, connectionId: string): Promise<ConnectionMetadataRow | undefined> {
  return db.selectFrom('connectionMetadata').selectAll().where('connectionId', '=', connectionId).executeTakeFirst();
}

/** Stores a freshly loaded metadata document (replacing any earlier one). */
export async function putMetadataCache(
  db: Db,
  row: { connectionId: string; orgId: number; agentId: string; metadata: string; loadedAt: string },
): Promise<void> {
  await db
    .insertInto('connectionMetadata')
    .values(row)
    .onConflict((oc) =>
      oc.column('connectionId').doUpdateSet({ agentId: row.agentId, metadata: row.metadata, loadedAt: row.loadedAt }),
    )
    .execute();
}

/** Drops the cached document but keeps the row, so the Agent that loaded it is remembered. */
export async function resetMetadataCache(db: Db, connectionId: string): Promise<void> {
  await db
    .updateTable('connectionMetadata')
    .set({ metadata: null, loadedAt: null })
    .where('connectionId', '=', connectionId)
    .execute();
}

export async function insertMetadataRequest(
  db: Db,
  row: Omit<MetadataRequestsTable, 'errorSeen' | 'replicaId'> & { replicaId?: string | null },
): Promise<void> {
  await db.insertInto('metadataRequests').values(row).execute();
}

/**
 * Records the end of a request. `report: false` marks a failure as already seen, so that no caller
 * is told about it: the load did not fail, its answer was lost, and the next call sends it again.
 */
export async function finishMetadataRequest(
  db: Db,
  id: string,
  state: 'Completed' | 'Failed',
  endDate: string,
  errorMessage: string | null,
  opts: { report?: boolean } = {},
): Promise<void> {
  const seen = opts.report === false ? { errorSeen: 1 } : {};
  await db
    .updateTable('metadataRequests')
    .set({ state, endDate, errorMessage, ...seen })
    .where('id', '=', id)
    .execute();
}

export async function markMetadataErrorSeen(db: Db, id: string): Promise<void> {
  await db.updateTable('metadataRequests').set({ errorSeen: 1 }).where('id', '=', id).execute();
}

/** The Connection's requests, newest first. */
export async function listMetadataRequests(
  db: Db,
  connectionId: string,
  limit: number,
  offset = 0,
): Promise<MetadataRequestRow[]> {
  return db
    .selectFrom('metadataRequests')
    .selectAll()
    .where('connectionId', '=', connectionId)
    .orderBy('startDate', 'desc')
    .orderBy('id', 'desc')
    .limit(limit)
    .offset(offset)
    .execute();
}

export async function countMetadataRequests(db: Db, connectionId: string): Promise<number> {
  const r = await db
    .selectFrom('metadataRequests')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('connectionId', '=', connectionId)
    .executeTakeFirstOrThrow();
  return Number(r.n);
}

/** Keeps the newest `keep` requests of a Connection. */
export async function pruneMetadataRequests(db: Db, connectionId: string, keep: number): Promise<void> {
  const old = await listMetadataRequests(db, connectionId, 1000, keep);
  if (old.length > 0)
    await db
      .deleteFrom('metadataRequests')
      .where(
        'id',
        'in',
        old.map((r) => r.id),
      )
      .execute();
}
