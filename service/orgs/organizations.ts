import type { Kysely } from 'kysely';
import { FerryError } from '../../src/errors/ferry-error.js';
import type { SecretBox } from '../crypto/master-key.js';
import { preinstalledConnectors } from '../marketplace/catalogue.js';
import { listAgents } from '../store/repos/agents.repo.js';
import { upsertOrgConnector } from '../store/repos/connector-installs.repo.js';
import {
  countChildren,
  deleteOrg,
  getOrg,
  insertOrg,
  listOrgsForUser,
  roleIn,
  updateOrg,
} from '../store/repos/orgs.repo.js';
import { listRules, replaceRules, type SecurityRuleInput as RuleRow } from '../store/repos/security-rules.repo.js';
import { deleteSolutionsOfOrg } from '../store/repos/solutions.repo.js';
import { createDefaultSubscriptions } from '../store/repos/subscriptions.repo.js';
import { addMembership, listMembers, type MemberRow } from '../store/repos/users.repo.js';
import type { AgentRow, Database, OrgRow, OrgUpdate, RoleType, SecurityRuleRow, UserRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { fromFlag, newId, nowIso, toFlag } from '../util/values.js';
import { capturePatch, type CaptureSwitches } from './capture.js';
import { checkDataCenter } from './data-centers.js';
import { apiOpenTo, checkRules, opensApiTo, type SecurityRuleSpec } from './security-rules.js';
import { orgStatus, type OrgHealth, type OrgStatus } from './status.js';

/** What Organization operations need besides the store: the box that seals their tokens. */
export interface OrgSecrets {
  readonly secrets: SecretBox;
}

/** The fields of an Organization a client sends on create and modify; the rest it may send is ignored. */
export interface OrganizationFields extends CaptureSwitches {
  name?: string | undefined;
  parentId?: number | null | undefined;
  city?: string | null | undefined;
  country?: string | null | undefined;
  dataCenterId?: number | null | undefined;
  securityRules?: readonly SecurityRuleSpec[] | undefined;
}

export const orgNotFound = (id: number): FerryError =>
  new FerryError('API_NOT_FOUND', `Organization ${id} was not found.`);

/** Refuses `what` (a sentence's subject) for a platform-hosted Organization, whose users and Organizations the platform manages. */
export function refusePlatformHosted(org: OrgRow, what: string): void {
  if (fromFlag(org.isSvcOrg)) {
    throw new FerryError(
      'API_PLATFORM_HOSTED',
      `${what} is not supported for platform-hosted Organizations; use the platform's user and Organization management.`,
    );
  }
}

/** The Organization as stored now; 404 when it is gone. */
export async function organizationOf(db: Db, id: number): Promise<OrgRow> {
  const org = await getOrg(db, id);
  if (!org) throw orgNotFound(id);
  return org;
}

/** An Organization with what its model shows beside its own record. */
export interface OrganizationView {
  org: OrgRow;
  securityRules: SecurityRuleRow[];
  /** Its members with the Administrator role. */
  administrators: MemberRow[];
}

/** The Organization with its Security Rules and Administrators. */
export async function organizationView(db: Db, org: OrgRow): Promise<OrganizationView> {
  const [securityRules, members] = await Promise.all([listRules(db, org.id), listMembers(db, org.id)]);
  return { org, securityRules, administrators: members.filter((m) => m.roleType === 'Administrator') };
}

export interface OrganizationListQuery {
  name?: string | undefined;
  nameContains?: string | undefined;
  /** 0: root Organizations only. */
  parentId?: number | undefined;
  /** Only the Organizations whose Security Rules open the API to the caller's address. */
  onlyOpen: boolean;
  status: OrgHealth | 'All';
  /** Absent: every match. */
  page?: { limit: number; offset: number } | undefined;
}

export interface ListedOrganization {
  org: OrgRow;
  /** The caller's role there (ReadOnly when only visible). */
  role: RoleType;
  /** Whether its Security Rules open its API to the caller's address. */
  open: boolean;
  status: OrgStatus;
}

/**
 * The Organizations a user can see, filtered; `total` counts the matches before the page is cut.
 * Whether each opens its API to `ip` filters the list on request and is answered always, since it
 * decides whether the crypto token may be shown.
 */
export async function listOrganizations(
  db: Db,
  userId: string,
  ip: string,
  query: OrganizationListQuery,
): Promise<{ items: ListedOrganization[]; total: number }> {
  const rows = await listOrgsForUser(db, userId, {
    name: query.name,
    nameContains: query.nameContains,
    parentId: query.parentId,
  });
  const open = await Promise.all(rows.map((o) => apiOpenTo(db, o.id, ip)));
  const statuses = await Promise.all(rows.map((o) => orgStatus(db, o)));
  const matches = rows
    .map((org, i) => ({
      org,
      open: open[i] === true,
      status: statuses[i] ?? { status: 'Ok' as const, statusCause: null },
    }))
    .filter((o) => !query.onlyOpen || o.open)
    .filter((o) => query.status === 'All' || o.status.status === query.status);
  const page = query.page ? matches.slice(query.page.offset, query.page.offset + query.page.limit) : matches;
  const items = await Promise.all(
    page.map(async (o) => ({ ...o, role: (await roleIn(db, userId, o.org.id)) ?? 'ReadOnly' })),
  );
  return { items, total: matches.length };
}

export interface NewOrganization {
  name: string;
  parentId: number | null;
  isSvcOrg: boolean;
  dataCenterId: number;
  city?: string | null | undefined;
  country?: string | null | undefined;
  capture: OrgUpdate;
  rules: RuleRow[];
  administrator: UserRow;
  modificationBy: string;
}

/** Creates an Organization with its rules, its first Administrator and its Subscriptions. */
export async function createOrganization(deps: OrgSecrets, tx: Db, input: NewOrganization): Promise<OrgRow> {
  const now = new Date();
  const iso = now.toISOString();
  const row = await insertOrg(tx, {
    name: input.name,
    parentId: input.parentId,
    tenantId: newId(),
    city: input.city ?? null,
    country: input.country ?? null,
    dataCenterId: input.dataCenterId,
    isSvcOrg: toFlag(input.isSvcOrg),
    apiCryptoToken: deps.secrets.seal(newId()),
    eventSolutionAccessToken: deps.secrets.seal(newId()),
    captureOnFailedRecordsForReprocessing: 1,
    captureDuringCloudAppRuns: 1,
    captureDuringLocalAgentAppRuns: 1,
    isSourceDataLocal: 1,
    isAgentLogDownloadAllowed: 1,
    createdAt: iso,
    modifiedAt: iso,
    modificationBy: input.modificationBy,
    ...input.capture,
  });
  await replaceRules(tx, row.id, input.rules, iso);
  await addMembership(tx, row.id, input.administrator.id, 'Administrator', iso);
  await createDefaultSubscriptions(tx, row.id, now);
  for (const c of preinstalledConnectors())
    await upsertOrgConnector(tx, {
      orgId: row.id,
      connectorId: c.id,
      version: c.version,
      isLocked: 0,
      installedAt: iso,
      installedBy: null,
    });
  return row;
}

/** A child Organization asked for, with its parent found: {@link createChildOrganization} creates it. */
export interface ChildOrganizationRequest {
  parent: OrgRow;
  name: string;
  securityRules: readonly SecurityRuleSpec[];
  fields: OrganizationFields;
}

/**
 * The first step of creating a child Organization: the model has a name and Security Rules, and
 * its parent is the one named (the caller administers it) or the only root Organization the
 * caller administers; a platform-hosted parent is refused.
 */
export async function requestChildOrganization(
  db: Db,
  userId: string,
  fields: OrganizationFields,
): Promise<ChildOrganizationRequest> {
  if (!fields.name)
    throw new FerryError('API_VALIDATION', 'name is required.', {
      errors: [{ path: 'body.name', message: 'required' }],
    });
  if (!fields.securityRules) {
    throw new FerryError('API_VALIDATION', 'A child Organization needs securityRules in its model.', {
      errors: [{ path: 'body.securityRules', message: 'required' }],
    });
  }
  const parent = await parentFor(db, userId, fields.parentId);
  refusePlatformHosted(parent, 'Creating an Organization');
  return { parent, name: fields.name, securityRules: fields.securityRules, fields };
}

/** The parent of a new child: the one named, or the only Organization the caller administers. */
async function parentFor(db: Db, userId: string, parentId: number | null | undefined): Promise<OrgRow> {
  if (parentId) {
    const parent = await getOrg(db, parentId);
    const role = parent ? await roleIn(db, userId, parent.id) : undefined;
    if (!parent || !role) throw orgNotFound(parentId);
    if (role !== 'Administrator')
      throw new FerryError(
        'API_FORBIDDEN_ROLE',
        `Creating a child Organization needs the Administrator role in Organization ${parentId}.`,
      );
    return parent;
  }
  const administered = (await listOrgsForUser(db, userId, {})).filter((o) => o.parentId === null);
  const own = [];
  for (const o of administered) if ((await roleIn(db, userId, o.id)) === 'Administrator') own.push(o);
  if (own.length === 1 && own[0]) return own[0];
  throw new FerryError('API_VALIDATION', 'Name the parent Organization with parentId.', {
    errors: [{ path: 'body.parentId', message: 'required' }],
  });
}

/** Creates the child Organization of a request, with the creator as its Administrator. */
export async function createChildOrganization(
  deps: OrgSecrets,
  db: Kysely<Database>,
  request: ChildOrganizationRequest,
  by: { administrator: UserRow; modificationBy: string },
): Promise<OrgRow> {
  const { fields } = request;
  const rules = checkRules(request.securityRules, 'body.securityRules.');
  const dataCenterId = checkDataCenter(fields.dataCenterId, false);
  const capture = capturePatch(fields);
  return db.transaction().execute(async (tx) =>
    createOrganization(deps, tx, {
      name: request.name,
      parentId: request.parent.id,
      isSvcOrg: false,
      dataCenterId,
      city: fields.city,
      country: fields.country,
      capture,
      rules,
      administrator: by.administrator,
      modificationBy: by.modificationBy,
    }),
  );
}

/**
 * Modifies an Organization: name, place, capture switches and (all at once) its Security Rules.
 * Its data center and parent stay; new rules must still open the API to `callerIp`.
 */
export async function modifyOrganization(
  db: Kysely<Database>,
  org: OrgRow,
  fields: OrganizationFields,
  callerIp: string,
  modificationBy: string,
): Promise<OrgRow> {
  refusePlatformHosted(org, 'Modifying an Organization');
  if (
    fields.dataCenterId !== undefined &&
    fields.dataCenterId !== null &&
    fields.dataCenterId !== 0 &&
    fields.dataCenterId !== org.dataCenterId
  ) {
    throw new FerryError(
      'API_VALIDATION',
      'dataCenterId is set when the Organization is created and cannot be changed.',
      {
        errors: [{ path: 'body.dataCenterId', message: `must stay ${org.dataCenterId}` }],
      },
    );
  }
  if (fields.parentId !== undefined && fields.parentId !== null && fields.parentId !== (org.parentId ?? 0)) {
    throw new FerryError('API_VALIDATION', 'parentId cannot be changed.', {
      errors: [{ path: 'body.parentId', message: `must stay ${org.parentId ?? 0}` }],
    });
  }
  const rules = fields.securityRules ? checkRules(fields.securityRules, 'body.securityRules.') : undefined;
  if (rules && !opensApiTo(rules, callerIp)) {
    throw new FerryError(
      'API_CONFLICT',
      `These Security Rules would shut your own address ${callerIp} out of the API; include a rule with apiAccessEnabled that covers it.`,
    );
  }
  const patch = {
    ...capturePatch(fields),
    ...(fields.name !== undefined ? { name: fields.name } : {}),
    ...(fields.city !== undefined ? { city: fields.city } : {}),
    ...(fields.country !== undefined ? { country: fields.country } : {}),
    modifiedAt: nowIso(),
    modificationBy,
  };
  await db.transaction().execute(async (tx) => {
    await updateOrg(tx, org.id, patch);
    if (rules) await replaceRules(tx, org.id, rules, nowIso());
  });
  return organizationOf(db, org.id);
}

/**
 * Deletes a child Organization that has no children. Its Agents go first, each through `retire`
 * (processes and files included): the database cascade alone would leave a Cloud Agent running
 * and On-Premise Agents connected to an Organization that no longer exists.
 */
export async function deleteOrganization(
  db: Db,
  org: OrgRow,
  retire: (agent: AgentRow) => Promise<void>,
): Promise<void> {
  refusePlatformHosted(org, 'Deleting an Organization');
  if (org.parentId === null) {
    throw new FerryError('API_UNSUPPORTED', 'Only child Organizations can be deleted.');
  }
  if ((await countChildren(db, org.id)) > 0) {
    throw new FerryError('API_IN_USE', 'The Organization has child Organizations; delete them first.');
  }
  // Solutions reference the Agents, which may not go while a Solution uses them.
  await deleteSolutionsOfOrg(db, org.id);
  for (const agent of await listAgents(db, org.id)) await retire(agent);
  await deleteOrg(db, org.id);
}
