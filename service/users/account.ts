import type { Updateable } from 'kysely';
import { FerryError } from '../../src/errors/ferry-error.js';
import { hashPassword } from '../auth/password.js';
import {
  countUserMemberships,
  emailKeyOf,
  getUser,
  getUserMembershipByTenant,
  inPlatformHostedOrg,
  isUniqueViolation,
  listUserMemberships,
  updateMembership,
  updateUser,
  type UserMembershipRow,
} from '../store/repos/users.repo.js';
import type { MembershipsTable, UserRow, UsersTable } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { nowIso, toFlag } from '../util/values.js';

/**
 * A user's own account: the record, and the notification switches of each membership. No
 * Organization is involved in reaching it, so no Security Rule applies (SPEC.md's Users (own
 * account)).
 */

/** Profile fields a user may change on their own record besides email and names. */
const PROFILE_FIELDS = [
  'company',
  'country',
  'state',
  'postalCode',
  'phone',
  'jobTitle',
  'httpReferrer',
  'leadSource',
] as const;

/** The email notification switches of a membership. */
export const NOTIFICATION_SWITCHES = [
  'connectorActivationEmail',
  'eventFailedJobEmail',
  'failedJobEmail',
  'failedRowsEmail',
  'heartbeatEmail',
  'systemUpdateEmail',
] as const satisfies ReadonlyArray<keyof MembershipsTable>;

/** The user with the membership their own User model shows: the first one (or none). */
export interface AccountView {
  user: UserRow;
  membership: UserMembershipRow | undefined;
}

/** Refuses a path that names another user than the caller: a user reads and changes only their own settings. */
export function requireOwnAccount(caller: UserRow, userId: string): UserRow {
  if (userId.toLowerCase() !== caller.id.toLowerCase()) {
    throw new FerryError(
      'API_FORBIDDEN_OTHER_USER',
      `You can read and change only your own settings; your user ID is ${caller.id}.`,
    );
  }
  return caller;
}

/** The user and their first membership. */
export async function accountOf(db: Db, user: UserRow): Promise<AccountView> {
  const [first] = await listUserMemberships(db, user.id, { limit: 1, offset: 0 });
  return { user, membership: first };
}

/**
 * `omittedFields` of the User model: names of fields the client left out (clients that serialize
 * every property send those as null). Such fields are not changed. Separated by commas,
 * semicolons or spaces; matched case-insensitively.
 */
function omittedOf(value: string | null | undefined): Set<string> {
  return new Set(
    (value ?? '')
      .split(/[\s,;]+/)
      .filter(Boolean)
      .map((f) => f.toLowerCase()),
  );
}

/** A user's own record as sent back; what it carries besides these is ignored. */
export interface AccountChange {
  id?: string | null | undefined;
  email: string;
  firstName: string;
  lastName: string;
  company?: string | null | undefined;
  country?: string | null | undefined;
  state?: string | null | undefined;
  postalCode?: string | null | undefined;
  phone?: string | null | undefined;
  jobTitle?: string | null | undefined;
  httpReferrer?: string | null | undefined;
  leadSource?: string | null | undefined;
  /** Not null: the new password. */
  password?: string | null | undefined;
  omittedFields?: string | null | undefined;
}

/**
 * Changes the user's own record. Absent fields, and those named in omittedFields, stay as they
 * are; the email may change only in letter case (it is the login and the address invitations
 * reach). Not for members of platform-hosted Organizations. Answers the record after.
 */
export async function modifyOwnAccount(db: Db, user: UserRow, change: AccountChange): Promise<UserRow> {
  if (await inPlatformHostedOrg(db, user.id)) {
    throw new FerryError(
      'API_PLATFORM_HOSTED',
      "Modifying your user record is not supported for members of platform-hosted Organizations; use the platform's user management.",
    );
  }
  if (change.id && change.id.toLowerCase() !== user.id.toLowerCase()) {
    throw new FerryError(
      'API_FORBIDDEN_OTHER_USER',
      `PUT /v1/users changes only your own record; your user ID is ${user.id}.`,
    );
  }
  const omitted = omittedOf(change.omittedFields);
  const patch: Updateable<UsersTable> = {
    firstName: change.firstName,
    lastName: change.lastName,
    modifiedAt: nowIso(),
  };
  const emailKey = emailKeyOf(change.email);
  if (change.email !== user.email && !omitted.has('email')) {
    // The email is the login and the address invitations are matched by: changing it to an
    // address nobody has proved to own would let anyone claim invitations sent there.
    if (emailKey !== user.emailKey) {
      throw new FerryError(
        'API_UNSUPPORTED',
        'Your email cannot be changed to another address: it is your login and the address invitations reach. Ask an Administrator to invite the new address; only the letter case may change here.',
        {
          errors: [{ path: 'body.email', message: `must be ${user.email} (any letter case)` }],
        },
      );
    }
    patch.email = change.email;
    patch.emailKey = emailKey;
  }
  for (const field of PROFILE_FIELDS) {
    const value = change[field];
    if (value !== undefined && !omitted.has(field.toLowerCase())) patch[field] = value === '' ? null : value;
  }
  if (typeof change.password === 'string' && !omitted.has('password'))
    patch.passwordHash = await hashPassword(change.password);
  try {
    await updateUser(db, user.id, patch);
  } catch (err) {
    // Another request took the email between the check and the update.
    if (isUniqueViolation(err))
      throw new FerryError('API_CONFLICT', `Another user already has the email ${change.email}.`);
    throw err;
  }
  const updated = await getUser(db, user.id);
  if (!updated) throw new FerryError('API_NOT_FOUND', 'Your user record was not found.');
  return updated;
}

/** A page of the user's memberships with their notification switches, and how many there are. */
export async function notificationSettingsOf(
  db: Db,
  user: UserRow,
  page: { limit: number; offset: number },
): Promise<{ rows: UserMembershipRow[]; total: number }> {
  const [rows, total] = await Promise.all([listUserMemberships(db, user.id, page), countUserMemberships(db, user.id)]);
  return { rows, total };
}

/** Switches of one membership, named by its Organization's tenantId; absent or null ones stay. */
export type NotificationChange = { tenantId: string } & {
  [K in (typeof NOTIFICATION_SWITCHES)[number]]?: boolean | null | undefined;
};

/** Changes the notification switches of one of the user's memberships; answers the membership after. */
export async function changeNotificationSettings(
  db: Db,
  user: UserRow,
  change: NotificationChange,
): Promise<UserMembershipRow> {
  const membership = await getUserMembershipByTenant(db, user.id, change.tenantId);
  if (!membership)
    throw new FerryError('API_NOT_FOUND', `You are not a member of an Organization with tenantId ${change.tenantId}.`);
  const patch: Updateable<MembershipsTable> = {};
  for (const field of NOTIFICATION_SWITCHES) {
    const value = change[field];
    if (typeof value === 'boolean') patch[field] = toFlag(value);
  }
  if (Object.keys(patch).length > 0) await updateMembership(db, membership.orgId, user.id, patch);
  return (await getUserMembershipByTenant(db, user.id, change.tenantId)) ?? membership;
}
