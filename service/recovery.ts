/**
 * An operator's way back in, on the Service's machine, talking to the store directly (as
 * `ferry service create-org` does): when no Security Rule lets any address reach the API (a wrong
 * FERRY_BOOTSTRAP_ALLOW is applied once, at the first start), or when nobody knows an
 * administrator's password (a generated one is shown only once).
 */
import { randomBytes } from 'node:crypto';
import { parseAllowList } from './auth/ip-range.js';
import { hashPassword } from './auth/password.js';
import type { ServiceConfig } from './config.js';
import { preinstalledConnectors } from './marketplace/catalogue.js';
import { addSecurityRule } from './orgs/security-rules.js';
import { getOrg } from './store/repos/orgs.repo.js';
import { getUserByEmail, updateUser } from './store/repos/users.repo.js';
import type { SecurityRuleRow } from './store/schema.js';
import { openStore, type Store } from './store/store.js';
import { nowIso } from './util/values.js';

/** Bounds of a password, as the API's (service/http/schemas/user.schema.ts). */
export const PASSWORD_MIN = 8;
export const PASSWORD_MAX = 1024;

async function withStore<T>(config: ServiceConfig, work: (store: Store) => Promise<T>): Promise<T> {
  const store = await openStore({
    databaseUrl: config.databaseUrl,
    dataDir: config.dataDir,
    preinstalledConnectors: preinstalledConnectors(),
  });
  try {
    return await work(store);
  } finally {
    await store.close();
  }
}

/**
 * Adds a Security Rule with API and event access to the Organization for each range (an address,
 * `start-end` or a CIDR). A running Service sees the rules on its next request.
 */
export async function allowRanges(
  config: ServiceConfig,
  orgId: number,
  ranges: readonly string[],
): Promise<SecurityRuleRow[]> {
  const parsed = ranges.flatMap((r) => parseAllowList(r));
  if (parsed.length === 0) throw new Error('Give at least one address, range (start-end) or CIDR');
  return withStore(config, async (store) => {
    if (!(await getOrg(store.db, orgId))) throw new Error(`Organization ${orgId} does not exist`);
    const added: SecurityRuleRow[] = [];
    for (const r of parsed) {
      const name = r.start === r.end ? `Operator ${r.start}` : `Operator ${r.start}-${r.end}`;
      added.push(
        await addSecurityRule(store.db, orgId, {
          name: name.slice(0, 100),
          allowedIpRangeStartAddress: r.start,
          allowedIpRangeEndAddress: r.end,
          apiAccessEnabled: true,
          eventSolutionAccessEnabled: true,
        }),
      );
    }
    return added;
  });
}

/** A new random password: 24 characters of base64url. */
export const generatePassword = (): string => randomBytes(18).toString('base64url');

/** Sets the password of the user with this email (any letter case); the old one stops working at once. */
export async function setPassword(config: ServiceConfig, email: string, password: string): Promise<{ email: string }> {
  if (password.length < PASSWORD_MIN || password.length > PASSWORD_MAX) {
    throw new Error(`A password has ${PASSWORD_MIN} to ${PASSWORD_MAX} characters`);
  }
  // HTTP Basic refuses such a login before looking at the account (service/auth/basic-credentials.ts).
  if (password.includes('\u0000')) throw new Error('A password cannot contain the NUL character (U+0000)');
  return withStore(config, async (store) => {
    const user = await getUserByEmail(store.db, email);
    if (!user) throw new Error(`No user has the email ${email}`);
    await updateUser(store.db, user.id, { passwordHash: await hashPassword(password), modifiedAt: nowIso() });
    return { email: user.email };
  });
}
