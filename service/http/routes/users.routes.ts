import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  accountOf,
  changeNotificationSettings,
  modifyOwnAccount,
  notificationSettingsOf,
  requireOwnAccount,
} from '../../users/account.js';
import type { ServiceDeps } from '../deps.js';
import { callerOf } from '../guard.js';
import { toUser } from '../mappers/user.js';
import { PageQuery, sendList } from '../schemas/common.js';
import { NotificationSettingsInput, User, UserInput, UserParams } from '../schemas/user.schema.js';

const tags = ['Users (own account)'];

/**
 * The caller's own account, with no Organization in the path: any authenticated user, and no
 * Security Rule applies (SPEC.md's Users (own account)).
 */
const usersRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get(
    '/v1/users',
    {
      config: { access: 'user' },
      schema: {
        tags,
        summary: 'Your user information',
        description:
          'orgId, orgName, tenantId, roleType and the notification switches are those of your first membership; password is always null.',
        response: { 200: User },
      },
    },
    async (req) => {
      const { user, membership } = await accountOf(db, callerOf(req));
      return toUser(user, membership);
    },
  );

  app.put(
    '/v1/users',
    {
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
    },
    async (req) => {
      const updated = await modifyOwnAccount(db, callerOf(req), req.body);
      const { user, membership } = await accountOf(db, updated);
      return toUser(user, membership);
    },
  );

  // `alertsettings` is the path older clients use for the same settings (DESIGN.md "Compatibility facts").
  for (const name of ['notificationsettings', 'alertsettings']) {
    app.get(
      `/v1/users/:userId/${name}`,
      {
        config: { access: 'user' },
        schema: {
          tags,
          summary: 'Your email notification settings, one entry per Organization you belong to',
          params: UserParams,
          querystring: PageQuery,
          response: { 200: z.array(User) },
        },
      },
      async (req, reply) => {
        const user = requireOwnAccount(callerOf(req), req.params.userId);
        const { rows, total } = await notificationSettingsOf(db, user, req.query);
        return sendList(
          reply,
          rows.map((m) => toUser(user, m)),
          total,
        );
      },
    );

    app.put(
      `/v1/users/:userId/${name}`,
      {
        config: { access: 'user' },
        schema: {
          tags,
          summary: 'Modify your email notification settings in one Organization',
          description:
            'tenantId names the Organization (orgName is required too). Switches that are absent or null stay as they are; other User fields are ignored.',
          params: UserParams,
          body: NotificationSettingsInput,
          response: { 200: User },
        },
      },
      async (req) => {
        const user = requireOwnAccount(callerOf(req), req.params.userId);
        return toUser(user, await changeNotificationSettings(db, user, req.body));
      },
    );
  }
};

export default usersRoutes;
