import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger } from 'fastify';
import {
  abandonMail,
  claimDueMails,
  markMailSent,
  pruneMails,
  rescheduleMail,
} from '../store/repos/mail-outbox.repo.js';
import type { MailOutboxRow } from '../store/schema.js';
import type { Store } from '../store/store.js';
import { PeriodicJob } from '../jobs/periodic-job.js';
import { describeFailure, isPermanentFailure, smtpEndpoint, type Mailer } from './mailer.js';

/** How the sender loop paces itself; tests shorten it. */
export interface OutboxTiming {
  /** How often the loop looks for due mails. */
  pollMs: number;
  /** Wait before the second attempt; doubled at each further one … */
  retryBaseMs: number;
  /** … up to this. */
  retryMaxMs: number;
  /** How long a claim holds a mail; a sender that died lets it go after this. */
  leaseMs: number;
  /** Mails claimed per pass. */
  batch: number;
  /** Sent and abandoned mails are deleted after this. */
  keepMs: number;
}

export const DEFAULT_OUTBOX_TIMING: OutboxTiming = {
  pollMs: 2_000,
  retryBaseMs: 5_000,
  retryMaxMs: 15 * 60_000,
  leaseMs: 5 * 60_000,
  batch: 20,
  keepMs: 7 * 24 * 3_600_000,
};

/** How often old rows are pruned. */
const PRUNE_EVERY_MS = 3_600_000;

export interface MailSenderOptions {
  store: Store;
  mailer: Mailer;
  /** For log lines (its endpoint only) and to keep its password out of stored errors. */
  smtpUrl: string;
  log: FastifyBaseLogger;
  timing?: Partial<OutboxTiming>;
}

/** The wait before attempt `attempts + 1`: exponential, capped, with a little jitter so replicas spread out. */
export function retryDelayMs(
  attempts: number,
  timing: Pick<OutboxTiming, 'retryBaseMs' | 'retryMaxMs'>,
  random: () => number = Math.random,
): number {
  const exp = Math.min(timing.retryBaseMs * 2 ** Math.min(attempts, 30), timing.retryMaxMs);
  return Math.round(exp * (0.9 + 0.2 * random()));
}

/**
 * Sends the queued notification mails (the `mail_outbox` table, filled by the triggers in
 * notifications.ts):
 *
 *   poll ─▶ claim due rows (lease; SKIP LOCKED on PostgreSQL) ─▶ SMTP send ─┬▶ accepted: sent_at
 *                                                                          ├▶ refused for good (5xx to RCPT/DATA): failed_at
 *                                                                          └▶ anything else: next_attempt_at += back-off,
 *                                                                             and the rest of the batch waits too
 *
 * Every replica runs one; a mail is claimed by one of them at a time, so it goes out once unless a
 * sender dies between the server's acceptance and marking it sent (then it goes out again after
 * the lease: at least once, never lost).
 */
export class MailSender {
  readonly #opts: MailSenderOptions;
  readonly #timing: OutboxTiming;
  readonly #log: FastifyBaseLogger;
  readonly #claimer = randomUUID();
  readonly #job: PeriodicJob;
  #lastPrune = 0;
  /** Whether the last pass failed to reach the server: the outage is logged once, and its end. */
  #failing = false;

  constructor(opts: MailSenderOptions) {
    this.#opts = opts;
    this.#timing = { ...DEFAULT_OUTBOX_TIMING, ...opts.timing };
    this.#log = opts.log.child({ component: 'mail-sender' });
    this.#job = new PeriodicJob({
      intervalMs: this.#timing.pollMs,
      tick: () => this.pass(),
      log: this.#log,
      failed: 'mail outbox pass failed',
      level: 'warn',
    });
  }

  start(): void {
    this.#job.start();
  }

  /** Stops the loop, waits for a pass in progress, and closes the mail connection. */
  async stop(): Promise<void> {
    await this.#job.stop();
    this.#opts.mailer.close();
  }

  /** One pass: claims what is due and tries to send it. */
  async pass(nowMs: number = Date.now()): Promise<void> {
    const { db, dialect } = this.#opts.store;
    const now = new Date(nowMs).toISOString();
    if (nowMs - this.#lastPrune >= PRUNE_EVERY_MS) {
      this.#lastPrune = nowMs;
      const pruned = await pruneMails(db, new Date(nowMs - this.#timing.keepMs).toISOString());
      if (pruned > 0) this.#log.debug({ pruned }, 'old mails removed from the outbox');
    }
    const claimed = await claimDueMails(db, dialect, {
      claimer: this.#claimer,
      now,
      leaseUntil: new Date(nowMs + this.#timing.leaseMs).toISOString(),
      limit: this.#timing.batch,
    });
    for (const [i, mail] of claimed.entries()) {
      if (!(await this.#sendOne(mail))) {
        // The server is not taking mail: the rest of the batch waits for the next attempt too.
        for (const rest of claimed.slice(i + 1))
          await this.#retryLater(rest, 'not attempted: the mail server failed the mail before it', Date.now());
        return;
      }
    }
  }

  /** Sends one claimed mail; false when the server could not be used (try the others later). */
  async #sendOne(mail: MailOutboxRow): Promise<boolean> {
    const { db } = this.#opts.store;
    const fields = { mailId: mail.id, kind: mail.kind, orgId: mail.orgId, attempts: mail.attempts + 1 };
    try {
      await this.#opts.mailer.send({ to: mail.recipient, subject: mail.subject, text: mail.body });
    } catch (err) {
      const error = describeFailure(err, this.#opts.smtpUrl);
      if (isPermanentFailure(err)) {
        await abandonMail(db, mail.id, this.#claimer, { now: new Date().toISOString(), error });
        this.#log.warn({ ...fields, error }, 'mail refused by the mail server; not retried');
        return true;
      }
      await this.#retryLater(mail, error, Date.now());
      if (!this.#failing)
        this.#log.warn(
          { ...fields, error, server: smtpEndpoint(this.#opts.smtpUrl) },
          'mail server not reachable; mails stay queued and are retried',
        );
      this.#failing = true;
      return false;
    }
    if (this.#failing)
      this.#log.info(
        { server: smtpEndpoint(this.#opts.smtpUrl) },
        'mail server reachable again; queued mails are being sent',
      );
    this.#failing = false;
    if (!(await markMailSent(db, mail.id, this.#claimer, new Date().toISOString()))) {
      this.#log.warn(fields, 'mail sent after its claim ran out; another sender may send it again');
    } else {
      this.#log.debug(fields, 'mail sent');
    }
    return true;
  }

  async #retryLater(mail: MailOutboxRow, error: string, nowMs: number): Promise<void> {
    const next = new Date(nowMs + retryDelayMs(mail.attempts, this.#timing)).toISOString();
    await rescheduleMail(this.#opts.store.db, mail.id, this.#claimer, { nextAttemptAt: next, error });
  }
}
