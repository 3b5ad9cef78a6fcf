import { notFound } from '../../src/errors/ferry-error.js';
import {
  getSubscription,
  lastMonths,
  listSubscriptions,
  orgAndDescendantIds,
  usageByMonth,
} from '../store/repos/subscriptions.repo.js';
import type { SubscriptionRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';

/**
 * The Subscriptions an Organization sees: its own and its descendants' (a parent sees its
 * children's; the row's orgId says whose), with the records processed in each of the last 12
 * months when asked for.
 */

/** A Subscription and, when asked for, its usage by month (`YYYY-MM-01`, oldest first). */
export interface SubscriptionUsage {
  row: SubscriptionRow;
  monthlyUsage?: Array<{ month: string; recordsProcessed: number }>;
}

async function withUsage(db: Db, rows: SubscriptionRow[], usage: boolean, now: Date): Promise<SubscriptionUsage[]> {
  if (!usage) return rows.map((row) => ({ row }));
  const months = lastMonths(now);
  const byMonth = await usageByMonth(
    db,
    rows.map((r) => r.id),
    months,
  );
  return rows.map((row) => {
    const perMonth = byMonth.get(row.id);
    return { row, monthlyUsage: months.map((month) => ({ month, recordsProcessed: perMonth?.get(month) ?? 0 })) };
  });
}

/** The Subscriptions of the Organization and its descendants: those current now, or all. */
export async function subscriptionsOf(
  db: Db,
  orgId: number,
  opts: { all: boolean; usage: boolean },
): Promise<SubscriptionUsage[]> {
  const now = new Date();
  const ids = await orgAndDescendantIds(db, orgId);
  const rows = await listSubscriptions(db, ids, { currentAt: opts.all ? undefined : now });
  return withUsage(db, rows, opts.usage, now);
}

/** One Subscription of the Organization or a descendant; 404 for any other. */
export async function subscriptionOf(
  db: Db,
  orgId: number,
  subscriptionId: string,
  opts: { usage: boolean },
): Promise<SubscriptionUsage> {
  const row = await getSubscription(db, subscriptionId.toLowerCase());
  if (!row || !(await orgAndDescendantIds(db, orgId)).includes(row.orgId)) {
    throw notFound(`Subscription ${subscriptionId}`);
  }
  const [found] = await withUsage(db, [row], opts.usage, new Date());
  if (!found) throw notFound(`Subscription ${subscriptionId}`);
  return found;
}
