import { hashPassword } from '../../service/auth/password.js';
import { addMembership, insertUser, newUserRow } from '../../service/store/repos/users.repo.js';
import type { RoleType } from '../../service/store/schema.js';
import { nowIso } from '../../service/util/values.js';
import type { Credentials, TestService } from './service.js';

let counter = 0;

/** Creates a user with a password and (optionally) a role in an Organization, straight in the store. */
export async function addUser(
  svc: TestService,
  orgId: number | undefined,
  role: RoleType,
  email?: string,
): Promise<Credentials & { id: string }> {
  counter += 1;
  const address = email ?? `user${counter}-${role.toLowerCase()}@ferry.test`;
  const password = `Password-${counter}-x`;
  const now = nowIso();
  const { db } = svc.service.store;
  const { id } = await insertUser(
    db,
    newUserRow(
      {
        email: address,
        firstName: 'Test',
        lastName: role,
        passwordHash: await hashPassword(password),
        isApproved: true,
      },
      now,
    ),
  );
  if (orgId !== undefined) await addMembership(db, orgId, id, role, now);
  return { id, email: address, password };
}
