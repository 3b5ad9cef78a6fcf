import { FerryError } from '../../src/errors/ferry-error.js';
import { getInvitationByEmail } from '../store/repos/invitations.repo.js';
import {
  countAdministrators,
  countMembers,
  getMemberByEmail,
  listMembers,
  lockMembers,
  removeMembership,
  updateMembership,
  updateUser,
  type MemberRow,
} from '../store/repos/users.repo.js';
import type { RoleType } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import type { Store } from '../store/store.js';
import { nowIso } from '../util/values.js';

/**
 * The members of an Organization: people who accepted an invitation, and its creators. Every
 * change keeps at least one Administrator, checked under the member lock of the Organization.
 */

/**
 * Refuses a change that would leave the Organization without an Administrator member: demoting
 * (`newRole` other than Administrator) or removing (`newRole` undefined) its last one. Call inside
 * the transaction that makes the change, after {@link lockMembers}.
 */
export async function keepAnAdministrator(
  tx: Db,
  orgId: number,
  member: MemberRow,
  newRole: RoleType | undefined,
): Promise<void> {
  if (member.roleType !== 'Administrator' || newRole === 'Administrator') return;
  if ((await countAdministrators(tx, orgId)) <= 1) {
    const what = newRole === undefined ? 'removed' : `given the ${newRole} role`;
    throw new FerryError(
      'API_CONFLICT',
      `${member.email} is the last Administrator of Organization ${orgId} and cannot be ${what}; make another member an Administrator first.`,
    );
  }
}

/** The 404 for an email that is not a member; points to the invitation when there is one. */
async function notAMember(db: Db, orgId: number, email: string): Promise<FerryError> {
  const invitation = await getInvitationByEmail(db, orgId, email);
  if (invitation) {
    return new FerryError(
      'API_NOT_FOUND',
      `${email} has not accepted the invitation to Organization ${orgId} (status ${invitation.statusType}); manage it with /v1/orgs/${orgId}/invitedusers.`,
    );
  }
  return new FerryError('API_NOT_FOUND', `${email} is not a member of Organization ${orgId}.`);
}

/** A page of the members, and how many there are. */
export async function membersOf(
  db: Db,
  orgId: number,
  page: { limit: number; offset: number },
): Promise<{ rows: MemberRow[]; total: number }> {
  const [rows, total] = await Promise.all([listMembers(db, orgId, page), countMembers(db, orgId)]);
  return { rows, total };
}

/** A change to a member, who is named by email; absent or null fields stay as they are. */
export interface MemberChange {
  email: string;
  roleType?: RoleType | null | undefined;
  firstName?: string | null | undefined;
  lastName?: string | null | undefined;
}

/** Changes a member's role and names; the last Administrator keeps the role. Answers the member after. */
export async function modifyMember(
  store: Pick<Store, 'db' | 'dialect'>,
  orgId: number,
  change: MemberChange,
): Promise<MemberRow> {
  const updated = await store.db.transaction().execute(async (tx) => {
    await lockMembers(tx, store.dialect, orgId);
    const member = await getMemberByEmail(tx, orgId, change.email);
    if (!member) throw await notAMember(tx, orgId, change.email);
    if (change.roleType && change.roleType !== member.roleType) {
      await keepAnAdministrator(tx, orgId, member, change.roleType);
      await updateMembership(tx, orgId, member.id, { roleType: change.roleType });
    }
    const names = {
      ...(change.firstName ? { firstName: change.firstName } : {}),
      ...(change.lastName ? { lastName: change.lastName } : {}),
    };
    if (Object.keys(names).length > 0) await updateUser(tx, member.id, { ...names, modifiedAt: nowIso() });
    return getMemberByEmail(tx, orgId, change.email);
  });
  if (!updated) throw new FerryError('API_NOT_FOUND', `${change.email} is not a member of Organization ${orgId}.`);
  return updated;
}

/** Ends a membership; the user account stays. The last Administrator cannot be removed. */
export async function removeMember(store: Pick<Store, 'db' | 'dialect'>, orgId: number, email: string): Promise<void> {
  await store.db.transaction().execute(async (tx) => {
    await lockMembers(tx, store.dialect, orgId);
    const member = await getMemberByEmail(tx, orgId, email);
    if (!member) throw await notAMember(tx, orgId, email);
    await keepAnAdministrator(tx, orgId, member, undefined);
    await removeMembership(tx, orgId, member.id);
  });
}
