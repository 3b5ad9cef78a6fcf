import type { Db } from '../sql.js';
import { newId } from '../../util/values.js';

/** The three service types an Organization is subscribed to. */
export const SERVICE_TYPES = [
  { key: 'IS', name: 'Integration Services (IS)', description: 'Scheduled and event-driven integration Solutions' },
  { key: 'RS', name: 'Replication Services (RS)', description: 'Replication of entities into a target datastore' },
  { key: 'MS', name: 'Migration Services (MS)', description: 'One-time data migration Solutions' },
] as const;

/** Gives a new Organization a trial Subscription of each service type for one year. */
export async function createDefaultSubscriptions(db: Db, orgId: number, now: Date, recordsAllowed = '1000000'): Promise<void> {
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
