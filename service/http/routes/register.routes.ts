import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { organizationView } from '../../orgs/organizations.js';
import { operatorOrganization, planRegistration, registerOrganization } from '../../orgs/register.js';
import type { ServiceDeps } from '../deps.js';
import { assertApiAccess, callerOf, userName } from '../guard.js';
import { toOrganization } from '../mappers/org.js';
import { decimal, MAX_INT, sendCreated } from '../schemas/common.js';
import { Organization } from '../schemas/org.schema.js';
import { RegisterInput } from '../schemas/register.schema.js';

const RegisterQuery = z.object({
  /** The operator Organization; needed only by a caller who administers several. */
  orgId: decimal(z.number().int().positive().max(MAX_INT).optional()),
});

const registerRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const registry = { secrets: deps.secrets, catalogue: deps.connectors.catalogue, packages: deps.connectors.packages };

  app.post(
    '/v1/register',
    {
      config: { access: 'user' },
      schema: {
        tags: ['Organizations'],
        summary: 'Create a customer Organization (operators: Administrators of a platform-hosted root Organization)',
        querystring: RegisterQuery,
        body: RegisterInput,
        response: { 201: Organization },
      },
    },
    async (req, reply) => {
      const user = callerOf(req);
      const operator = await operatorOrganization(db, user, req.query.orgId);
      // A call to the operator Organization's API: its Security Rules and rate limit apply.
      await assertApiAccess(deps, operator.id, req.ip);
      await deps.rateLimiter.take(operator.id);
      const plan = await planRegistration(db, registry, operator, user, req.body);
      const org = await registerOrganization(registry, db, plan, userName(user));
      return sendCreated(
        reply,
        `/v1/orgs/${org.id}`,
        toOrganization(deps.secrets, await organizationView(db, org), 'Administrator'),
      );
    },
  );
};

export default registerRoutes;
