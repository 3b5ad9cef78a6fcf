import { z } from 'zod';
import { Guid, OrgParams, qbool, Timestamp } from './common.js';

/** Records processed in one calendar month (UTC). */
export const MonthlyUsage = z.object({
  date: Timestamp.describe('first day of the month, 00:00 UTC'),
  recordsProcessed: z.number().int(),
});

/** The Subscription model of SPEC.md. */
export const Subscription = z.object({
  id: z.string(),
  name: z.string().describe('Integration Services (IS), Replication Services (RS) or Migration Services (MS)'),
  description: z.string().nullable(),
  orgId: z.number().int().describe('the Organization the Subscription belongs to (this one or a descendant)'),
  startDate: Timestamp,
  expirationDate: Timestamp,
  isTrial: z.boolean(),
  recordsAllowed: z.string().describe('a whole number, or Unlimited'),
  recordsProcessed: z.number().int(),
  monthlyUsage: z.array(MonthlyUsage).optional().describe('with showMonthlyUsage: the last 12 months, oldest first'),
  sku: z.string().nullable(),
  tscAccountId: z.string().nullable(),
  tscRegion: z.string().nullable(),
  tscSubscriptionId: z.string().nullable(),
});
export type Subscription = z.infer<typeof Subscription>;

export const SubscriptionListQuery = z.object({
  showAll: qbool(false).describe('false: only Subscriptions current now'),
  showMonthlyUsage: qbool(false).describe('true: add monthlyUsage for each of the last 12 months'),
});

export const SubscriptionQuery = z.object({ showMonthlyUsage: qbool(false) });

export const SubscriptionParams = OrgParams.extend({ subscriptionId: Guid });
