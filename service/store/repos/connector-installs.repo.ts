import type { Insertable } from 'kysely';
import type { Db } from '../sql.js';
import {
  FINAL_INSTALL_STATUSES,
  INSTALL_STATUSES,
  type AgentConnectorInstallRow,
  type AgentConnectorInstallsTable,
  type InstallStatus,
  type ManagedConnectorCustomerRow,
  type OrgConnectorRow,
  type OrgConnectorsTable,
} from '../schema.js';

// ── Connectors installed in Organizations ─────────────────────────────────────

export async function listOrgConnectors(db: Db, orgId: number): Promise<OrgConnectorRow[]> {
  return db.selectFrom('orgConnectors').selectAll().where('orgId', '=', orgId).execute();
}

export async function getOrgConnector(
  db: Db,
  orgId: number,
  connectorId: string,
): Promise<OrgConnectorRow | undefined> {
  return db
    .selectFrom('orgConnectors')
    .selectAll()
    .where('orgId', '=', orgId)
    .where('connectorId', '=', connectorId.toLowerCase())
    .executeTakeFirst();
}

/** The Organizations (of `orgIds`) that have the Connector installed. */
export async function orgsWithConnector(db: Db, connectorId: string, orgIds?: readonly number[]): Promise<number[]> {
  let q = db.selectFrom('orgConnectors').select('orgId').where('connectorId', '=', connectorId.toLowerCase());
  if (orgIds) {
    if (orgIds.length === 0) return [];
    q = q.where('orgId', 'in', [...orgIds]);
  }
  return (await q.execute()).map((r) => r.orgId);
}

/** Installs (or re-installs at `version`, keeping a lock) a Connector in an Organization. */
export async function upsertOrgConnector(db: Db, row: Insertable<OrgConnectorsTable>): Promise<void> {
  const values = { ...row, connectorId: row.connectorId.toLowerCase() };
  await db
    .insertInto('orgConnectors')
    .values(values)
    .onConflict((oc) =>
      oc.columns(['orgId', 'connectorId']).doUpdateSet({
        version: values.version,
        installedAt: values.installedAt,
        installedBy: values.installedBy ?? null,
      }),
    )
    .execute();
}

export async function updateOrgConnectorLock(
  db: Db,
  orgId: number,
  connectorId: string,
  lock: {
    isLocked: number;
    version: string;
    lockCreatedAt: string | null;
    lockModifiedAt: string;
    lockModifiedBy: string;
  },
): Promise<void> {
  await db
    .updateTable('orgConnectors')
    .set(lock)
    .where('orgId', '=', orgId)
    .where('connectorId', '=', connectorId.toLowerCase())
    .execute();
}

export async function deleteOrgConnector(db: Db, orgId: number, connectorId: string): Promise<boolean> {
  const res = await db
    .deleteFrom('orgConnectors')
    .where('orgId', '=', orgId)
    .where('connectorId', '=', connectorId.toLowerCase())
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

// ── Their installation on Agents ──────────────────────────────────────────────

export async function listAgentInstalls(
  db: Db,
  orgId: number,
  connectorId?: string,
): Promise<AgentConnectorInstallRow[]> {
  let q = db.selectFrom('agentConnectorInstalls').selectAll().where('orgId', '=', orgId);
  if (connectorId !== undefined) q = q.where('connectorId', '=', connectorId.toLowerCase());
  return q.orderBy('agentId').execute();
}

export async function listInstallsOfAgent(db: Db, agentId: string): Promise<AgentConnectorInstallRow[]> {
  return db.selectFrom('agentConnectorInstalls').selectAll().where('agentId', '=', agentId).execute();
}

/** Records a new install or uninstall request for an Agent (replacing the previous one). */
export async function putAgentInstall(db: Db, row: AgentConnectorInstallsTable): Promise<void> {
  const values = { ...row, connectorId: row.connectorId.toLowerCase() };
  await db
    .insertInto('agentConnectorInstalls')
    .values(values)
    .onConflict((oc) =>
      oc.columns(['agentId', 'connectorId']).doUpdateSet({
        operation: values.operation,
        version: values.version,
        status: values.status,
        error: values.error,
        requestedAt: values.requestedAt,
        updatedAt: values.updatedAt,
      }),
    )
    .execute();
}

/**
 * Moves an Agent's install of `version` forward to `status`: never back (a late acknowledgement
 * after the first progress report), never out of an ended install (a late report of an install
 * that timed out, or of an older request). Returns whether it moved.
 */
export async function advanceAgentInstall(
  db: Db,
  agentId: string,
  connectorId: string,
  version: string,
  status: InstallStatus,
  error: string | null,
  at: string,
): Promise<boolean> {
  const res = await db
    .updateTable('agentConnectorInstalls')
    .set({ status, error, updatedAt: at })
    .where('agentId', '=', agentId)
    .where('connectorId', '=', connectorId.toLowerCase())
    .where('version', '=', version)
    .where('status', 'in', movableFrom(status))
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}

function movableFrom(to: InstallStatus): InstallStatus[] {
  const open = INSTALL_STATUSES.filter((s) => !FINAL_INSTALL_STATUSES.includes(s));
  return FINAL_INSTALL_STATUSES.includes(to) ? open : open.slice(0, Math.max(0, open.indexOf(to)));
}

export async function deleteAgentInstall(db: Db, agentId: string, connectorId: string): Promise<void> {
  await db
    .deleteFrom('agentConnectorInstalls')
    .where('agentId', '=', agentId)
    .where('connectorId', '=', connectorId.toLowerCase())
    .execute();
}

/** Marks every unfinished install requested before `before` InstallTimedOut; returns how many. */
export async function timeOutInstalls(db: Db, before: string, at: string): Promise<number> {
  const res = await db
    .updateTable('agentConnectorInstalls')
    .set({ status: 'InstallTimedOut', error: 'The Agent did not finish the installation in time.', updatedAt: at })
    .where('status', 'not in', [...FINAL_INSTALL_STATUSES])
    .where('requestedAt', '<', before)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

// ── Managed Connectors ────────────────────────────────────────────────────────

export async function managedConnectorVendor(db: Db, connectorId: string): Promise<number | undefined> {
  const row = await db
    .selectFrom('managedConnectors')
    .select('vendorOrgId')
    .where('connectorId', '=', connectorId.toLowerCase())
    .executeTakeFirst();
  return row?.vendorOrgId;
}

export async function setManagedConnectorVendor(
  db: Db,
  connectorId: string,
  vendorOrgId: number,
  at: string,
): Promise<void> {
  const id = connectorId.toLowerCase();
  await db
    .insertInto('managedConnectors')
    .values({ connectorId: id, vendorOrgId, assignedAt: at })
    .onConflict((oc) => oc.column('connectorId').doUpdateSet({ vendorOrgId, assignedAt: at }))
    .execute();
}

export async function listCustomers(
  db: Db,
  connectorId: string,
): Promise<Array<ManagedConnectorCustomerRow & { orgName: string }>> {
  return db
    .selectFrom('managedConnectorCustomers as c')
    .innerJoin('orgs as o', 'o.id', 'c.orgId')
    .select(['c.connectorId', 'c.orgId', 'c.provisionedBy', 'c.provisionedDate', 'o.name as orgName'])
    .where('c.connectorId', '=', connectorId.toLowerCase())
    .orderBy('c.orgId')
    .execute();
}

export async function hasCustomerAccess(db: Db, connectorId: string, orgId: number): Promise<boolean> {
  const row = await db
    .selectFrom('managedConnectorCustomers')
    .select('orgId')
    .where('connectorId', '=', connectorId.toLowerCase())
    .where('orgId', '=', orgId)
    .executeTakeFirst();
  return row !== undefined;
}

/** The Managed Connectors granted to `orgId`. */
export async function grantedConnectors(db: Db, orgId: number): Promise<string[]> {
  return (
    await db.selectFrom('managedConnectorCustomers').select('connectorId').where('orgId', '=', orgId).execute()
  ).map((r) => r.connectorId);
}

export async function addCustomer(db: Db, row: ManagedConnectorCustomerRow): Promise<void> {
  await db
    .insertInto('managedConnectorCustomers')
    .values({ ...row, connectorId: row.connectorId.toLowerCase() })
    .onConflict((oc) => oc.columns(['connectorId', 'orgId']).doNothing())
    .execute();
}

export async function removeCustomer(db: Db, connectorId: string, orgId: number): Promise<boolean> {
  const res = await db
    .deleteFrom('managedConnectorCustomers')
    .where('connectorId', '=', connectorId.toLowerCase())
    .where('orgId', '=', orgId)
    .executeTakeFirst();
  return Number(res.numDeletedRows) > 0;
}

/** The ids of the Managed Connectors whose vendor is the Organization. */
export async function connectorsManagedBy(db: Db, vendorOrgId: number): Promise<string[]> {
  const rows = await db
    .selectFrom('managedConnectors')
    .select('connectorId')
    .where('vendorOrgId', '=', vendorOrgId)
    .orderBy('connectorId')
    .execute();
  return rows.map((r) => r.connectorId);
}
