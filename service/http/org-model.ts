import { preinstalledConnectors } from '../marketplace/catalogue.js';
import { upsertOrgConnector } from '../store/repos/connector-installs.repo.js';
import { FerryError, type FieldError } from '../../src/errors/ferry-error.js';
import { validateRange } from '../auth/ip-range.js';
import type { Db } from '../store/sql.js';
import { insertOrg } from '../store/repos/orgs.repo.js';
import { listRules, replaceRules, type SecurityRuleInput as RuleRow } from '../store/repos/security-rules.repo.js';
import { createDefaultSubscriptions } from '../store/repos/subscriptions.repo.js';
import { addMembership, listMembers } from '../store/repos/users.repo.js';
import type { OrgRow, OrgUpdate, RoleType, SecurityRuleRow, UserRow } from '../store/schema.js';
import { fromFlag, newId, toFlag } from '../util/values.js';
import type { ServiceDeps } from './deps.js';
import { DATA_CENTERS, DEFAULT_DATA_CENTER, type Organization, type OrganizationInput, type SecurityRule, type SecurityRuleInput } from './schemas/org.schema.js';

export function toSecurityRule(r: SecurityRuleRow): SecurityRule {
  return {
    id: r.id,
    name: r.name,
    allowedIpRangeStartAddress: r.allowedIpRangeStartAddress,
    allowedIpRangeEndAddress: r.allowedIpRangeEndAddress,
    apiAccessEnabled: fromFlag(r.apiAccessEnabled),
    eventSolutionAccessEnabled: fromFlag(r.eventSolutionAccessEnabled),
  };
}

/** Checks rules as submitted: valid ranges of one family, start not after end, no repeated IDs. */
export function checkRules(rules: SecurityRuleInput[], base: string): RuleRow[] {
  const errors: FieldError[] = [];
  const ids = new Set<string>();
  rules.forEach((r, i) => {
    errors.push(...validateRange(r.allowedIpRangeStartAddress, r.allowedIpRangeEndAddress, `${base}${i}.`));
    if (r.id) {
      const key = r.id.toLowerCase();
      if (ids.has(key)) errors.push({ path: `${base}${i}.id`, message: `the rule ID ${r.id} appears more than once` });
      ids.add(key);
    }
  });
  if (errors.length) {
    throw new FerryError('API_INVALID_IP_RANGE', `The Security Rules are not valid: ${errors[0]?.path}: ${errors[0]?.message}`, { errors });
  }
  return rules.map((r) => ({
    id: r.id?.toLowerCase() ?? newId(),
    name: r.name,
    allowedIpRangeStartAddress: r.allowedIpRangeStartAddress,
    allowedIpRangeEndAddress: r.allowedIpRangeEndAddress,
    apiAccessEnabled: toFlag(r.apiAccessEnabled),
    eventSolutionAccessEnabled: toFlag(r.eventSolutionAccessEnabled),
  }));
}

type CaptureInput = Pick<OrganizationInput, 'captureOnFailedRecordsForReprocessing' | 'captureDuringCloudAppRuns' | 'captureDuringLocalAgentAppRuns' | 'isSourceDataLocal'>;

/**
 * SPEC.md's capture rule 2: a model that carries any capture field carries all three. Returns the
 * columns to store (isSourceDataLocal is stored as sent; rules 1 and 3 apply when it is read).
 */
export function capturePatch(input: CaptureInput, base = 'body.'): OrgUpdate {
  const three = [input.captureOnFailedRecordsForReprocessing, input.captureDuringCloudAppRuns, input.captureDuringLocalAgentAppRuns];
  const given = three.filter((v) => v !== undefined).length;
  if (given > 0 && given < 3) {
    throw new FerryError('API_VALIDATION', 'When any capture field is sent, send all three: captureOnFailedRecordsForReprocessing, captureDuringCloudAppRuns and captureDuringLocalAgentAppRuns.', {
      errors: (['captureOnFailedRecordsForReprocessing', 'captureDuringCloudAppRuns', 'captureDuringLocalAgentAppRuns'] as const)
        .filter((k) => input[k] === undefined)
        .map((k) => ({ path: `${base}${k}`, message: 'required when any capture field is sent' })),
    });
  }
  const patch: OrgUpdate = {};
  if (given === 3) {
    patch.captureOnFailedRecordsForReprocessing = toFlag(input.captureOnFailedRecordsForReprocessing === true);
    patch.captureDuringCloudAppRuns = toFlag(input.captureDuringCloudAppRuns === true);
    patch.captureDuringLocalAgentAppRuns = toFlag(input.captureDuringLocalAgentAppRuns === true);
  }
  if (input.isSourceDataLocal !== undefined) patch.isSourceDataLocal = toFlag(input.isSourceDataLocal);
  return patch;
}

/** Where failed source records go for a run, after SPEC.md's capture rules 1 and 3. */
export function captureFor(org: OrgRow, cloudAgent: boolean): { capture: boolean; local: boolean } {
  if (!fromFlag(org.captureOnFailedRecordsForReprocessing)) return { capture: false, local: false };
  if (cloudAgent) return { capture: fromFlag(org.captureDuringCloudAppRuns), local: false };
  const capture = fromFlag(org.captureDuringLocalAgentAppRuns);
  return { capture, local: capture && fromFlag(org.isSourceDataLocal) };
}

export function checkDataCenter(id: number | null | undefined, platformHosted: boolean): number {
  if (id === undefined || id === null || id === 0) return DEFAULT_DATA_CENTER;
  const dc = DATA_CENTERS[id];
  if (!dc) {
    throw new FerryError('API_VALIDATION', `dataCenterId ${id} is not a data center; use one of ${Object.keys(DATA_CENTERS).join(', ')}.`, {
      errors: [{ path: 'body.dataCenterId', message: 'unknown data center' }],
    });
  }
  if (dc.platformOnly && !platformHosted) {
    throw new FerryError('API_VALIDATION', `dataCenterId ${id} exists only for platform-hosted Organizations.`, {
      errors: [{ path: 'body.dataCenterId', message: 'only for platform-hosted Organizations' }],
    });
  }
  return id;
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
export async function createOrganization(deps: Pick<ServiceDeps, 'secrets'>, tx: Db, input: NewOrganization): Promise<OrgRow> {
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
  for (const c of preinstalledConnectors()) await upsertOrgConnector(tx, { orgId: row.id, connectorId: c.id, version: c.version, isLocked: 0, installedAt: iso, installedBy: null });
  return row;
}

/** The API model of an Organization. The crypto token is shown to Administrators only. */
export async function toOrganization(
  deps: Pick<ServiceDeps, 'secrets'>,
  db: Db,
  org: OrgRow,
  role: RoleType,
  status?: { status: Organization['status']; statusCause: string | null },
): Promise<Organization> {
  const [rules, members] = await Promise.all([listRules(db, org.id), listMembers(db, org.id)]);
  const dc = DATA_CENTERS[org.dataCenterId] ?? { name: 'Unknown', location: 'Unknown' };
  return {
    id: org.id,
    name: org.name,
    parentId: org.parentId ?? 0,
    administrators: members
      .filter((m) => m.roleType === 'Administrator')
      .map((m) => ({ email: m.email, firstName: m.firstName, lastName: m.lastName })),
    city: org.city,
    country: org.country,
    dataCenterId: org.dataCenterId,
    dataCenterName: dc.name,
    dataCenterLocation: dc.location,
    isSvcOrg: fromFlag(org.isSvcOrg),
    apiToken: role === 'Administrator' ? deps.secrets.open(org.apiCryptoToken) : null,
    securityRules: rules.map(toSecurityRule),
    captureOnFailedRecordsForReprocessing: fromFlag(org.captureOnFailedRecordsForReprocessing),
    captureDuringCloudAppRuns: fromFlag(org.captureDuringCloudAppRuns),
    captureDuringLocalAgentAppRuns: fromFlag(org.captureDuringLocalAgentAppRuns),
    isSourceDataLocal: fromFlag(org.isSourceDataLocal),
    isAgentLogDownloadAllowed: fromFlag(org.isAgentLogDownloadAllowed),
    ...(status ?? {}),
  };
}

export function refusePlatformHosted(org: OrgRow, what: string): void {
  if (fromFlag(org.isSvcOrg)) {
    throw new FerryError('API_PLATFORM_HOSTED', `${what} is not supported for platform-hosted Organizations; use the platform's user and Organization management.`);
  }
}
