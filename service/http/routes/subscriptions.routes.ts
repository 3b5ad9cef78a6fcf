import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notFound } from '../../../src/errors/ferry-error.js';
import { getSubscription, lastMonths, listSubscriptions, orgAndDescendantIds, usageByMonth } from '../../store/repos/subscriptions.repo.js';
import type { SubscriptionRow } from '../../store/schema.js';
import type { Db } from '../../store/sql.js';
import { fromFlag } from '../../util/values.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { OrgParams, sendList } from '../schemas/common.js';
import { Subscription, SubscriptionListQuery, SubscriptionParams, SubscriptionQuery } from '../schemas/subscription.schema.js';

const tags = ['Subscriptions'];

/** API models of Subscription rows, with the last 12 months of usage when asked for. */
async function toSubscriptions(db: Db, rows: SubscriptionRow[], withUsage: boolean, now: Date): Promise<Subscription[]> {
  const months = withUsage ? lastMonths(now) : [];
  const usage = withUsage ? await usageByMonth(db, rows.map((r) => r.id), months) : undefined;
  return rows.map((r) => {
    const model: Subscription = {
      id: r.id,
      name: r.name,
      description: r.description,
      orgId: r.orgId,
      startDate: r.startDate,
      expirationDate: r.expirationDate,
      isTrial: fromFlag(r.isTrial),
      recordsAllowed: r.recordsAllowed,
      recordsProcessed: r.recordsProcessed,
      sku: r.sku,
      tscAccountId: r.tscAccountId,
      tscRegion: r.tscRegion,
      tscSubscriptionId: r.tscSubscriptionId,
    };
    if (usage) {
      const perMonth = usage.get(r.id);
      model.monthlyUsage = months.map((m) => ({ date: `${m}T00:00:00.000Z`, recordsProcessed: perMonth?.get(m) ?? 0 }));
    }
    return model;
  });
}

/**
 * Subscriptions of an Organization and of its descendants (a parent sees its children's; `orgId`
 * says whose). The no-slash form `subscriptions{subscriptionId}` is rewritten to the slash route by
 * the app.
 */
const subscriptionsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.get('/v1/orgs/:orgId/subscriptions', {
    config: { access: 'read' },
    schema: {
      tags,
      summary: 'Subscriptions of the Organization and its descendants',
      params: OrgParams,
      querystring: SubscriptionListQuery,
      response: { 200: z.array(Subscription) },
    },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const now = new Date();
    const ids = await orgAndDescendantIds(db, org.id);
    const rows = await listSubscriptions(db, ids, { currentAt: req.query.showAll ? undefined : now });
    return sendList(reply, await toSubscriptions(db, rows, req.query.showMonthlyUsage, now), rows.length);
  });

  app.get('/v1/orgs/:orgId/subscriptions/:subscriptionId', {
    config: { access: 'read' },
    schema: {
      tags,
      summary: 'One Subscription (also written /subscriptions{subscriptionId}, without the slash)',
      params: SubscriptionParams,
      querystring: SubscriptionQuery,
      response: { 200: Subscription },
    },
  }, async (req) => {
    const { org } = orgOf(req);
    const id = req.params.subscriptionId.toLowerCase();
    const row = await getSubscription(db, id);
    if (!row || !(await orgAndDescendantIds(db, org.id)).includes(row.orgId)) {
      throw notFound(`Subscription ${req.params.subscriptionId}`);
    }
    const [model] = await toSubscriptions(db, [row], req.query.showMonthlyUsage, new Date());
    if (!model) throw notFound(`Subscription ${req.params.subscriptionId}`);
    return model;
  });
};

export default subscriptionsRoutes;
