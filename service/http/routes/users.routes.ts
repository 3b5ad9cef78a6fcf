import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { hashPassword } from '../../auth/password.js';
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
} from '../../store/repos/users.repo.js';
import type { MembershipsTable, UserRow, UsersTable } from '../../store/schema.js';
import { nowIso, toFlag } from '../../util/values.js';
import type { Updateable } from 'kysely';
import type { FastifyRequest } from 'fastify';
import type { ServiceDeps } from '../deps.js';
import { callerOf } from '../guard.js';
import { PageQuery, sendList } from '../schemas/common.js';
import { NOTIFICATION_SWITCHES, NotificationSettingsInput, User, UserInput, UserParams } from '../schemas/user.schema.js';
import { toUser } from '../user-model.js';

const tags = ['Users (own account)'];

/** Profile fields a user may change on their own record besides email and names. */
const PROFILE_FIELDS = ['company', 'country', 'state', 'postalCode', 'phone', 'jobTitle', 'httpReferrer', 'leadSource'] as const;

/** The caller, when the path's userId is the caller's own ID. */
function ownAccount(req: FastifyRequest, userId: string): UserRow {
  const user = callerOf(req);
  if (userId.toLowerCase() !== user.id.toLowerCase()) {
    throw new FerryError('API_FORBIDDEN_OTHER_USER', `You can read and change only your own settings; your user ID is ${user.id}.`);
  }
  return user;
}

/**
 * `omittedFields` of the User model: names of fields the client left out (clients that serialize
 * every property send those as null). Such fields are not changed. Separated by commas,
 * semicolons or spaces; matched case-insensitively.
 */
function omittedOf(value: string | null | undefined): Set<string> {
  return new Set((value ?? '').split(/[\s,;]+/).filter(Boolean).map((f) => f.toLowerCase()));
}

/**
 * The caller's own account, with no Organization in the path: any authenticated user, and no
 * Security Rule applies (SPEC.md's Users (own account)).
 */
const usersRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  const modelOf = async (user: UserRow): Promise<z.infer<typeof User>> => {
    const [first] = await listUserMemberships(db, user.id, { limit: 1, offset: 0 });
    return toUser(user, first);
  };

  app.get('/v1/users', {
    config: { access: 'user' },
    schema: {
      tags,
      summary: 'Your user information',
      description: 'orgId, orgName, tenantId, roleType and the notification switches are those of your first membership; password is always null.',
      response: { 200: User },
    },
  }, async (req) => modelOf(callerOf(req)));

  app.put('/v1/users', {
    config: { access: 'user' },
    schema: {
      tags,
      summary: 'Modify your own record',
      description:
        'email, firstName and lastName are required; a non-null password (at least 8 characters) becomes your new password. ' +
        'Absent fields, and those named in omittedFields, stay as they are; membership fields are ignored. ' +
        'Not supported when you belong to a platform-hosted Organization.',
      body: UserInput,
      response: { 200: User },
    },
  }, async (req) => {
    const user = callerOf(req);
    const body = req.body;
    if (await inPlatformHostedOrg(db, user.id)) {
      throw new FerryError('API_PLATFORM_HOSTED', 'Modifying your user record is not supported for members of platform-hosted Organizations; use the platform\'s user management.');
    }
    if (body.id && body.id.toLowerCase() !== user.id.toLowerCase()) {
      throw new FerryError('API_FORBIDDEN_OTHER_USER', `PUT /v1/users changes only your own record; your user ID is ${user.id}.`);
    }
    const omitted = omittedOf(body.omittedFields);
    const patch: Updateable<UsersTable> = { firstName: body.firstName, lastName: body.lastName, modifiedAt: nowIso() };
    const emailKey = emailKeyOf(body.email);
    if (body.email !== user.email && !omitted.has('email')) {
      // The email is the login and the address invitations are matched by: changing it to an
      // address nobody has proved to own would let anyone claim invitations sent there.
      if (emailKey !== user.emailKey) {
        throw new FerryError('API_UNSUPPORTED', 'Your email cannot be changed to another address: it is your login and the address invitations reach. Ask an Administrator to invite the new address; only the letter case may change here.', {
          errors: [{ path: 'body.email', message: `must be ${user.email} (any letter case)` }],
        });
      }
      patch.email = body.email;
      patch.emailKey = emailKey;
    }
    for (const field of PROFILE_FIELDS) {
      const value = body[field];
      if (value !== undefined && !omitted.has(field.toLowerCase())) patch[field] = value === '' ? null : value;
    }
    if (typeof body.password === 'string' && !omitted.has('password')) patch.passwordHash = await hashPassword(body.password);
    try {
      await updateUser(db, user.id, patch);
    } catch (err) {
      // Another request took the email between the check and the update.
      if (isUniqueViolation(err)) throw new FerryError('API_CONFLICT', `Another user already has the email ${body.email}.`);
      throw err;
    }
    const updated = await getUser(db, user.id);
    if (!updated) throw new FerryError('API_NOT_FOUND', 'Your user record was not found.');
    return modelOf(updated);
  });

  app.get('/v1/users/:userId/notificationsettings', {
    config: { access: 'user' },
    schema: {
      tags,
      summary: 'Your email notification settings, one entry per Organization you belong to',
      params: UserParams,
      querystring: PageQuery,
      response: { 200: z.array(User) },
    },
  }, async (req, reply) => {
    const user = ownAccount(req, req.params.userId);
    const [rows, total] = await Promise.all([listUserMemberships(db, user.id, req.query), countUserMemberships(db, user.id)]);
    return sendList(reply, rows.map((m) => toUser(user, m)), total);
  });

  app.put('/v1/users/:userId/notificationsettings', {
    config: { access: 'user' },
    schema: {
      tags,
      summary: 'Modify your email notification settings in one Organization',
      description: 'tenantId names the Organization (orgName is required too). Switches that are absent or null stay as they are; other User fields are ignored.',
      params: UserParams,
      body: NotificationSettingsInput,
      response: { 200: User },
    },
  }, async (req) => {
    const user = ownAccount(req, req.params.userId);
    const body = req.body;
    const membership = await getUserMembershipByTenant(db, user.id, body.tenantId);
    if (!membership) throw new FerryError('API_NOT_FOUND', `You are not a member of an Organization with tenantId ${body.tenantId}.`);
    const patch: Updateable<MembershipsTable> = {};
    for (const field of NOTIFICATION_SWITCHES) {
      const value = body[field];
      if (typeof value === 'boolean') patch[field] = toFlag(value);
    }
    if (Object.keys(patch).length > 0) await updateMembership(db, membership.orgId, user.id, patch);
    return toUser(user, (await getUserMembershipByTenant(db, user.id, body.tenantId)) ?? membership);
  });
};

export default usersRoutes;
