import type { SubscriptionUsage } from '../../subscriptions/subscriptions.js';
import { fromFlag } from '../../util/values.js';
import type { Subscription } from '../schemas/subscription.schema.js';

/** The Subscription model; monthlyUsage only when the usage was read. */
export function toSubscription({ row: r, monthlyUsage }: SubscriptionUsage): Subscription {
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
  if (monthlyUsage)
    model.monthlyUsage = monthlyUsage.map((u) => ({
      date: `${u.month}T00:00:00.000Z`,
      recordsProcessed: u.recordsProcessed,
    }));
  return model;
}
