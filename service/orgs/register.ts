import type { Kysely } from 'kysely';
import { FerryError } from '../../src/errors/ferry-error.js';
import type { ConnectorManifest } from '../../src/protocol/connector-manifest.js';
import type { ConnectorCatalogue } from '../marketplace/catalogue.js';
import type { PackageStore } from '../marketplace/package-store.js';
import { addCustomer, managedConnectorVendor, upsertOrgConnector } from '../store/repos/connector-installs.repo.js';
import { getOrg, listOrgsForUser, roleIn } from '../store/repos/orgs.repo.js';
import { ruleExists } from '../store/repos/security-rules.repo.js';
import { insertSubscription, SERVICE_TYPES, UNLIMITED, type ServiceType } from '../store/repos/subscriptions.repo.js';
import { getUser, getUserByEmail } from '../store/repos/users.repo.js';
import type { Database, OrgRow, UserRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { fromFlag, newId } from '../util/values.js';
import { checkDataCenter } from './data-centers.js';
import { createOrganization, type OrgSecrets } from './organizations.js';
import { checkRules, type SecurityRuleSpec } from './security-rules.js';

/**
 * `POST /v1/register`: an operator creates a customer Organization in one call.
 *
 *   caller ─▶ operatorOrganization: Administrator of a platform-hosted root? (else 403)
 *          ─▶ planRegistration: every field checked, nothing written yet (else 400 naming it)
 *          ─▶ registerOrganization: one transaction — the Organization (platform-hosted, a child
 *             of the operator's), its rules and Administrator, its Subscriptions, its Connectors
 *             and the customer grants of the operator's private Connectors
 */

/** The body of the call, as the route parsed it. */
export interface RegisterFields {
  orgName: string;
  dataCenterId?: number | null | undefined;
  securityRules: readonly SecurityRuleSpec[];
  /** A user ID or e-mail; absent: the caller. */
  userId?: string | undefined;
  /** Connector IDs or names. */
  connectors?: readonly string[] | undefined;
  subscriptionSkus?: readonly string[] | undefined;
}

/** What registration needs besides the store: the sealing box and the Marketplace's catalogue and packages. */
export interface RegisterDeps extends OrgSecrets {
  readonly catalogue: ConnectorCatalogue;
  readonly packages: PackageStore;
}

/** A purchased Subscription a SKU stands for. */
export interface PlannedSubscription {
  sku: string;
  type: ServiceType;
  recordsAllowed: string;
}

/** A registration with every field checked and resolved. */
export interface RegistrationPlan {
  operator: OrgRow;
  name: string;
  dataCenterId: number;
  rules: ReturnType<typeof checkRules>;
  administrator: UserRow;
  connectors: ConnectorManifest[];
  subscriptions: PlannedSubscription[];
}

const WHO_MAY =
  "POST /v1/register is for Administrators of a platform-hosted root Organization (the operator's Organization, created with `ferry service create-org --platform-hosted`)";

const invalid = (path: string, message: string, sentence: string): FerryError =>
  new FerryError('API_VALIDATION', sentence, { errors: [{ path, message }] });

/**
 * The operator Organization the caller registers a customer under: the platform-hosted root
 * Organization named by `orgId`, or the only one the caller administers. Anyone else is refused
 * with API_FORBIDDEN_ROLE; an `orgId` the caller cannot see is a 404, as everywhere.
 */
export async function operatorOrganization(db: Db, user: UserRow, orgId: number | undefined): Promise<OrgRow> {
  if (orgId !== undefined) {
    const org = await getOrg(db, orgId);
    const role = org ? await roleIn(db, user.id, org.id) : undefined;
    if (!org || !role) throw new FerryError('API_NOT_FOUND', `Organization ${orgId} was not found.`);
    if (!isOperatorOrg(org) || role !== 'Administrator') {
      throw new FerryError('API_FORBIDDEN_ROLE', `${WHO_MAY}; Organization ${orgId} is not one you administer.`);
    }
    return org;
  }
  const roots = (await listOrgsForUser(db, user.id, { parentId: 0 })).filter(isOperatorOrg);
  const own: OrgRow[] = [];
  for (const org of roots) if ((await roleIn(db, user.id, org.id)) === 'Administrator') own.push(org);
  const [only, ...others] = own;
  if (!only) throw new FerryError('API_FORBIDDEN_ROLE', `${WHO_MAY}; you administer none.`);
  if (others.length > 0) {
    throw invalid(
      'query.orgId',
      'required',
      `You administer several platform-hosted root Organizations (${own.map((o) => o.id).join(', ')}); name the one to register under with ?orgId=.`,
    );
  }
  return only;
}

function isOperatorOrg(org: OrgRow): boolean {
  return org.parentId === null && fromFlag(org.isSvcOrg);
}

/** Checks and resolves every field; writes nothing. */
export async function planRegistration(
  db: Db,
  deps: RegisterDeps,
  operator: OrgRow,
  caller: UserRow,
  fields: RegisterFields,
): Promise<RegistrationPlan> {
  if (fields.securityRules.length === 0) {
    throw invalid(
      'body.securityRules',
      'at least one rule is required',
      "securityRules needs at least one Security Rule; without one nobody could reach the new Organization's API.",
    );
  }
  const rules = checkRules(fields.securityRules, 'body.securityRules.');
  for (const r of rules)
    if (await ruleExists(db, r.id))
      throw new FerryError(
        'API_CONFLICT',
        `A Security Rule with ID ${r.id} already exists; leave id out to get a new one.`,
      );
  const dataCenterId = checkDataCenter(fields.dataCenterId, true);
  return {
    operator,
    name: fields.orgName,
    dataCenterId,
    rules,
    administrator: fields.userId === undefined ? caller : await userNamed(db, fields.userId),
    connectors: await connectorsNamed(db, deps, operator.id, fields.connectors ?? []),
    subscriptions: subscriptionsOf(fields.subscriptionSkus ?? []),
  };
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** An existing user by ID or e-mail. */
async function userNamed(db: Db, idOrEmail: string): Promise<UserRow> {
  const user = GUID.test(idOrEmail)
    ? await getUser(db, idOrEmail.toLowerCase())
    : idOrEmail.includes('@')
      ? await getUserByEmail(db, idOrEmail)
      : undefined;
  if (!user) {
    throw invalid(
      'body.userId',
      'no such user',
      `userId ${idOrEmail} is not a user: give the ID or e-mail of an existing account, who becomes the new Organization's Administrator.`,
    );
  }
  return user;
}

/**
 * The Connectors named by ID or name: public ones of the Marketplace and private ones the operator
 * Organization manages. Any other private Connector is answered as unknown, so that registering
 * does not reveal it.
 */
async function connectorsNamed(
  db: Db,
  { catalogue, packages }: RegisterDeps,
  operatorId: number,
  entries: readonly string[],
): Promise<ConnectorManifest[]> {
  const found = new Map<string, ConnectorManifest>();
  for (const [i, entry] of entries.entries()) {
    const byId = catalogue.get(entry);
    const candidates = byId ? [byId] : catalogue.all().filter((m) => m.name.toLowerCase() === entry.toLowerCase());
    const usable: ConnectorManifest[] = [];
    for (const m of candidates)
      if (m.isPublic || (await managedConnectorVendor(db, m.id)) === operatorId) usable.push(m);
    const [only, ...others] = usable;
    if (!only) {
      throw invalid(
        `body.connectors.${i}`,
        'no such Connector',
        `connectors[${i}] "${entry}" is neither a public Connector of the Marketplace nor a private Connector your Organization manages; give a Connector's ID or name.`,
      );
    }
    if (others.length > 0)
      throw invalid(
        `body.connectors.${i}`,
        'ambiguous name',
        `connectors[${i}]: several Connectors are named "${entry}"; give the ID of the one to install.`,
      );
    found.set(only.id.toLowerCase(), only);
  }
  // As an install does: a Connector whose package cannot be built is refused now, not at its first Agent.
  for (const m of found.values()) await packages.get(m.id, m.version);
  return [...found.values()];
}

/** `FERRY-<IS|RS|MS>-<records>`: a whole number of records, with K (thousands) or M (millions), or UNLIMITED. */
const SKU = /^FERRY-(IS|RS|MS)-(?:([1-9][0-9]{0,8})([KM]?)|(UNLIMITED))$/;
const MULTIPLIER: Record<string, number> = { '': 1, K: 1_000, M: 1_000_000 };

/** The Subscriptions the SKUs stand for, at most one per service type. */
export function subscriptionsOf(skus: readonly string[]): PlannedSubscription[] {
  const seen = new Set<ServiceType>();
  return skus.map((raw, i) => {
    const sku = raw.trim().toUpperCase();
    const match = SKU.exec(sku);
    const type = match?.[1] as ServiceType | undefined;
    if (!match || !type) {
      throw invalid(
        `body.subscriptionSkus.${i}`,
        'unknown SKU form',
        `subscriptionSkus[${i}] "${raw}" is not a Subscription SKU; write FERRY-<IS|RS|MS>-<records>, records being a whole number with K or M (FERRY-IS-5M) or UNLIMITED; trial Subscriptions come without a SKU.`,
      );
    }
    if (seen.has(type))
      throw invalid(
        `body.subscriptionSkus.${i}`,
        'second SKU of a service type',
        `subscriptionSkus[${i}]: ${type} is named twice; give one SKU per service type.`,
      );
    seen.add(type);
    const recordsAllowed = match[4] ? UNLIMITED : String(Number(match[2]) * (MULTIPLIER[match[3] ?? ''] ?? 1));
    return { sku, type, recordsAllowed };
  });
}

/**
 * Creates the planned Organization in one transaction: a platform-hosted child of the operator's
 * Organization with its rules, its Administrator, a trial Subscription for each service type no SKU
 * names and a one-year Subscription for each SKU, the Connectors installed, and the operator's
 * private ones granted to it as a customer.
 */
export async function registerOrganization(
  deps: RegisterDeps,
  db: Kysely<Database>,
  plan: RegistrationPlan,
  by: string,
): Promise<OrgRow> {
  return db.transaction().execute(async (tx) => {
    const org = await createOrganization(deps, tx, {
      name: plan.name,
      parentId: plan.operator.id,
      isSvcOrg: true,
      dataCenterId: plan.dataCenterId,
      capture: {},
      rules: plan.rules,
      administrator: plan.administrator,
      modificationBy: by,
    });
    const start = new Date(org.createdAt);
    const expiration = new Date(start);
    expiration.setUTCFullYear(expiration.getUTCFullYear() + 1);
    for (const s of plan.subscriptions) {
      const type = SERVICE_TYPES.find((t) => t.key === s.type);
      if (!type) continue;
      // A purchased Subscription replaces the trial of its type: two current ones would leave usage counting ambiguous.
      await tx
        .deleteFrom('subscriptions')
        .where('orgId', '=', org.id)
        .where('name', '=', type.name)
        .where('isTrial', '=', 1)
        .execute();
      await insertSubscription(tx, {
        id: newId(),
        orgId: org.id,
        name: type.name,
        description: type.description,
        startDate: start.toISOString(),
        expirationDate: expiration.toISOString(),
        isTrial: 0,
        recordsAllowed: s.recordsAllowed,
        recordsProcessed: 0,
        sku: s.sku,
        tscAccountId: null,
        tscRegion: null,
        tscSubscriptionId: null,
      });
    }
    const at = start.toISOString();
    for (const m of plan.connectors) {
      if (!m.isPublic)
        await addCustomer(tx, { connectorId: m.id, orgId: org.id, provisionedBy: by, provisionedDate: at });
      await upsertOrgConnector(tx, {
        orgId: org.id,
        connectorId: m.id,
        version: m.version,
        isLocked: 0,
        installedAt: at,
        installedBy: by,
      });
    }
    return org;
  });
}
