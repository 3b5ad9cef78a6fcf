import { AccessCache } from './access-cache.js';
import type { FastifyBaseLogger } from 'fastify';
import { sql } from 'kysely';
import { FerryError } from '../../src/errors/ferry-error.js';
import type { TakeMessagesRequest } from '../../src/protocol/events.js';
import type { AgentCommands } from '../agents/commands.js';
import { PeriodicJob } from '../jobs/periodic-job.js';
import { doneMessages, pruneIdempotencyKeys, releaseRun, takeMessages } from '../store/repos/event-messages.repo.js';
import type { AgentRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import type { Store } from '../store/store.js';

/** The endpoint a stored message belongs to, as the intake hands it on. */
export interface StoredOn {
  readonly endpointId: number;
  readonly orgId: number;
  readonly solutionId: string;
}

export interface EventMessagesOptions {
  readonly store: Store;
  readonly commands: AgentCommands;
  readonly log: FastifyBaseLogger;
  /** How long a run holds the messages it took before they may be taken again (default 5 minutes). */
  readonly leaseMs?: number;
  /** How often queues that nobody takes are looked for (default 30 s); 0: never. */
  readonly sweepMs?: number;
}

/** How long after a run's end the Agent is woken for the messages it gave back (the report's commit first). */
const AFTER_RELEASE_MS = 250;

/** How long an `Idempotency-Key` is remembered: 24 hours and one more, so that "at least 24 h" holds. */
const IDEMPOTENCY_KEPT_MS = 25 * 3600_000;

/**
 * The Service's side of message delivery (docs/events.md; the Agent's side is
 * src/solutions/event-runs.ts):
 *
 *   stored (intake, after its commit) ─▶ wake the Solution's Agent: messagesWaiting, at most one in
 *        flight per Solution, and one more after it when messages came meanwhile
 *   take (Agent, HTTP) ─▶ its `done` leave the queue ─▶ the next oldest are leased to its run
 *   runFinished of an event run ─▶ what the run still held goes back ─▶ wake again
 *   Agent connected ─▶ wake every Solution of it with messages queued
 *   every 30 s ─▶ wake the Solutions whose oldest message no run holds is older than 30 s (a
 *        wake-up lost with a channel, a lease that passed); forget idempotency keys past 25 h
 *
 * On replicas the wake-up travels the command bus like every command; takes go to any replica.
 */
export class EventMessages {
  /** Solutions with a wake-up in flight; `again` when messages were stored meanwhile. */
  readonly #waking = new Map<string, 'sending' | 'again'>();
  readonly #sweep: PeriodicJob | undefined;
  readonly #leaseMs: number;
  /** What message POSTs' admissions read, kept for a second (access-cache.ts); dropped on every write to it. */
  readonly access = new AccessCache();
  readonly #unfollow: () => void;

  constructor(private readonly opts: EventMessagesOptions) {
    this.#leaseMs = opts.leaseMs ?? 5 * 60_000;
    this.#unfollow = this.access.follow(opts.store.writes);
    const sweepMs = opts.sweepMs ?? 30_000;
    this.#sweep =
      sweepMs > 0
        ? new PeriodicJob({
            intervalMs: sweepMs,
            tick: () => this.#sweepOnce(sweepMs),
            log: opts.log.child({ component: 'events' }),
            failed: 'event queues not looked at',
            level: 'warn',
          })
        : undefined;
  }

  start(): void {
    this.#sweep?.start();
  }

  async stop(): Promise<void> {
    this.#unfollow();
    await this.#sweep?.stop();
  }

  /** Messages were committed on this endpoint: its Solution's Agent is told. */
  stored(on: StoredOn): void {
    this.wake(on.solutionId);
  }

  /** Tells the Solution's Agent that messages wait (coalesced: one in flight, one more after it). */
  wake(solutionId: string): void {
    if (this.#waking.has(solutionId)) {
      this.#waking.set(solutionId, 'again');
      return;
    }
    this.#waking.set(solutionId, 'sending');
    void this.#send(solutionId).finally(() => {
      const again = this.#waking.get(solutionId) === 'again';
      this.#waking.delete(solutionId);
      if (again) this.wake(solutionId);
    });
  }

  /** An Agent connected: the Solutions of it with messages queued are woken. */
  connected(agentId: string): void {
    this.#connected(agentId).catch((err: unknown) =>
      this.opts.log.warn({ err, agentId }, 'Event Solutions not woken after a connect'),
    );
  }

  async #connected(agentId: string): Promise<void> {
    const rows = await this.opts.store.db
      .selectFrom('messageEndpoints as e')
      .innerJoin('solutions as s', 's.id', 'e.solutionId')
      .select('e.solutionId')
      .distinct()
      .where('s.agentId', '=', agentId)
      .where('e.queued', '>', 0)
      .execute();
    for (const r of rows) this.wake(r.solutionId);
  }

  /**
   * The Agent's take: acknowledges `done` (they leave the queue), then leases the next `max`
   * messages of the Map's endpoint to the run. Answered as JSON text: each stored body goes out as
   * it is, never parsed here. Refused (409) when the Solution is not this Agent's or the Map has no
   * Message Endpoint; a disabled Solution hands out nothing.
   */
  async take(agent: AgentRow, req: TakeMessagesRequest & { done: number[] }): Promise<string> {
    const db = this.opts.store.db;
    const endpoint = await db
      .selectFrom('messageEndpoints as e')
      .innerJoin('solutions as s', 's.id', 'e.solutionId')
      .select(['e.id', 's.agentId', 's.isDisabled'])
      .where('e.solutionId', '=', req.solutionId.toLowerCase())
      .where('s.orgId', '=', agent.orgId)
      .where('e.mapId', '=', req.mapId)
      .where('e.kind', '=', 'message')
      .executeTakeFirst();
    if (!endpoint)
      throw new FerryError(
        'API_CONFLICT',
        `Map ${req.mapId} of Solution ${req.solutionId} has no Message Endpoint: prepare the Solution.`,
        { details: { solutionId: req.solutionId, mapId: req.mapId } },
      );
    if (req.done.length > 0) await doneMessages(db, endpoint.id, req.runId.toLowerCase(), req.done);
    if (endpoint.agentId !== agent.id)
      throw new FerryError(
        'API_CONFLICT',
        `Solution ${req.solutionId} runs on another Agent now; its messages are that Agent's.`,
        { details: { solutionId: req.solutionId, agentId: agent.id } },
      );
    if (endpoint.isDisabled || req.max === 0) return '{"messages":[]}';
    const taken = await takeMessages(db, this.opts.store.dialect, {
      endpointId: endpoint.id,
      runId: req.runId.toLowerCase(),
      max: req.max,
      nowMs: Date.now(),
      leaseMs: this.#leaseMs,
    });
    return `{"messages":[${taken.map((m) => `{"id":${m.id},"body":${m.body}}`).join(',')}]}`;
  }

  /**
   * An event run ended (its runFinished, in the report's transaction): the messages it still held
   * go back to the queue, and its Agent is woken for them once the report is committed.
   */
  async runEnded(tx: Db, solutionId: string, runId: string): Promise<void> {
    const back = await releaseRun(tx, runId.toLowerCase());
    if (back > 0) setTimeout(() => this.wake(solutionId), AFTER_RELEASE_MS).unref();
  }

  async #send(solutionId: string): Promise<void> {
    const row = await this.opts.store.db
      .selectFrom('solutions')
      .select(['agentId', 'isDisabled'])
      .where('id', '=', solutionId)
      .executeTakeFirst();
    if (!row?.agentId || row.isDisabled) return;
    try {
      await this.opts.commands.send(row.agentId, { type: 'messagesWaiting', solutionId });
    } catch (err) {
      // Offline, or an Agent without the command: the messages wait for its next connect.
      this.opts.log.debug({ err, solutionId, agentId: row.agentId }, 'Agent not told of waiting messages');
    }
  }

  async #sweepOnce(olderThanMs: number): Promise<void> {
    const now = Date.now();
    // A retried POST counts once for at least 24 hours after the first.
    await pruneIdempotencyKeys(this.opts.store.db, now - IDEMPOTENCY_KEPT_MS);
    // Replies of `respond-async` requests are kept a day.
    await this.opts.store.db
      .deleteFrom('eventReplies')
      .where('createdMs', '<', now - 24 * 3600_000)
      .execute();
    const rows = await this.opts.store.db
      .selectFrom('messageEndpoints as e')
      .select('e.solutionId')
      .distinct()
      .where('e.queued', '>', 0)
      .where((eb) =>
        eb.exists(
          eb
            .selectFrom('eventMessages as m')
            .select(sql.lit(1).as('one'))
            .whereRef('m.endpointId', '=', 'e.id')
            .where('m.receivedMs', '<', now - olderThanMs)
            .where((eb) => eb.or([eb('m.leaseUntilMs', 'is', null), eb('m.leaseUntilMs', '<', now)])),
        ),
      )
      .limit(1000)
      .execute();
    for (const r of rows) this.wake(r.solutionId);
  }
}
