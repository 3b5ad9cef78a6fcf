import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { subscriptionOf, subscriptionsOf } from '../../subscriptions/subscriptions.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { toSubscription } from '../mappers/subscription.js';
import { OrgParams, sendList } from '../schemas/common.js';
import {
  Subscription,
  SubscriptionListQuery,
  SubscriptionParams,
  SubscriptionQuery,
} from '../schemas/subscription.schema.js';

const tags = ['Subscriptions'];

/**
 * Subscriptions of an Organization and of its descendants (a parent sees its children's; `orgId`
 * says whose). The no-slash form `subscriptions{subscriptionId}` is rewritten to the slash route by
 * the app.
 */
const subscriptionsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get(
    '/v1/orgs/:orgId/subscriptions',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Subscriptions of the Organization and its descendants',
        params: OrgParams,
        querystring: SubscriptionListQuery,
        response: { 200: z.array(Subscription) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const subscriptions = await subscriptionsOf(db, org.id, {
        all: req.query.showAll,
        usage: req.query.showMonthlyUsage,
      });
      return sendList(reply, subscriptions.map(toSubscription), subscriptions.length);
    },
  );

  app.get(
    '/v1/orgs/:orgId/subscriptions/:subscriptionId',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'One Subscription (also written /subscriptions{subscriptionId}, without the slash)',
        params: SubscriptionParams,
        querystring: SubscriptionQuery,
        response: { 200: Subscription },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      return toSubscription(
        await subscriptionOf(db, org.id, req.params.subscriptionId, { usage: req.query.showMonthlyUsage }),
      );
    },
  );
};

export default subscriptionsRoutes;
