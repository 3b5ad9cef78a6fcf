import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { FerryError } from '../../src/errors/ferry-error.js';
import type { Database } from '../store/schema.js';
import { acceptMessages, type AcceptGroup, type AcceptOutcome } from '../store/repos/event-messages.repo.js';
import type { EventMessages, StoredOn } from './events.js';

/** One POST's messages, and the endpoint and Solution they go to. */
export interface IntakeGroup extends AcceptGroup {
  readonly orgId: number;
  readonly solutionId: string;
}

export interface IntakeOptions {
  readonly db: Kysely<Database>;
  /** Told after each commit of every endpoint that got messages. */
  readonly events: Pick<EventMessages, 'stored'>;
  /** The most messages an endpoint's queue may hold (FERRY_EVENT_QUEUE_LIMIT). */
  readonly queueLimit: number;
  readonly log: FastifyBaseLogger;
  /** The most groups one commit takes (default 500). */
  readonly maxGroups?: number;
  /** About the most characters of messages one commit takes (default 32 Mi); a larger group goes alone. */
  readonly maxChars?: number;
  readonly now?: () => number;
}

interface Waiting {
  readonly group: IntakeGroup;
  readonly chars: number;
  resolve(outcome: AcceptOutcome): void;
  reject(err: unknown): void;
}

/**
 * The group commit of message POSTs (docs/events.md, "Throughput"): every POST waits in one queue,
 * and one flush at a time stores all that waited in a single transaction, so 32 senders at once
 * cost about one commit, not 32; each caller is answered after the commit that holds its messages.
 *
 *   POST ─┐                        ┌─ stored    → 200 (after the commit)
 *   POST ─┼─► queue ─► flush: acceptMessages(all, one transaction) ─┼─ duplicate → 200, duplicate
 *   POST ─┘      ▲        │ then events.stored(endpoint), once each  └─ full      → 429
 *                └────────┘ the POSTs that came meanwhile: the next flush
 *
 * A flush that fails stored nothing (one transaction): each of its callers gets the error.
 */
export class MessageIntake {
  readonly #opts: IntakeOptions;
  readonly #maxGroups: number;
  readonly #maxChars: number;
  readonly #now: () => number;
  #queue: Waiting[] = [];
  #flushing: Promise<void> | undefined;
  #closed = false;

  constructor(opts: IntakeOptions) {
    this.#opts = opts;
    this.#maxGroups = opts.maxGroups ?? 500;
    this.#maxChars = opts.maxChars ?? 32 * 1024 * 1024;
    this.#now = opts.now ?? Date.now;
  }

  /** Stores the group with the next flush; resolves once it is committed (or refused). */
  accept(group: IntakeGroup): Promise<AcceptOutcome> {
    if (this.#closed) {
      return Promise.reject(
        new FerryError('SVC_UNAVAILABLE', 'The Service is shutting down; send the messages again in a few seconds.', {
          details: { retryAfterSeconds: 5 },
        }),
      );
    }
    const chars = group.bodies.reduce((n, b) => n + b.length, 0);
    return new Promise<AcceptOutcome>((resolve, reject) => {
      this.#queue.push({ group, chars, resolve, reject });
      // The POSTs of this turn of the event loop join the first flush too.
      this.#flushing ??= new Promise<void>((started) => setImmediate(started)).then(() => this.#drain());
    });
  }

  /** Takes no more groups and waits for the flushes of those it has. */
  async close(): Promise<void> {
    this.#closed = true;
    await this.#flushing;
  }

  async #drain(): Promise<void> {
    try {
      while (this.#queue.length > 0) await this.#flush(this.#take());
    } finally {
      this.#flushing = undefined;
    }
  }

  /** The oldest groups, up to the bounds of one flush (always at least one). */
  #take(): Waiting[] {
    let chars = 0;
    let n = 0;
    for (const w of this.#queue) {
      if (n > 0 && (n >= this.#maxGroups || chars + w.chars > this.#maxChars)) break;
      chars += w.chars;
      n += 1;
    }
    return this.#queue.splice(0, n);
  }

  async #flush(batch: Waiting[]): Promise<void> {
    let outcomes: AcceptOutcome[];
    try {
      outcomes = await acceptMessages(
        this.#opts.db,
        batch.map((w) => w.group),
        this.#opts.queueLimit,
        this.#now(),
      );
    } catch (err) {
      this.#opts.log.error({ err, groups: batch.length }, 'event messages not stored');
      const failed = new FerryError(
        'SVC_STORE',
        'The messages could not be stored (the store failed), and none of them was: send them again.',
        { cause: err },
      );
      for (const w of batch) w.reject(failed);
      return;
    }
    this.#wake(batch, outcomes);
    batch.forEach((w, i) => w.resolve(outcomes[i] ?? { status: 'gone' }));
  }

  /** Each endpoint that got messages, once: its Solution's Agent is told. */
  #wake(batch: readonly Waiting[], outcomes: readonly AcceptOutcome[]): void {
    const woken = new Map<number, StoredOn>();
    batch.forEach(({ group }, i) => {
      if (outcomes[i]?.status !== 'stored' || woken.has(group.endpointId)) return;
      woken.set(group.endpointId, { endpointId: group.endpointId, orgId: group.orgId, solutionId: group.solutionId });
    });
    for (const on of woken.values()) {
      try {
        this.#opts.events.stored(on);
      } catch (err) {
        // Stored is stored: the Agent finds the messages at its next take all the same.
        this.#opts.log.warn({ err, endpointId: on.endpointId }, 'the Agent was not told of new messages');
      }
    }
  }
}
