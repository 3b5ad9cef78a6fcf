import type { Db } from '../sql.js';
import type { AgentLogRow } from '../schema.js';

export async function insertAgentLog(db: Db, row: AgentLogRow): Promise<void> {
  await db.insertInto('agentLogs').values(row).execute();
}

export async function getAgentLog(db: Db, id: string): Promise<AgentLogRow | undefined> {
  return db.selectFrom('agentLogs').selectAll().where('id', '=', id).executeTakeFirst();
}

/** Requested → Ready once the zip is on disk; false when the request is no longer waiting. */
export async function markAgentLogReady(db: Db, id: string, sizeBytes: number, at: string): Promise<boolean> {
  const res = await db
    .updateTable('agentLogs')
    .set({ state: 'Ready', sizeBytes, uploadedAt: at })
    .where('id', '=', id)
    .where('state', '=', 'Requested')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Requested → Failed with the reason (only the Agent the request went to can fail it). */
export async function markAgentLogFailed(db: Db, id: string, agentId: string, error: string): Promise<boolean> {
  const res = await db
    .updateTable('agentLogs')
    .set({ state: 'Failed', error: error.slice(0, 2000) })
    .where('id', '=', id)
    .where('agentId', '=', agentId)
    .where('state', '=', 'Requested')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Ready → Downloaded: true for the one GET that may send the zip. */
export async function claimAgentLogDownload(db: Db, id: string, at: string): Promise<boolean> {
  const res = await db
    .updateTable('agentLogs')
    .set({ state: 'Downloaded', downloadedAt: at })
    .where('id', '=', id)
    .where('state', '=', 'Ready')
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Log requests of one Agent (to remove their files when the Agent is deleted). */
export async function listAgentLogIds(db: Db, agentId: string): Promise<string[]> {
  return (await db.selectFrom('agentLogs').select('id').where('agentId', '=', agentId).execute()).map((r) => r.id);
}

/** Log requests older than `before`, whatever their state: their files are removed, then the rows. */
export async function listAgentLogsBefore(db: Db, before: string): Promise<string[]> {
  return (await db.selectFrom('agentLogs').select('id').where('requestedAt', '<', before).execute()).map((r) => r.id);
}

export async function deleteAgentLogs(db: Db, ids: string[]): Promise<void> {
  if (ids.length === 0) return;
  await db.deleteFrom('agentLogs').where('id', 'in', ids).execute();
}
