import type { Db } from '../sql.js';
import type { AgentInstallationKeyRow, AgentRow, AgentUpdate, AgentsTable, NewAgentRow } from '../schema.js';

export async function insertAgent(db: Db, row: NewAgentRow): Promise<AgentRow> {
  return db.insertInto('agents').values(row).returningAll().executeTakeFirstOrThrow();
}

/** The Agent with this ID in this Organization. */
export async function getAgent(db: Db, orgId: number, id: string): Promise<AgentRow | undefined> {
  return db.selectFrom('agents').selectAll().where('orgId', '=', orgId).where('id', '=', id).executeTakeFirst();
}

/** The Agent with this ID in any Organization (channel and upload authentication). */
export async function getAgentById(db: Db, id: string): Promise<AgentRow | undefined> {
  return db.selectFrom('agents').selectAll().where('id', '=', id).executeTakeFirst();
}

/** The Organization's Agents, oldest first; `name` matches exactly, case-insensitively. */
export async function listAgents(
  db: Db,
  orgId: number,
  filter: { name?: string | undefined } = {},
): Promise<AgentRow[]> {
  let q = db.selectFrom('agents').selectAll().where('orgId', '=', orgId);
  if (filter.name !== undefined) q = q.where('nameKey', '=', filter.name.toLowerCase());
  return q.orderBy('createdAt').orderBy('id').execute();
}

export async function updateAgent(db: Db, id: string, patch: AgentUpdate): Promise<void> {
  await db.updateTable('agents').set(patch).where('id', '=', id).execute();
}

/**
 * Applies `patch` only while the Agent still has the status and last contact it was read with:
 * a change computed from an earlier read must not overwrite a newer one (the sweeper against a
 * heartbeat).
 */
export async function updateAgentIfUnchanged(
  db: Db,
  id: string,
  seen: { status: string; lastContactTime: string | null },
  patch: AgentUpdate,
): Promise<boolean> {
  let q = db.updateTable('agents').set(patch).where('id', '=', id).where('status', '=', seen.status);
  q =
    seen.lastContactTime === null
      ? q.where('lastContactTime', 'is', null)
      : q.where('lastContactTime', '=', seen.lastContactTime);
  const res = await q.executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

/** Deletes the Agent; Connections it last tested no longer name it (a client would send its ID back). */
export async function deleteAgent(db: Db, id: string): Promise<boolean> {
  return db.transaction().execute(async (tx) => {
    await tx.updateTable('connections').set({ lastTestedAgentId: null }).where('lastTestedAgentId', '=', id).execute();
    const res = await tx.deleteFrom('agents').where('id', '=', id).executeTakeFirst();
    return Number(res.numDeletedRows) > 0;
  });
}

/** Whether another Agent of the Organization has this name (case-insensitively). */
export async function agentNameTaken(db: Db, orgId: number, name: string, exceptId?: string): Promise<boolean> {
  let q = db.selectFrom('agents').select('id').where('orgId', '=', orgId).where('nameKey', '=', name.toLowerCase());
  if (exceptId) q = q.where('id', '!=', exceptId);
  return (await q.executeTakeFirst()) !== undefined;
}

/** `base`, or `base 2`, `base 3`, … : the first name no Agent of the Organization has and that is not reserved. */
export async function uniqueAgentName(
  db: Db,
  orgId: number,
  base: string,
  reserved: readonly string[] = [],
): Promise<string> {
  const taken = new Set([
    ...(await db.selectFrom('agents').select('nameKey').where('orgId', '=', orgId).execute()).map((r) => r.nameKey),
    ...reserved.map((r) => r.toLowerCase()),
  ]);
  if (!taken.has(base.toLowerCase())) return base;
  for (let n = 2; ; n++) {
    const candidate = `${base} ${n}`;
    if (!taken.has(candidate.toLowerCase())) return candidate;
  }
}

export async function getCloudAgent(db: Db, orgId: number): Promise<AgentRow | undefined> {
  return db
    .selectFrom('agents')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('isCloudAgent', '=', 1)
    .executeTakeFirst();
}

export async function listCloudAgents(db: Db): Promise<AgentRow[]> {
  return db.selectFrom('agents').selectAll().where('isCloudAgent', '=', 1).orderBy('orgId').execute();
}

/**
 * Agents whose last contact is older than `before` and whose status the sweeper may still move
 * (not stopped, not already failed).
 */
export async function listSilentAgents(
  db: Db,
  before: string,
  skip: readonly string[],
): Promise<Array<Pick<AgentsTable, 'id' | 'orgId' | 'status' | 'lastContactTime'>>> {
  return db
    .selectFrom('agents')
    .select(['id', 'orgId', 'status', 'lastContactTime'])
    .where('lastContactTime', 'is not', null)
    .where('lastContactTime', '<', before)
    .where('status', 'not in', [...skip])
    .execute();
}

// ── Installation keys ──────────────────────────────────────────────────────────

export async function insertInstallationKey(db: Db, row: AgentInstallationKeyRow): Promise<void> {
  await db.insertInto('agentInstallationKeys').values(row).execute();
}

export async function getInstallationKey(db: Db, keyHash: string): Promise<AgentInstallationKeyRow | undefined> {
  return db.selectFrom('agentInstallationKeys').selectAll().where('keyHash', '=', keyHash).executeTakeFirst();
}

/** Marks the key used if nobody did before: true for the one caller that wins. */
export async function claimInstallationKey(db: Db, keyHash: string, usedAt: string): Promise<boolean> {
  const res = await db
    .updateTable('agentInstallationKeys')
    .set({ usedAt })
    .where('keyHash', '=', keyHash)
    .where('usedAt', 'is', null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

export async function bindInstallationKey(db: Db, keyHash: string, agentId: string): Promise<void> {
  await db.updateTable('agentInstallationKeys').set({ agentId }).where('keyHash', '=', keyHash).execute();
}

/** Removes keys that expired before `before` (used or not): they can never register anything. */
export async function deleteExpiredInstallationKeys(db: Db, before: string): Promise<number> {
  const res = await db.deleteFrom('agentInstallationKeys').where('expiresAt', '<', before).executeTakeFirst();
  return Number(res.numDeletedRows);
}

// ── Reports (deduplication) ────────────────────────────────────────────────────

/**
 * Stores a report under its durable message ID. False when this Agent already sent a message
 * with that ID: the caller acknowledges it again and applies nothing.
 */
export async function recordReport(
  db: Db,
  row: { agentId: string; messageId: string; kind: string; body: string; receivedAt: string },
): Promise<boolean> {
  const res = await db
    .insertInto('agentReports')
    .values(row)
    .onConflict((oc) => oc.columns(['agentId', 'messageId']).doNothing())
    .executeTakeFirst();
  return Number(res.numInsertedOrUpdatedRows ?? 0n) > 0;
}

export async function countReports(db: Db, agentId: string, messageId?: string): Promise<number> {
  let q = db
    .selectFrom('agentReports')
    .select((eb) => eb.fn.countAll<number>().as('n'))
    .where('agentId', '=', agentId);
  if (messageId !== undefined) q = q.where('messageId', '=', messageId);
  return Number((await q.executeTakeFirstOrThrow()).n);
}

export async function pruneReports(db: Db, before: string): Promise<number> {
  const res = await db.deleteFrom('agentReports').where('receivedAt', '<', before).executeTakeFirst();
  return Number(res.numDeletedRows);
}
