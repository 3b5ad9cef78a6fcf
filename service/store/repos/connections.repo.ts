import type { Insertable } from 'kysely';
import type { Db } from '../sql.js';
import type {
  ConnectionCommandKind,
  ConnectionRow,
  ConnectionTestRow,
  ConnectionUpdate,
  ConnectionsTable,
  ConnectionTestsTable,
} from '../schema.js';

export async function insertConnection(db: Db, row: Insertable<ConnectionsTable>): Promise<void> {
  await db.insertInto('connections').values(row).execute();
}

export async function getConnection(db: Db, orgId: number, id: string): Promise<ConnectionRow | undefined> {
  return db
    .selectFrom('connections')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('id', '=', id.toLowerCase())
    .executeTakeFirst();
}

/** The Organization's Connections, oldest first; `name` matches exactly, case-insensitively. */
export async function listConnections(
  db: Db,
  orgId: number,
  filter: { name?: string | undefined } = {},
): Promise<ConnectionRow[]> {
  let q = db.selectFrom('connections').selectAll().where('orgId', '=', orgId);
  if (filter.name !== undefined) q = q.where('nameKey', '=', filter.name.toLowerCase());
  return q.orderBy('createDateTime').orderBy('id').execute();
}

export async function updateConnection(db: Db, orgId: number, id: string, patch: ConnectionUpdate): Promise<boolean> {
  const res = await db
    .updateTable('connections')
    .set(patch)
    .where('orgId', '=', orgId)
    .where('id', '=', id.toLowerCase())
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Records the Agent that just tested the Connection with SUCCESS or loaded its metadata. */
export async function setLastTestedAgent(db: Db, connectionId: string, agentId: string): Promise<void> {
  await db.updateTable('connections').set({ lastTestedAgentId: agentId }).where('id', '=', connectionId).execute();
}

export async function deleteConnection(db: Db, orgId: number, id: string): Promise<boolean> {
  const res = await db
    .deleteFrom('connections')
    .where('orgId', '=', orgId)
    .where('id', '=', id.toLowerCase())
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

export async function insertConnectionTest(db: Db, row: Insertable<ConnectionTestsTable>): Promise<void> {
  await db.insertInto('connectionTests').values(row).execute();
}

export async function getConnectionTest(
  db: Db,
  orgId: number,
  id: string,
  kind: ConnectionCommandKind,
): Promise<ConnectionTestRow | undefined> {
  return db
    .selectFrom('connectionTests')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('id', '=', id.toLowerCase())
    .where('kind', '=', kind)
    .executeTakeFirst();
}

/** Completes a test or preconnect; `replyData` is the sealed JSON of what the plugin answered with. */
export async function completeConnectionTest(
  db: Db,
  id: string,
  reply: string,
  completedAt: string,
  replyData: string | null = null,
): Promise<void> {
  await db
    .updateTable('connectionTests')
    .set({ status: 'Completed', reply, completedAt, replyData })
    .where('id', '=', id)
    .execute();
}

/** Forgets test results older than `before` (ISO time). */
export async function pruneConnectionTests(db: Db, before: string): Promise<void> {
  await db.deleteFrom('connectionTests').where('requestedAt', '<', before).execute();
}
