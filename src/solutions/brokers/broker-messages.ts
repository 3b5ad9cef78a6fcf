/**
 * The messages of one broker-fed Message Map between its consumption and its runs: deliveries come
 * in as the broker sends them (at most `prefetch` unsettled), runs take them with the same call as
 * they take a Message Endpoint's (message-pump.ts), and a delivery is settled only once every
 * message it carried was written or recorded as an error (`done` of a later take).
 *
 *   broker ─deliver─▶ read (JSON, an array = several, XML) ─▶ pending, numbered 1, 2, 3 …
 *                                                             │ first one since the last take: notify (a run starts or takes again)
 *   run ─take {runId, max, done}─▶ done: leased → its delivery ack (reject: an unreadable one)
 *                               ─▶ another runId: what the run before held goes back to the front
 *                               ─▶ up to max pending, leased to the run (none: wait a moment for one)
 *   consumption lost or closed ─▶ pending and leased dropped: the broker delivers them again;
 *                                 a run that held some fails (RUN_BROKER_UNAVAILABLE) on its next take
 *
 * One event run of a Solution runs at a time (event-runs.ts), so a take with a new run ID means
 * the run before has ended: its unacknowledged messages are handed out again first, in order,
 * as the Service does with a failed run's leased messages.
 */
import { FerryError, isFerryError } from '../../errors/ferry-error.js';
import type { Delivery } from '../../connectors/consume-types.js';
import type { TakeMessagesRequest } from '../../protocol/events.js';
import { messageObjects } from '../../util/message-body.js';
import type { InvalidMessage, PumpMessage } from '../message-pump.js';

/** How much of an unreadable body its record error keeps. */
const INVALID_BODY_CHARS = 16_000;

interface HeldDelivery {
  readonly delivery: Delivery;
  /** Its messages not yet written. */
  left: number;
}

interface Held {
  readonly id: number;
  readonly body: Record<string, unknown>;
  readonly invalid?: InvalidMessage;
  readonly from: HeldDelivery;
}

export interface BrokerMessagesOptions {
  /** Messages came while no take was waiting: a run should take them (EventRuns.waiting). */
  readonly notify: () => void;
  /** How long a take that finds nothing waits for a delivery before it answers none (default 250 ms): a run does not end while deliveries are a moment late. */
  readonly lingerMs?: number;
  /** Says where the messages come from, in errors. */
  readonly describe: string;
}

export class BrokerMessages {
  #nextId = 1;
  /** Counts consumptions begun and ended: a run that began under another one lost its deliveries. */
  #generation = 0;
  #up = false;
  #pending: Held[] = [];
  readonly #leased = new Map<number, Held>();
  #run: { readonly runId: string; readonly generation: number } | undefined;
  #notified = false;
  readonly #waiting = new Set<() => void>();
  #lastLoss: string | undefined;

  constructor(private readonly opts: BrokerMessagesOptions) {}

  /** Whether a consumption is feeding it now. */
  get up(): boolean {
    return this.#up;
  }

  /** Messages held and not handed out, and handed out and not written. */
  get counts(): { pending: number; leased: number } {
    return { pending: this.#pending.length, leased: this.#leased.size };
  }

  /** A consumption began. */
  opened(): void {
    this.#generation += 1;
    this.#up = true;
    this.#lastLoss = undefined;
  }

  /** The consumption ended (lost, or closed): what it delivered and nobody settled, the broker delivers again. */
  ended(why?: string): void {
    if (!this.#up) return;
    this.#generation += 1;
    this.#up = false;
    this.#lastLoss = why;
    this.#pending = [];
    this.#leased.clear();
    this.#wakeTakes();
  }

  /** A delivery: its messages join the pending ones (an unreadable body is one invalid message). */
  deliver(delivery: Delivery): void {
    if (!this.#up) return;
    const from: HeldDelivery = { delivery, left: 0 };
    let bodies: Array<Record<string, unknown>>;
    try {
      bodies = messageObjects(delivery.body, delivery.contentType);
    } catch (err) {
      // Neither JSON nor XML is a body that cannot be read, like any other (the HTTP path's 415 has no sender here).
      const e = isFerryError(err) ? err : new FerryError('EVT_MESSAGE_INVALID', String(err));
      const code = e.code === 'EVT_MESSAGE_TOO_LARGE' ? e.code : 'EVT_MESSAGE_INVALID';
      const body = delivery.body
        .subarray(0, INVALID_BODY_CHARS * 4)
        .toString('utf8')
        .slice(0, INVALID_BODY_CHARS);
      from.left = 1;
      this.#pending.push({ id: this.#nextId++, body: {}, invalid: { code, message: e.message, body }, from });
      this.#arrived();
      return;
    }
    from.left = bodies.length;
    for (const body of bodies) this.#pending.push({ id: this.#nextId++, body, from });
    this.#arrived();
  }

  /** The MessageTaker of the Map (message-pump.ts): acknowledges `done`, then leases up to `max`. */
  async take(req: TakeMessagesRequest, signal: AbortSignal): Promise<PumpMessage[]> {
    this.#settle(req.done ?? []);
    if (this.#run?.runId !== req.runId) {
      this.#handBack();
      this.#run = { runId: req.runId, generation: this.#generation };
    }
    if (req.max === 0) return [];
    if (this.#pending.length === 0 && this.#up) await this.#linger(signal);
    this.#notified = false;
    if (this.#run.generation !== this.#generation) throw this.#lost();
    const out = this.#pending.splice(0, req.max);
    for (const h of out) this.#leased.set(h.id, h);
    return out.map((h) => (h.invalid ? { id: h.id, body: h.body, invalid: h.invalid } : { id: h.id, body: h.body }));
  }

  #settle(done: readonly number[]): void {
    for (const id of done) {
      const h = this.#leased.get(id);
      if (!h) continue;
      this.#leased.delete(id);
      h.from.left -= 1;
      if (h.from.left > 0) continue;
      if (h.invalid) h.from.delivery.reject();
      else h.from.delivery.ack();
    }
  }

  /** What a run that ended held and did not write goes back to the front, in order. */
  #handBack(): void {
    if (this.#leased.size === 0) return;
    const back = [...this.#leased.values()].sort((a, b) => a.id - b.id);
    this.#leased.clear();
    this.#pending = back.concat(this.#pending);
  }

  #arrived(): void {
    this.#wakeTakes();
    if (this.#notified) return;
    this.#notified = true;
    this.opts.notify();
  }

  #wakeTakes(): void {
    for (const wake of this.#waiting) wake();
    this.#waiting.clear();
  }

  #linger(signal: AbortSignal): Promise<void> {
    return new Promise((resolve) => {
      const done = (): void => {
        clearTimeout(timer);
        signal.removeEventListener('abort', done);
        this.#waiting.delete(done);
        resolve();
      };
      const timer = setTimeout(done, this.opts.lingerMs ?? 250);
      signal.addEventListener('abort', done, { once: true });
      this.#waiting.add(done);
    });
  }

  #lost(): FerryError {
    const why = this.#lastLoss ? `: ${this.#lastLoss}` : '';
    return new FerryError(
      'RUN_BROKER_UNAVAILABLE',
      `The connection to ${this.opts.describe} was lost during the run${why}. The messages it had taken and not acknowledged are delivered again by the broker (a Map that writes by key writes them once).`,
      { details: { source: this.opts.describe } },
    );
  }
}
