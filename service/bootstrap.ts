import { randomBytes } from 'node:crypto';
import { parseAllowList } from './auth/ip-range.js';
import { hashPassword } from './auth/password.js';
import type { ServiceConfig } from './config.js';
import { SecretBox } from './crypto/master-key.js';
import { checkDataCenter } from './orgs/data-centers.js';
import { createOrganization } from './orgs/organizations.js';
import { preinstalledConnectors } from './marketplace/catalogue.js';
import { getUserByEmail, insertUser, newUserRow } from './store/repos/users.repo.js';
import { openStore, type Store } from './store/store.js';
import { newId, nowIso } from './util/values.js';

export interface BootstrapResult {
  /** True on the first start, when the root Organization was created. */
  created: boolean;
  orgId: number;
  adminEmail: string;
  /** The generated password, only on the start that generated it. */
  generatedPassword?: string;
}

export interface RootOrganization {
  name: string;
  adminEmail: string;
  /** Absent: generated (for a new account) and returned once. */
  adminPassword?: string | undefined;
  platformHosted: boolean;
  dataCenterId?: number | undefined;
  /** Ranges of the Security Rules, as FERRY_BOOTSTRAP_ALLOW writes them. */
  allow: string;
}

/** The secret box of the configuration: FERRY_MASTER_KEY, or the key file in the data dir. */
export function secretsFor(config: ServiceConfig): SecretBox {
  return config.masterKey
    ? new SecretBox(Buffer.from(config.masterKey, 'base64'))
    : SecretBox.fromDataDir(config.dataDir);
}

/**
 * Adds a root Organization with its administrator (an existing account keeps its password) and a
 * Security Rule with API and event access for each range.
 */
export async function addRootOrganization(
  store: Store,
  secrets: SecretBox,
  input: RootOrganization,
): Promise<{ orgId: number; generatedPassword?: string }> {
  const ranges = parseAllowList(input.allow);
  const dataCenterId = checkDataCenter(input.dataCenterId, input.platformHosted);
  const existing = await getUserByEmail(store.db, input.adminEmail);
  const generatedPassword = existing || input.adminPassword ? undefined : randomBytes(18).toString('base64url');
  const passwordHash = existing ? null : await hashPassword(input.adminPassword ?? (generatedPassword as string));
  const org = await store.db.transaction().execute(async (tx) => {
    const now = nowIso();
    const admin =
      existing ??
      (await insertUser(
        tx,
        newUserRow(
          { email: input.adminEmail, firstName: 'Ferry', lastName: 'Administrator', passwordHash, isApproved: true },
          now,
        ),
      ));
    return createOrganization({ secrets }, tx, {
      name: input.name,
      parentId: null,
      isSvcOrg: input.platformHosted,
      dataCenterId,
      capture: {},
      rules: ranges.map((r, i) => ({
        id: newId(),
        name: ranges.length === 1 ? 'Bootstrap' : `Bootstrap ${i + 1}`,
        allowedIpRangeStartAddress: r.start,
        allowedIpRangeEndAddress: r.end,
        apiAccessEnabled: 1,
        eventSolutionAccessEnabled: 1,
      })),
      administrator: admin,
      modificationBy: admin.email,
    });
  });
  return { orgId: org.id, ...(generatedPassword ? { generatedPassword } : {}) };
}

/**
 * On the first start, creates the root Organization, its administrator and a Security Rule for
 * each range of FERRY_BOOTSTRAP_ALLOW. Later starts change nothing.
 */
export async function bootstrap(store: Store, secrets: SecretBox, config: ServiceConfig): Promise<BootstrapResult> {
  const existing = await store.db
    .selectFrom('orgs')
    .select('id')
    .where('parentId', 'is', null)
    .orderBy('id')
    .executeTakeFirst();
  if (existing) return { created: false, orgId: existing.id, adminEmail: config.adminEmail };
  const result = await addRootOrganization(store, secrets, {
    name: config.bootstrapOrgName,
    adminEmail: config.adminEmail,
    adminPassword: config.adminPassword,
    platformHosted: false,
    allow: config.bootstrapAllow,
  });
  return { created: true, adminEmail: config.adminEmail, ...result };
}

/** Opens the configured store, adds a root Organization, closes the store. */
export async function createRootOrganization(
  config: ServiceConfig,
  input: RootOrganization,
): Promise<{ orgId: number; generatedPassword?: string }> {
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    preinstalledConnectors: preinstalledConnectors(),
  });
  try {
    return await addRootOrganization(store, secretsFor(config), input);
  } finally {
    await store.close();
  }
}
