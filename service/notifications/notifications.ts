import type { FastifyBaseLogger } from 'fastify';
import type { FinishedExecution } from '../history/reports.js';
import {
  enqueueMails,
  subscribersOf,
  type NotificationSwitch,
  type QueuedMail,
  type Subscriber,
} from '../store/repos/mail-outbox.repo.js';
import { getOrg } from '../store/repos/orgs.repo.js';
import type { OrgConnectorChange } from '../marketplace/installs.js';
import type { SilentAgent } from '../gateway/sweeper.js';
import { getAgentById } from '../store/repos/agents.repo.js';
import type { OrgRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { newId, nowIso } from '../util/values.js';
import { uuidV7 } from '../util/uuid-v7.js';
import {
  connectorMail,
  eventFailedMail,
  failedJobMail,
  failedRowsMail,
  heartbeatFailedMail,
  type MailText,
} from './messages.js';
import type { ServiceConfig } from '../config.js';
import type { Store } from '../store/store.js';
import { smtpEndpoint, smtpMailer } from './mailer.js';
import { MailSender, type OutboxTiming } from './outbox.js';

/** Run results that are a failed execution (`failedJobEmail`). */
const FATAL_RESULTS: ReadonlySet<string> = new Set(['FatalError', 'RecordErrorsAndFatalErrors']);
/** Run results with record failures (`failedRowsEmail`). */
const RECORD_FAILURE_RESULTS: ReadonlySet<string> = new Set(['CompletedWithErrors', 'RecordErrorsAndFatalErrors']);

export interface NotificationsOptions {
  /** False when no mail server is configured: nothing is queued. */
  enabled: boolean;
  log: FastifyBaseLogger;
  /** Prefix of the API paths in mails (FERRY_PUBLIC_URL); absent: paths alone. */
  publicUrl?: string | undefined;
  /** FERRY_HEARTBEAT_FAILED_AFTER, for the heartbeat mail's text. */
  heartbeatFailedAfterSeconds: number;
}

/**
 * The notification mails of a Service: the triggers, which queue mails only when a mail server is
 * configured, and then the loop that sends them. The log says once which it is.
 */
export function notificationMails(
  config: Pick<ServiceConfig, 'smtpUrl' | 'smtpFrom' | 'publicUrl' | 'heartbeatFailedAfter'>,
  deps: { readonly store: Store; readonly log: FastifyBaseLogger; readonly timing?: Partial<OutboxTiming> | undefined },
): { notifications: Notifications; sender: MailSender | undefined } {
  const { smtpUrl, smtpFrom, publicUrl } = config;
  const { store, log, timing } = deps;
  const notifications = new Notifications({
    enabled: smtpUrl !== undefined,
    log,
    publicUrl,
    heartbeatFailedAfterSeconds: config.heartbeatFailedAfter,
  });
  if (!smtpUrl) {
    log.info('no mail server configured (FERRY_SMTP_URL): notification mails are not sent');
    return { notifications, sender: undefined };
  }
  const sender = new MailSender({ store, mailer: smtpMailer(smtpUrl, smtpFrom), smtpUrl, log, timing });
  const server = smtpEndpoint(smtpUrl);
  log.info({ server, from: smtpFrom }, 'notification mails go through the configured mail server');
  return { notifications, sender };
}

/**
 * The notification triggers: each turns an event into one queued mail per member of the
 * Organization who switched its notification on (SPEC.md's User notification fields). The mails
 * are written to the outbox in the caller's transaction where it has one, so the event and its
 * mails are stored together; MailSender (outbox.ts) sends them.
 *
 *   runFinished report ─▶ executionFinished ─┬▶ failedJobEmail      (FatalError, RecordErrorsAndFatalErrors)
 *                                            ├▶ failedRowsEmail     (CompletedWithErrors, RecordErrorsAndFatalErrors)
 *                                            └▶ eventFailedJobEmail (an IntegrationEvent run that did not succeed,
 *                                                                    to members who got neither mail above)
 *   sweeper: → HeartbeatFailed ─▶ heartbeatFailed ─▶ heartbeatEmail
 *   Connector installed / uninstalled ─▶ connectorChanged ─▶ connectorActivationEmail
 */
export class Notifications {
  readonly #opts: NotificationsOptions;
  readonly #base: string;

  constructor(opts: NotificationsOptions) {
    this.#opts = opts;
    this.#base = (opts.publicUrl ?? '').replace(/\/+$/, '');
  }

  get enabled(): boolean {
    return this.#opts.enabled;
  }

  /** After a run's end was recorded (once per execution), inside the report's transaction. */
  readonly executionFinished = async (tx: Db, f: FinishedExecution): Promise<void> => {
    if (!this.#opts.enabled) return;
    const { execution: e, solution, agent } = f;
    const result = e.result ?? '';
    const fatal = FATAL_RESULTS.has(result);
    const recordFailures = RECORD_FAILURE_RESULTS.has(result);
    const isEvent = solution.solutionType === 'IntegrationEvent' && result !== 'CompletedSuccessfully';
    if (!fatal && !recordFailures && !isEvent) return;
    const org = await getOrg(tx, solution.orgId);
    if (!org) return;
    const mails: QueuedMail[] = [];
    const mailed = new Set<string>();
    const add = (kind: NotificationSwitch, to: readonly Subscriber[], text: MailText): void => {
      for (const s of to) {
        mailed.add(s.userId);
        mails.push({
          dedupeKey: `${kind}:execution:${e.id}:${s.userId}`,
          kind,
          orgId: org.id,
          recipient: s.email,
          ...text,
        });
      }
    };
    if (fatal)
      add(
        'failedJobEmail',
        await subscribersOf(tx, org.id, 'failedJobEmail'),
        failedJobMail(this.#base, org, solution, agent, e),
      );
    if (recordFailures)
      add(
        'failedRowsEmail',
        await subscribersOf(tx, org.id, 'failedRowsEmail'),
        failedRowsMail(this.#base, org, solution, agent, e),
      );
    if (isEvent) {
      // Not to a member who has a failed-run or failed-records mail about this execution already.
      const rest = (await subscribersOf(tx, org.id, 'eventFailedJobEmail')).filter((s) => !mailed.has(s.userId));
      add('eventFailedJobEmail', rest, eventFailedMail(this.#base, org, solution, agent, e));
    }
    await this.#queue(tx, mails, { executionId: e.id, solutionId: solution.id });
  };

  /**
   * After the sweeper moved an Agent to HeartbeatFailed (once per move), in the move's
   * transaction. The last contact names the silence, so a repeated call for the same silence
   * queues nothing new.
   */
  readonly heartbeatFailed = async (tx: Db, silent: SilentAgent): Promise<void> => {
    if (!this.#opts.enabled) return;
    const agent = await getAgentById(tx, silent.id);
    const org = await getOrg(tx, silent.orgId);
    if (!agent || !org) return;
    const to = await subscribersOf(tx, org.id, 'heartbeatEmail');
    const text = heartbeatFailedMail(this.#base, org, agent, this.#opts.heartbeatFailedAfterSeconds);
    const silence = silent.lastContactTime ?? 'never';
    const mails = to.map((s) => ({
      dedupeKey: `heartbeatEmail:agent:${agent.id}:${silence}:${s.userId}`,
      kind: 'heartbeatEmail',
      orgId: org.id,
      recipient: s.email,
      ...text,
    }));
    await this.#queue(tx, mails, { agentId: agent.id });
  };

  /** After a Connector was installed in or uninstalled from an Organization. */
  readonly connectorChanged = async (db: Db, change: OrgConnectorChange): Promise<void> => {
    if (!this.#opts.enabled) return;
    const org: OrgRow | undefined = await getOrg(db, change.orgId);
    if (!org) return;
    const to = await subscribersOf(db, org.id, 'connectorActivationEmail');
    const text = connectorMail(this.#base, org, { ...change, at: nowIso() });
    const event = newId();
    const mails = to.map((s) => ({
      dedupeKey: `connectorActivationEmail:${event}:${s.userId}`,
      kind: 'connectorActivationEmail',
      orgId: org.id,
      recipient: s.email,
      ...text,
    }));
    await this.#queue(db, mails, { connectorId: change.connectorId, operation: change.operation });
  };

  async #queue(db: Db, mails: readonly QueuedMail[], about: Record<string, unknown>): Promise<void> {
    if (mails.length === 0) return;
    const queued = await enqueueMails(db, mails, () => uuidV7(), nowIso());
    this.#opts.log.debug(
      { ...about, kinds: [...new Set(mails.map((m) => m.kind))], queued },
      'notification mails queued',
    );
  }
}
