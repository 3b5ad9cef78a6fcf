import type { StoreDialect } from '../dialect.js';
import type { MailOutboxRow } from '../schema.js';
import type { Db } from '../sql.js';

/** A mail to queue: one recipient, plain text. */
export interface QueuedMail {
  /** One event mails one recipient once: a second row with the same key is not queued. */
  dedupeKey: string;
  kind: string;
  orgId: number;
  recipient: string;
  subject: string;
  body: string;
}

/** Queues mails, skipping those whose key is queued already; resolves to how many were added. */
export async function enqueueMails(
  db: Db,
  mails: readonly QueuedMail[],
  ids: () => string,
  now: string,
): Promise<number> {
  if (mails.length === 0) return 0;
  const rows = mails.map((m) => ({
    ...m,
    id: ids(),
    createdAt: now,
    attempts: 0,
    nextAttemptAt: now,
    claimedBy: null,
    claimedUntil: null,
    sentAt: null,
    failedAt: null,
    lastError: null,
  }));
  const result = await db
    .insertInto('mailOutbox')
    .values(rows)
    .onConflict((oc) => oc.column('dedupeKey').doNothing())
    .executeTakeFirst();
  return Number(result.numInsertedOrUpdatedRows ?? 0);
}

/**
 * Claims up to `limit` due mails for `claimer` until `leaseUntil`: not sent, not abandoned, due,
 * and not held by a live claim. On PostgreSQL the candidates are locked with SKIP LOCKED, so two
 * replicas claiming at once take different rows; SQLite runs one write at a time.
 */
export async function claimDueMails(
  db: Db,
  dialect: StoreDialect,
  claim: { claimer: string; now: string; leaseUntil: string; limit: number },
): Promise<MailOutboxRow[]> {
  let candidates = db
    .selectFrom('mailOutbox')
    .select('id')
    .where('sentAt', 'is', null)
    .where('failedAt', 'is', null)
    .where('nextAttemptAt', '<=', claim.now)
    .where((eb) => eb.or([eb('claimedUntil', 'is', null), eb('claimedUntil', '<', claim.now)]))
    .orderBy('nextAttemptAt')
    .orderBy('id')
    .limit(claim.limit);
  if (dialect === 'postgres') candidates = candidates.forUpdate().skipLocked();
  return (
    db
      .updateTable('mailOutbox')
      .set({ claimedBy: claim.claimer, claimedUntil: claim.leaseUntil })
      .where('id', 'in', candidates)
      // Re-checked on the row itself: on SQLite the subquery and the update are one statement anyway.
      .where((eb) => eb.or([eb('claimedUntil', 'is', null), eb('claimedUntil', '<', claim.now)]))
      .where('sentAt', 'is', null)
      .returningAll()
      .execute()
  );
}

/** Marks a claimed mail sent; false when the claim was lost meanwhile. */
export async function markMailSent(db: Db, id: string, claimer: string, now: string): Promise<boolean> {
  const r = await db
    .updateTable('mailOutbox')
    .set((eb) => ({
      sentAt: now,
      claimedBy: null,
      claimedUntil: null,
      lastError: null,
      attempts: eb('attempts', '+', 1),
    }))
    .where('id', '=', id)
    .where('claimedBy', '=', claimer)
    .executeTakeFirst();
  return Number(r.numUpdatedRows) > 0;
}

/** Releases a claimed mail for another attempt at `nextAttemptAt`. */
export async function rescheduleMail(
  db: Db,
  id: string,
  claimer: string,
  retry: { nextAttemptAt: string; error: string },
): Promise<void> {
  await db
    .updateTable('mailOutbox')
    .set((eb) => ({
      nextAttemptAt: retry.nextAttemptAt,
      lastError: retry.error,
      claimedBy: null,
      claimedUntil: null,
      attempts: eb('attempts', '+', 1),
    }))
    .where('id', '=', id)
    .where('claimedBy', '=', claimer)
    .execute();
}

/** Gives a claimed mail up: the mail server refused it for good. */
export async function abandonMail(
  db: Db,
  id: string,
  claimer: string,
  failure: { now: string; error: string },
): Promise<void> {
  await db
    .updateTable('mailOutbox')
    .set((eb) => ({
      failedAt: failure.now,
      lastError: failure.error,
      claimedBy: null,
      claimedUntil: null,
      attempts: eb('attempts', '+', 1),
    }))
    .where('id', '=', id)
    .where('claimedBy', '=', claimer)
    .execute();
}

/** Deletes sent and abandoned mails created before `before`; resolves to how many. */
export async function pruneMails(db: Db, before: string): Promise<number> {
  const r = await db
    .deleteFrom('mailOutbox')
    .where('createdAt', '<', before)
    .where((eb) => eb.or([eb('sentAt', 'is not', null), eb('failedAt', 'is not', null)]))
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}

/** The queued mails of an Organization, oldest first (for operators and tests). */
export async function listMails(db: Db, orgId: number): Promise<MailOutboxRow[]> {
  return db
    .selectFrom('mailOutbox')
    .selectAll()
    .where('orgId', '=', orgId)
    .orderBy('createdAt')
    .orderBy('id')
    .execute();
}

/** The email switches a member of an Organization can turn on (SPEC.md's User notification fields). */
export type NotificationSwitch =
  'connectorActivationEmail' | 'eventFailedJobEmail' | 'failedJobEmail' | 'failedRowsEmail' | 'heartbeatEmail';

/** A member who receives notification mails. */
export interface Subscriber {
  userId: string;
  email: string;
  firstName: string | null;
}

/** The members of an Organization who switched `which` on, by email. */
export async function subscribersOf(db: Db, orgId: number, which: NotificationSwitch): Promise<Subscriber[]> {
  return db
    .selectFrom('memberships')
    .innerJoin('users', 'users.id', 'memberships.userId')
    .select(['users.id as userId', 'users.email', 'users.firstName'])
    .where('memberships.orgId', '=', orgId)
    .where(`memberships.${which}`, '=', 1)
    .orderBy('users.emailKey')
    .execute();
}
