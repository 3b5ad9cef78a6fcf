import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { FerryError } from '../../src/errors/ferry-error.js';
import {
  basicCredentials,
  MAX_LOGIN_LENGTH,
  MAX_PASSWORD_LENGTH,
  type BasicCredentials,
} from '../auth/basic-credentials.js';
import { addressKey } from '../auth/login-throttle.js';
import { hashPassword, sha256, verifyPassword } from '../auth/password.js';
import { getOrg, roleIn } from '../store/repos/orgs.repo.js';
import { apiOpenTo } from '../orgs/security-rules.js';
import { getUserByEmail } from '../store/repos/users.repo.js';
import type { OrgRow, RoleType, UserRow } from '../store/schema.js';
import type { ServiceDeps } from './deps.js';

/**
 * Who may call a route:
 * - `public`: anyone;
 * - `user`: any authenticated user (routes outside an Organization);
 * - `read`, `write`, `admin`: a member of the path's Organization with at least Read-only, User or
 *   Administrator rights, calling from an address a Security Rule opens to the API.
 */
export type Access = 'public' | 'user' | 'read' | 'write' | 'admin';

declare module 'fastify' {
  interface FastifyContextConfig {
    access?: Access;
  }
  interface FastifyRequest {
    ferryUser: UserRow | undefined;
    ferryOrg: OrgRow | undefined;
    ferryRole: RoleType | undefined;
  }
}

const RANK: Record<RoleType, number> = { ReadOnly: 1, User: 2, Administrator: 3 };
const NEEDED: Record<'read' | 'write' | 'admin', number> = { read: 1, write: 2, admin: 3 };

/** Verified (user, password, hash) triples, so Basic auth costs one scrypt per credential, not per request. */
class CredentialCache {
  readonly #seen = new Set<string>();
  has(key: string): boolean {
    return this.#seen.has(key);
  }
  add(key: string): void {
    if (this.#seen.size >= 10_000) this.#seen.clear();
    this.#seen.add(key);
  }
}

/**
 * The verifications running in this process, by a keyed hash of what each verifies, so that parallel
 * attempts with the same credentials share one: counted once by the throttle, hashed once, one
 * answer for all (service/auth/login-throttle.ts, the diagram). The key is an HMAC under a random
 * per-process key, so no password sits in the map in clear; an entry lives only while its
 * verification runs.
 */
class Verifications {
  readonly #secret = randomBytes(32);
  readonly #running = new Map<string, Promise<boolean>>();

  /** The key of one verification; the parts hold no NUL (credentials with one are never verified). */
  key(...parts: Array<string | number>): string {
    return createHmac('sha256', this.#secret).update(parts.join('\0')).digest('base64');
  }

  /**
   * Whether the credentials under `key` are right: the answer of the verification already running
   * under it (`shared`), or of `verify`, run now (it starts after the entry is made, and the entry
   * is removed once it has settled, whether it answered or threw).
   */
  once(key: string, verify: () => Promise<boolean>): { right: Promise<boolean>; shared: boolean } {
    const running = this.#running.get(key);
    if (running) return { right: running, shared: true };
    const right = Promise.resolve()
      .then(verify)
      .finally(() => this.#running.delete(key));
    this.#running.set(key, right);
    return { right, shared: false };
  }
}

/** Verified against when the email is unknown, so that a miss costs what a wrong password costs. */
let dummyHash: Promise<string> | undefined;

const unauthenticated = (): FerryError =>
  new FerryError('API_UNAUTHENTICATED', 'Send your email and password with HTTP Basic authentication.');

/** One text for an unknown login and a wrong password, so the answer does not tell which accounts exist. */
const refused = (): FerryError =>
  new FerryError(
    'API_UNAUTHENTICATED',
    "The email and password were refused: check both (the login name is the email address). An operator can set a new password with `ferry service set-password --email EMAIL` on the Service's machine.",
  );

/** Checks a login and password as Basic authentication does (the login throttle included); answers the user. */
export type PasswordLogin = (email: string, password: string, ip: string) => Promise<UserRow>;

/**
 * Registers the guard. `sessionUser` is a second credential (the web console's session cookie):
 * the user it answers goes through the same checks as one authenticated with Basic; a request with
 * an Authorization header is authenticated by that header alone. Answers the password check, for
 * the console's sign-in.
 */
export function registerGuard(
  app: FastifyInstance,
  deps: ServiceDeps,
  sessionUser?: (req: FastifyRequest) => Promise<UserRow | undefined>,
): PasswordLogin {
  const cache = new CredentialCache();
  const verifications = new Verifications();
  const throttle = deps.loginThrottle;
  const { db } = deps.store;

  app.decorateRequest('ferryUser', undefined);
  app.decorateRequest('ferryOrg', undefined);
  app.decorateRequest('ferryRole', undefined);

  async function authenticate(req: FastifyRequest): Promise<UserRow> {
    if (req.headers.authorization === undefined && sessionUser) {
      const user = await sessionUser(req);
      if (user) return user;
    }
    const creds = basicCredentials(req.headers.authorization);
    if (!creds) throw unauthenticated();
    return login(creds, req.ip);
  }

  async function login(creds: BasicCredentials, ip: string): Promise<UserRow> {
    const { email, password } = creds;
    // The order is the one in service/auth/login-throttle.ts: a locked pair costs no lookup and no hash.
    await throttle.checkPair(email, ip);
    if (!creds.holdable) {
      // No account has such credentials and the store must not see them (PostgreSQL refuses a NUL
      // in text): refused as a wrong password, before any query, and counted like one.
      (await throttle.attempt(email, ip))(false);
      throw refused();
    }
    const user = await getUserByEmail(db, email);
    const key = user?.passwordHash ? sha256(`${user.id}\0${password}\0${user.passwordHash}`) : undefined;
    if (user && key && cache.has(key)) {
      await throttle.succeeded(email, ip, false);
      return user;
    }
    // The same login as sent, password and address (as the throttle counts it), checked against the
    // same row: a guess repeated while it is being verified is not a new guess, nor a right password
    // a new attempt. The followers count nothing and share the first's answer, a 429 included.
    const flight = verifications.key(email, addressKey(ip), password, user?.id ?? '', user?.passwordHash ?? '');
    const { right, shared } = verifications.once(flight, () => verify(email, password, ip, user, key));
    if (!(await right) || !user) throw refused();
    if (!shared) await throttle.succeeded(email, ip, true);
    return user;
  }

  /** Counts an attempt, hashes the password, and caches it when it is right. */
  async function verify(
    email: string,
    password: string,
    ip: string,
    user: UserRow | undefined,
    key: string | undefined,
  ): Promise<boolean> {
    // Past the address's failure budget this waits for the address's turn (one scrypt at a time).
    const end = await throttle.attempt(email, ip);
    let right = false;
    try {
      if (!user?.passwordHash || !key) {
        dummyHash ??= hashPassword(randomUUID());
        await verifyPassword(password, await dummyHash);
        return false;
      }
      right = await verifyPassword(password, user.passwordHash);
    } finally {
      end(right);
    }
    // Before the verification's entry is removed: a call arriving after it finds the cache.
    if (right) cache.add(key);
    return right;
  }

  app.addHook('onRequest', async (req, reply) => {
    // Every /v1 route declares its access; one that forgets is closed to all but Administrators.
    const access: Access =
      req.routeOptions.config.access ?? (req.routeOptions.url?.startsWith('/v1/') ? 'admin' : 'public');
    if (access === 'public') return;
    // Not to the console's own calls: a browser would answer a Basic challenge with its login dialog.
    if (req.headers['x-ferry-console'] === undefined)
      void reply.header('WWW-Authenticate', 'Basic realm="Ferry", charset="UTF-8"');
    const user = await authenticate(req);
    req.ferryUser = user;
    if (access === 'user') return;

    const rawOrgId = (req.params as Record<string, string | undefined>)['orgId'];
    const orgId = Number(rawOrgId);
    if (!rawOrgId || !/^\d{1,9}$/.test(rawOrgId) || !Number.isSafeInteger(orgId)) {
      throw new FerryError('API_VALIDATION', 'The Organization ID in the path must be a positive integer.', {
        errors: [{ path: 'path.orgId', message: 'must be a positive integer' }],
      });
    }
    const org = await getOrg(db, orgId);
    const role = org ? await roleIn(db, user.id, orgId) : undefined;
    // Not telling outsiders which Organizations exist.
    if (!org || !role) throw new FerryError('API_NOT_FOUND', `Organization ${orgId} was not found.`);
    await assertApiAccess(deps, org.id, req.ip);
    const { poll, polled } = req.routeOptions.config;
    await deps.rateLimiter.take(org.id, poll || polled ? 'poll' : 'call');
    if (RANK[role] < NEEDED[access]) {
      throw new FerryError(
        'API_FORBIDDEN_ROLE',
        `This operation needs the ${access === 'admin' ? 'Administrator' : 'Administrator or User'} role; you have the ${role} role in Organization ${orgId}.`,
      );
    }
    req.ferryOrg = org;
    req.ferryRole = role;
  });

  return (email, password, ip) => login(holdableCredentials(email, password), ip);
}

/** Credentials given as two strings (a sign-in form), with the same limits as Basic authentication's. */
function holdableCredentials(email: string, password: string): BasicCredentials {
  const holdable =
    !email.includes('\u0000') &&
    !password.includes('\u0000') &&
    email.length <= MAX_LOGIN_LENGTH &&
    password.length <= MAX_PASSWORD_LENGTH;
  return { email, password, holdable };
}

/** Whether a Security Rule of the Organization with apiAccessEnabled covers the address. */
export async function hasApiAccess(deps: ServiceDeps, orgId: number, ip: string): Promise<boolean> {
  return apiOpenTo(deps.store.db, orgId, ip);
}

/**
 * An Organization named outside the path (a query's orgId) for a `user` route: it must exist, the
 * caller must be a member (outsiders are not told which exist), and a Security Rule must open the
 * API to the caller's address, as for Organization routes.
 */
export async function assertMemberOrg(deps: ServiceDeps, user: UserRow, orgId: number, ip: string): Promise<void> {
  const { db } = deps.store;
  if (!(await getOrg(db, orgId)) || !(await roleIn(db, user.id, orgId)))
    throw new FerryError('API_NOT_FOUND', `Organization ${orgId} was not found.`);
  await assertApiAccess(deps, orgId, ip);
}

export async function assertApiAccess(deps: ServiceDeps, orgId: number, ip: string): Promise<void> {
  if (!(await hasApiAccess(deps, orgId, ip))) {
    throw new FerryError(
      'API_FORBIDDEN_IP',
      `No Security Rule of Organization ${orgId} allows API access from ${ip}. An Administrator calling from an allowed address can add one (POST /v1/orgs/${orgId}/securityrules); ` +
        `if no address is allowed any more, run \`ferry service allow --org ${orgId} ${ip}\` on the Service's machine.`,
    );
  }
}

/** The authenticated user; only for routes whose access is not `public`. */
export function callerOf(req: FastifyRequest): UserRow {
  if (!req.ferryUser) throw new FerryError('SVC_INTERNAL', 'Route without authentication asked for the caller');
  return req.ferryUser;
}

/** The path's Organization and the caller's role there; only for routes with Organization access. */
export function orgOf(req: FastifyRequest): { org: OrgRow; role: RoleType; user: UserRow } {
  if (!req.ferryOrg || !req.ferryRole || !req.ferryUser)
    throw new FerryError('SVC_INTERNAL', 'Route without Organization access asked for the Organization');
  return { org: req.ferryOrg, role: req.ferryRole, user: req.ferryUser };
}

/** The API user name recorded in modificationBy: the login email. */
export function userName(user: UserRow): string {
  return user.email;
}
