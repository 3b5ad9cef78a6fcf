import { randomBytes } from 'node:crypto';
import { parseAllowList } from './auth/ip-range.js';
import { hashPassword } from './auth/password.js';
import type { ServiceConfig } from './config.js';
import type { SecretBox } from './crypto/master-key.js';
import { createOrganization } from './http/org-model.js';
import { getUserByEmail, insertUser } from './store/repos/users.repo.js';
import type { Store } from './store/store.js';
import { newId, nowIso, toFlag } from './util/values.js';

export interface BootstrapResult {
  /** True on the first start, when the root Organization was created. */
  created: boolean;
  orgId: number;
  adminEmail: string;
  /** The generated password, only on the start that generated it. */
  generatedPassword?: string;
}

/**
 * On the first start, creates the root Organization, its administrator and a Security Rule for
 * each range of FERRY_BOOTSTRAP_ALLOW. Later starts change nothing.
 */
export async function bootstrap(store: Store, secrets: SecretBox, config: ServiceConfig): Promise<BootstrapResult> {
  const { db } = store;
  const existing = await db.selectFrom('orgs').select('id').where('parentId', 'is', null).orderBy('id').executeTakeFirst();
  if (existing) return { created: false, orgId: existing.id, adminEmail: config.adminEmail };

  const ranges = parseAllowList(config.bootstrapAllow);
  const generatedPassword = config.adminPassword ? undefined : randomBytes(18).toString('base64url');
  const passwordHash = await hashPassword(config.adminPassword ?? (generatedPassword as string));
  const org = await db.transaction().execute(async (tx) => {
    const now = nowIso();
    const admin =
      (await getUserByEmail(tx, config.adminEmail)) ??
      (await insertUser(tx, {
        id: newId(),
        email: config.adminEmail,
        emailKey: config.adminEmail.toLowerCase(),
        firstName: 'Ferry',
        lastName: 'Administrator',
        company: null,
        country: null,
        state: null,
        postalCode: null,
        phone: null,
        jobTitle: null,
        httpReferrer: null,
        leadSource: null,
        isApproved: toFlag(true),
        passwordHash,
        createdAt: now,
        modifiedAt: now,
      }));
    return createOrganization({ secrets }, tx, {
      name: config.bootstrapOrgName,
      parentId: null,
      isSvcOrg: false,
      dataCenterId: 1,
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
  return { created: true, orgId: org.id, adminEmail: config.adminEmail, ...(generatedPassword ? { generatedPassword } : {}) };
}
