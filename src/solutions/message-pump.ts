/**
 * The messages of one message Map, as the source of its run on the Agent (docs/events.md):
 *
 *   take(max 20, done: written IDs) ──▶ batch k ──yield──▶ runMap writes it ──▶ progress(count)
 *        ▲ the next take leaves as batch k is yielded              │ batch k's IDs are done
 *        └──────────── done IDs ride on the next take ◀────────────┘ (errors and copies in the outbox first)
 *
 * A batch is taken while the one before is written (and runMap reads one ahead), so several are
 * in flight and a take's round trip does not bound throughput; a batch is 20 messages, and while
 * takes come back full (a deep queue) the next is twice as large, up to 200, so that a backlog
 * drains at the cost of one take and one write per 200 messages rather than per 20; takes leave one after another, so
 * batches come in the queue's order. The run stops taking when the queue is empty and no wake-up
 * came since the last take, or after `cap` messages (the run ends and the next one goes on).
 * Nothing is removed from the queue before the Map wrote it: a run that dies leaves its messages
 * leased, and the Service gives them back when the run's end arrives or the lease passes.
 */
import type { RecordBatch } from '../connectors/sdk.js';
import { FerryError, isFerryError } from '../errors/ferry-error.js';
import { messageRecord } from '../maps/blocks/wait-for-message.block.js';
import type { Block } from '../protocol/map.js';
import type { ErrorCode } from '../errors/codes.js';
import { MAX_TAKE, MESSAGE_BATCH, type TakeMessagesRequest, type TakenMessage } from '../protocol/events.js';

/**
 * A message that came in a form the Map cannot read (a broker's delivery that is not JSON or XML):
 * a record error of the run, and acknowledged with the batch (brokers/broker-messages.ts).
 */
export interface InvalidMessage {
  readonly code: ErrorCode;
  readonly message: string;
  /** The start of the body as it came, for the record error's detail. */
  readonly body: string;
}

/** A taken message; `invalid` (with an empty body) when it could not be read. */
export type PumpMessage = TakenMessage & { readonly invalid?: InvalidMessage };

/** Leases the next messages of a Map to a run, after acknowledging `done` (the Service's take, or a broker's). */
export type MessageTaker = (req: TakeMessagesRequest, signal: AbortSignal) => Promise<PumpMessage[]>;

export interface MessagePumpOptions {
  readonly take: MessageTaker;
  readonly solutionId: string;
  readonly mapId: number;
  readonly runId: string;
  /** The Map's Wait For Message Block: each message becomes its record. */
  readonly starter: Block;
  /** The most messages one run takes (default 20,000); the run ends and another takes the rest. */
  readonly cap?: number;
  /** Writes the errors and failed-record copies held, before their messages are acknowledged. */
  readonly beforeAck?: () => void;
  /** The first batch, taken before the run began (event-runs.ts); absent: the pump takes it. */
  readonly first?: readonly PumpMessage[];
  /** A message that could not be read: its record error (it is acknowledged with its batch). */
  readonly onInvalid?: (invalid: InvalidMessage) => void;
  /** How long a take may keep failing (the Service restarting) before the run fails (default 30 s). */
  readonly retryMs?: number;
  readonly signal: AbortSignal;
}

export class MessagePump {
  /** A wake-up came since the last take left: an empty answer does not end the run. */
  #more = false;
  /** Written batches' IDs not sent yet. */
  #done: number[] = [];
  /** Batches yielded and not yet written, with the record count at their end. */
  readonly #open: Array<{ ids: number[]; end: number }> = [];
  #taken = 0;
  #capped = false;
  /** The next take's size: 20, doubling up to 200 while takes come back full (a deep queue). */
  #size = MESSAGE_BATCH;
  /** Records counted as written so far (the batches acknowledged). */
  #written = 0;
  #invalid = 0;

  constructor(private readonly opts: MessagePumpOptions) {}

  /** Messages were stored since: the run takes again before it ends. */
  wake(): void {
    this.#more = true;
  }

  /** How many messages this run took. */
  get taken(): number {
    return this.#taken;
  }

  /** How many of them could not be read (record errors that never reached the Map). */
  get invalid(): number {
    return this.#invalid;
  }

  /** The run stopped at its cap with messages perhaps left, or a wake-up came after its last take. */
  get more(): boolean {
    return this.#capped || this.#more;
  }

  /** runMap's `source`. */
  async *batches(): AsyncGenerator<RecordBatch, void, undefined> {
    const cap = this.opts.cap ?? 20_000;
    let next: Promise<readonly PumpMessage[]> = this.opts.first?.length
      ? Promise.resolve(this.opts.first)
      : this.#take();
    for (;;) {
      const got = await next;
      if (got.length === 0) {
        if (!this.#more || this.opts.signal.aborted) return;
        next = this.#take();
        continue;
      }
      this.#taken += got.length;
      const readable = this.#readable(got);
      if (readable.length > 0) {
        const before = this.#open.at(-1)?.end ?? this.#written;
        this.#open.push({ ids: got.map((m) => m.id), end: before + readable.length });
      } else {
        // Nothing for the Map: acknowledged with the next take, once their errors are out.
        this.opts.beforeAck?.();
        this.#done.push(...got.map((m) => m.id));
      }
      if (this.#taken >= cap) {
        this.#capped = true;
        next = Promise.resolve([]);
      } else {
        next = this.#take();
        // Awaited on the next turn; a run that ends before then must not leave it unhandled.
        next.catch(() => undefined);
      }
      if (readable.length > 0) yield readable.map((m) => messageRecord(this.opts.starter, m.body));
      if (this.#capped) {
        await next;
        return;
      }
    }
  }

  /** The messages the Map can read; the others become record errors here. */
  #readable(got: readonly PumpMessage[]): readonly PumpMessage[] {
    if (!got.some((m) => m.invalid)) return got;
    for (const m of got) {
      if (!m.invalid) continue;
      this.#invalid += 1;
      this.opts.onInvalid?.(m.invalid);
    }
    return got.filter((m) => !m.invalid);
  }

  /** runMap's progress: the batches whose records are all counted are written. */
  progress(processed: number): void {
    let written = false;
    while (this.#open[0] && this.#open[0].end <= processed) {
      const b = this.#open.shift() as { ids: number[]; end: number };
      this.#written = b.end;
      this.#done.push(...b.ids);
      written = true;
    }
    if (written) this.opts.beforeAck?.();
  }

  /** Sends the acknowledgements not sent yet (at the run's end). */
  async flush(): Promise<void> {
    if (this.#done.length === 0) return;
    await this.#call(0);
  }

  #take(): Promise<PumpMessage[]> {
    this.#more = false;
    const size = this.#size;
    return this.#call(size).then((got) => {
      this.#size = got.length >= size ? Math.min(size * 2, MAX_TAKE) : MESSAGE_BATCH;
      return got;
    });
  }

  async #call(max: number): Promise<PumpMessage[]> {
    const done = this.#done.splice(0);
    const req: TakeMessagesRequest = {
      solutionId: this.opts.solutionId,
      mapId: this.opts.mapId,
      runId: this.opts.runId,
      max,
      done,
    };
    const until = Date.now() + (this.opts.retryMs ?? 30_000);
    for (let wait = 250; ; wait = Math.min(wait * 2, 5_000)) {
      try {
        return await this.opts.take(req, this.opts.signal);
      } catch (err) {
        if (this.opts.signal.aborted || Date.now() + wait > until || refused(err)) {
          // Not acknowledged: the Service gives them back when the run's end arrives.
          throw err instanceof Error ? err : new FerryError('AGT_SERVICE_UNREACHABLE', String(err));
        }
        await new Promise((r) => setTimeout(r, wait));
      }
    }
  }
}

/** An answer that a retry would only repeat (the Map or the Solution is not this Agent's any more). */
function refused(err: unknown): boolean {
  return isFerryError(err) && err.code !== 'AGT_SERVICE_UNREACHABLE';
}
