import { sql, type Insertable } from 'kysely';
import { FerryError } from '../../../src/errors/ferry-error.js';
import type { Db } from '../sql.js';
import type { SubscriptionRow, SubscriptionsTable } from '../schema.js';
import { newId } from '../../util/values.js';

/** The three service types an Organization is subscribed to. */
export const SERVICE_TYPES = [
  { key: 'IS', name: 'Integration Services (IS)', description: 'Scheduled and event-driven integration Solutions' },
  { key: 'RS', name: 'Replication Services (RS)', description: 'Replication of entities into a target datastore' },
  { key: 'MS', name: 'Migration Services (MS)', description: 'One-time data migration Solutions' },
] as const;

export type ServiceType = (typeof SERVICE_TYPES)[number]['key'];

/** recordsAllowed of a Subscription without a limit. */
export const UNLIMITED = 'Unlimited';

/** Gives a new Organization a trial Subscription of each service type for one year. */
export async function createDefaultSubscriptions(
  db: Db,
  orgId: number,
  now: Date,
  recordsAllowed = '1000000',
): Promise<void> {
  const expiration = new Date(now);
  expiration.setUTCFullYear(expiration.getUTCFullYear() + 1);
  await db
    .insertInto('subscriptions')
    .values(
      SERVICE_TYPES.map((t) => ({
        id: newId(),
        orgId,
        name: t.name,
        description: t.description,
        startDate: now.toISOString(),
        expirationDate: expiration.toISOString(),
        isTrial: 1,
        recordsAllowed,
        recordsProcessed: 0,
        sku: `FERRY-${t.key}-TRIAL`,
        tscAccountId: null,
        tscRegion: null,
        tscSubscriptionId: null,
      })),
    )
    .execute();
}

/** Adds one Subscription (renewals, purchases, tests). */
export async function insertSubscription(db: Db, row: Insertable<SubscriptionsTable>): Promise<SubscriptionRow> {
  return db.insertInto('subscriptions').values(row).returningAll().executeTakeFirstOrThrow();
}

/** The Organization and all its descendants (children, grandchildren, …). */
export async function orgAndDescendantIds(db: Db, orgId: number): Promise<number[]> {
  const result = await sql<{ id: number }>`
    WITH RECURSIVE tree(id, depth) AS (
      SELECT id, 0 FROM orgs WHERE id = ${orgId}
      UNION ALL
      SELECT o.id, t.depth + 1 FROM orgs o JOIN tree t ON o.parent_id = t.id WHERE t.depth < 32
    )
    SELECT id FROM tree`.execute(db);
  return result.rows.map((r) => Number(r.id));
}

/**
 * Subscriptions of the Organizations, ordered by Organization, name and start. With `currentAt`,
 * only those whose period contains it (startDate <= at < expirationDate).
 */
export async function listSubscriptions(
  db: Db,
  orgIds: number[],
  opts: { currentAt?: Date | undefined } = {},
): Promise<SubscriptionRow[]> {
  if (orgIds.length === 0) return [];
  let q = db.selectFrom('subscriptions').selectAll().where('orgId', 'in', orgIds);
  if (opts.currentAt) {
    const at = opts.currentAt.toISOString();
    q = q.where('startDate', '<=', at).where('expirationDate', '>', at);
  }
  const rows = await q.orderBy('orgId').orderBy('name').orderBy('startDate').orderBy('id').execute();
  return rows.map(normalize);
}

/** One Subscription by id, whichever Organization it belongs to. */
export async function getSubscription(db: Db, id: string): Promise<SubscriptionRow | undefined> {
  const row = await db.selectFrom('subscriptions').selectAll().where('id', '=', id).executeTakeFirst();
  return row && normalize(row);
}

/** `YYYY-MM-01`: the usage month of an instant, in UTC. */
export function monthKey(at: Date): string {
  return `${at.getUTCFullYear()}-${String(at.getUTCMonth() + 1).padStart(2, '0')}-01`;
}

/** The month keys of the `count` months up to and including the month of `now`, oldest first. */
export function lastMonths(now: Date, count = 12): string[] {
  const keys: string[] = [];
  for (let back = count - 1; back >= 0; back -= 1) {
    keys.push(monthKey(new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth() - back, 1))));
  }
  return keys;
}

/** Records processed per Subscription and month, for the given months; months without a row are absent. */
export async function usageByMonth(
  db: Db,
  subscriptionIds: string[],
  months: string[],
): Promise<Map<string, Map<string, number>>> {
  const usage = new Map<string, Map<string, number>>();
  if (subscriptionIds.length === 0 || months.length === 0) return usage;
  const rows = await db
    .selectFrom('subscriptionUsage')
    .select(['subscriptionId', 'month', 'recordsProcessed'])
    .where('subscriptionId', 'in', subscriptionIds)
    .where('month', 'in', months)
    .execute();
  for (const row of rows) {
    let perMonth = usage.get(row.subscriptionId);
    if (!perMonth) usage.set(row.subscriptionId, (perMonth = new Map()));
    perMonth.set(row.month, Number(row.recordsProcessed));
  }
  return usage;
}

export interface RecordUsageInput {
  orgId: number;
  serviceType: ServiceType;
  /** Records processed, a non-negative integer. */
  records: number;
  /** When they were processed: picks the Subscription and the usage month. */
  at: Date;
}

export interface RecordUsageResult {
  subscriptionId: string;
  /** The Subscription's total after this call. */
  recordsProcessed: number;
  /** A number as text, or `Unlimited`. */
  recordsAllowed: string;
  /** recordsProcessed is above a numeric recordsAllowed. */
  overAllowance: boolean;
}

/**
 * Counts processed records against the Organization's Subscription of the service type whose
 * period contains `at` (the latest-starting one when renewals overlap), and against its month in
 * `subscription_usage`. Both counters grow by atomic `x = x + n` updates in one transaction, so
 * concurrent callers (Agents reporting executions, several Service replicas) never lose a count.
 * Going over the allowance is reported, not refused: the caller decides what to do about it.
 *
 * @throws FerryError SVC_NO_SUBSCRIPTION when no Subscription of that type is current at `at`.
 */
export async function recordUsage(db: Db, input: RecordUsageInput): Promise<RecordUsageResult> {
  const { orgId, serviceType, records, at } = input;
  if (!Number.isSafeInteger(records) || records < 0) {
    throw new FerryError('SVC_INTERNAL', `recordUsage needs a non-negative integer count of records, not ${records}.`);
  }
  if (Number.isNaN(at.getTime())) throw new FerryError('SVC_INTERNAL', 'recordUsage needs a valid date.');
  const type = SERVICE_TYPES.find((t) => t.key === serviceType);
  if (!type) throw new FerryError('SVC_INTERNAL', `Unknown service type ${String(serviceType)}.`);

  const work = async (tx: Db): Promise<RecordUsageResult> => {
    const iso = at.toISOString();
    const current = await tx
      .selectFrom('subscriptions')
      .select(['id', 'recordsAllowed'])
      .where('orgId', '=', orgId)
      .where('name', '=', type.name)
      .where('startDate', '<=', iso)
      .where('expirationDate', '>', iso)
      .orderBy('startDate', 'desc')
      .orderBy('id')
      .executeTakeFirst();
    if (!current) {
      throw new FerryError(
        'SVC_NO_SUBSCRIPTION',
        `Organization ${orgId} has no ${type.name} Subscription current on ${iso}; records cannot be counted until one is added.`,
        {
          details: { orgId, serviceType, at: iso },
        },
      );
    }
    const updated = await tx
      .updateTable('subscriptions')
      .set((eb) => ({ recordsProcessed: eb('recordsProcessed', '+', records) }))
      .where('id', '=', current.id)
      .returning(['recordsProcessed', 'recordsAllowed'])
      .executeTakeFirstOrThrow();
    await tx
      .insertInto('subscriptionUsage')
      .values({ subscriptionId: current.id, month: monthKey(at), recordsProcessed: records })
      .onConflict((oc) =>
        oc.columns(['subscriptionId', 'month']).doUpdateSet((eb) => ({
          recordsProcessed: eb('subscriptionUsage.recordsProcessed', '+', eb.ref('excluded.recordsProcessed')),
        })),
      )
      .execute();
    const processed = Number(updated.recordsProcessed);
    return {
      subscriptionId: current.id,
      recordsProcessed: processed,
      recordsAllowed: updated.recordsAllowed,
      overAllowance: isOverAllowance(processed, updated.recordsAllowed),
    };
  };
  return db.isTransaction ? work(db) : db.transaction().execute(work);
}

/** Whether a count exceeds an allowance; `Unlimited` (or any non-number) never is exceeded. */
export function isOverAllowance(processed: number, allowed: string): boolean {
  const limit = /^\s*\d+\s*$/.test(allowed) ? Number(allowed) : Number.POSITIVE_INFINITY;
  return processed > limit;
}

/** PostgreSQL returns bigint columns through the INT8 parser; make sure counts are numbers. */
function normalize(row: SubscriptionRow): SubscriptionRow {
  return { ...row, recordsProcessed: Number(row.recordsProcessed) };
}
