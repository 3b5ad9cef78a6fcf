/**
 * When an Event Solution runs on the Agent (docs/events.md):
 *
 *   messagesWaiting ─▶ a run of it in progress? ─ event run: its pumps take again before they end
 *        │                                       └ another run: after it ends
 *        └▶ probe: the first batch of each message Map, leased to a new run ID
 *              ├ none: no run (no empty execution in History); a wake-up during the probe probes again
 *              └ some: the run begins with them (SolutionRunner), its Maps in order, each until its queue is empty
 *   run ends ─▶ more stored meanwhile, or it stopped at its cap: probe again at once
 *            └▶ ended in a fatal error (target down, Service unreachable): its messages went back to
 *               the queue; probe again after 5 s, doubling up to 5 minutes while it keeps failing
 */
import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import { FerryError, isFerryError } from '../errors/ferry-error.js';
import { MESSAGE_BATCH, type RunRequestResult } from '../protocol/events.js';
import type { MapRecordError, RunOptions } from '../maps/runtime/run-types.js';
import type { ActiveRun } from './runner-types.js';
import { MessagePump, type MessageTaker, type PumpMessage } from './message-pump.js';
import type { Block } from '../protocol/map.js';
import type { RunRecordError } from '../protocol/solutions.js';

/** What the event runs need of the runner. */
export interface EventRunHost {
  /** Whether a run of the Solution is queued or executing, and whether it is an event run. */
  active(solutionId: string): 'event' | 'other' | undefined;
  /** Wakes the pumps of the Solution's event run in progress. */
  wake(solutionId: string): void;
  /** The Solution's enabled message Maps, in order; undefined when this Agent does not hold it. */
  messageMaps(solutionId: string): readonly number[] | undefined;
  /** Begins an event run with the first batch each Map gave (Maps without one start by taking). */
  begin(solutionId: string, runId: string, first: ReadonlyMap<number, PumpMessage[]>): void;
}

/** A Map that begins with Wait For Message: an event run takes its endpoint's messages. */
export function isMessageMap(model: unknown): boolean {
  const first = (model as { blocks?: Array<{ blockType?: unknown }> } | null)?.blocks?.[0];
  return first?.blockType === 'WaitForMessage';
}

const FIRST_RETRY_MS = 5_000;
const MAX_RETRY_MS = 5 * 60_000;

export class EventRuns {
  /** Solutions being probed; true when a wake-up came meanwhile. */
  readonly #probing = new Map<string, boolean>();
  /** Wake-ups that came while another run of the Solution ran. */
  readonly #after = new Set<string>();
  readonly #failures = new Map<string, number>();
  /** Solutions whose last failure was the Service out of reach: a wake-up from it ends the pause. */
  readonly #unreachable = new Set<string>();
  readonly #timers = new Map<string, NodeJS.Timeout>();
  readonly #closing = new AbortController();

  constructor(
    private readonly host: EventRunHost,
    private readonly take: MessageTaker,
    private readonly log: Logger,
  ) {}

  /** messagesWaiting: whether a run takes the Solution's messages now (or is being started). */
  waiting(solutionId: string): { draining: boolean } {
    const active = this.host.active(solutionId);
    if (active === 'event') {
      this.host.wake(solutionId);
      return { draining: true };
    }
    if (active === 'other') {
      this.#after.add(solutionId);
      return { draining: false };
    }
    if (this.host.messageMaps(solutionId) === undefined) {
      throw new FerryError(
        'AGT_SOLUTION_NOT_HELD',
        `This Agent does not hold Solution ${solutionId}; it is sent when the Solution is prepared for this Agent.`,
        { details: { solutionId } },
      );
    }
    if (this.#probing.has(solutionId)) {
      this.#probing.set(solutionId, true);
      return { draining: true };
    }
    // Waiting out a failure: the retry takes these messages too; unless the failure was the Service
    // out of reach, which this wake-up shows is over (after an outage, the one after the connect).
    const timer = this.#timers.get(solutionId);
    if (timer && !this.#unreachable.has(solutionId)) return { draining: false };
    if (timer) {
      clearTimeout(timer);
      this.#timers.delete(solutionId);
      this.#failures.delete(solutionId);
      this.#unreachable.delete(solutionId);
    }
    this.#probe(solutionId);
    return { draining: true };
  }

  /** A run of the Solution ended: `event` runs say whether more may wait and whether they failed. */
  ended(
    solutionId: string,
    end: { event: boolean; more: boolean; fatal: boolean; serviceUnreachable?: boolean },
  ): void {
    const after = this.#after.delete(solutionId);
    if (end.event && end.fatal) {
      if (end.serviceUnreachable) this.#unreachable.add(solutionId);
      else this.#unreachable.delete(solutionId);
      const n = (this.#failures.get(solutionId) ?? 0) + 1;
      this.#failures.set(solutionId, n);
      this.#later(solutionId, Math.min(FIRST_RETRY_MS * 2 ** (n - 1), MAX_RETRY_MS));
      return;
    }
    if (end.event) {
      this.#failures.delete(solutionId);
      this.#unreachable.delete(solutionId);
    }
    if (after || (end.event && end.more)) this.#probe(solutionId);
  }

  close(): void {
    this.#closing.abort();
    for (const t of this.#timers.values()) clearTimeout(t);
    this.#timers.clear();
  }

  #later(solutionId: string, ms: number): void {
    if (this.#timers.has(solutionId) || this.#closing.signal.aborted) return;
    this.log.info({ solutionId, retryInMs: ms }, 'event messages are taken again after a pause');
    const t = setTimeout(() => {
      this.#timers.delete(solutionId);
      if (this.host.active(solutionId) === undefined) this.#probe(solutionId);
    }, ms);
    t.unref();
    this.#timers.set(solutionId, t);
  }

  #probe(solutionId: string): void {
    if (this.#probing.has(solutionId) || this.#closing.signal.aborted) return;
    this.#probing.set(solutionId, false);
    void this.#firstBatches(solutionId)
      .then((found) => {
        const again = this.#probing.get(solutionId) === true;
        this.#probing.delete(solutionId);
        if (found) this.host.begin(solutionId, found.runId, found.first);
        else if (again) this.#probe(solutionId);
      })
      .catch((err: unknown) => {
        this.#probing.delete(solutionId);
        if (this.#closing.signal.aborted) return;
        this.log.warn({ err, solutionId }, 'event messages could not be taken');
        if (isFerryError(err) && err.code === 'AGT_SERVICE_UNREACHABLE') this.#unreachable.add(solutionId);
        const n = (this.#failures.get(solutionId) ?? 0) + 1;
        this.#failures.set(solutionId, n);
        this.#later(solutionId, Math.min(FIRST_RETRY_MS * 2 ** (n - 1), MAX_RETRY_MS));
      });
  }

  async #firstBatches(solutionId: string): Promise<{ runId: string; first: Map<number, PumpMessage[]> } | undefined> {
    // A run of it may have begun meanwhile (a start, a schedule): it is woken, or runs us after.
    const active = this.host.active(solutionId);
    if (active !== undefined) {
      if (active === 'event') this.host.wake(solutionId);
      else this.#after.add(solutionId);
      return undefined;
    }
    const maps = this.host.messageMaps(solutionId) ?? [];
    const runId = randomUUID();
    const first = new Map<number, PumpMessage[]>();
    for (const mapId of maps) {
      const got = await this.take({ solutionId, mapId, runId, max: MESSAGE_BATCH, done: [] }, this.#closing.signal);
      if (got.length > 0) first.set(mapId, got);
    }
    return first.size > 0 ? { runId, first } : undefined;
  }
}

/**
 * An event run's source for one message Map (message-pump.ts); undefined for every other run. A
 * batch's record errors and failed-record copies are in the outbox before its messages are
 * acknowledged; a message that cannot be read is a record error of its own.
 */
export function eventPump(
  run: ActiveRun,
  take: MessageTaker | undefined,
  opts: {
    solution: { readonly solutionId: string };
    map: { readonly mapId: number; readonly name: string };
    /** The Map's opened run: its starter, the Wait For Message Block, makes each message a record. */
    handle: { readonly plan: { readonly starter: Block } };
    signal: AbortSignal;
    onError: (e: RunRecordError) => void;
    /** The run's failed-record copies on their way to the Service. */
    cloud: { flush(): void };
  },
): MessagePump | undefined {
  const { map } = opts;
  const starter = opts.handle.plan.starter;
  if (run.trigger !== 'event' || run.request || !take) return undefined;
  const pump = new MessagePump({
    take,
    solutionId: opts.solution.solutionId,
    mapId: map.mapId,
    runId: run.runId,
    starter,
    first: run.first?.get(map.mapId) ?? [],
    signal: AbortSignal.any([opts.signal, run.controller.signal]),
    beforeAck: () => {
      opts.cloud.flush();
      run.flushErrors?.();
    },
    onInvalid: (invalid) =>
      opts.onError({
        id: randomUUID(),
        mapId: map.mapId,
        mapName: map.name.slice(0, 500),
        sourceEntity: starter.entity ?? starter.name,
        blockId: starter.blockId,
        blockName: starter.name,
        code: invalid.code,
        errorMessage: `${invalid.message} The message was acknowledged and not written; its body is in the error detail.`,
        errorDetail: invalid.body.slice(0, 20_000),
        canReprocess: false,
      }),
  });
  run.pumps.push(pump);
  return pump;
}

/** A request run's options of runMap: its request as the message, and the caller answered as Send Reply sends. */
export function requestOptions(run: ActiveRun): Pick<RunOptions, 'message' | 'onReply'> {
  const request = run.request;
  return request ? { message: request.body, onReply: (reply) => request.settle({ reply }) } : {};
}

/** Keeps a request run's first record error: the caller is told why there is no reply. */
export function noteRequestError(run: ActiveRun, e: MapRecordError): MapRecordError {
  if (run.request) run.request.error ??= { code: e.code, message: e.errorMessage };
  return e;
}

/** What a request run that ended without a reply tells its caller. */
export function requestEnd(run: ActiveRun): RunRequestResult {
  const error = run.request?.error;
  if (error) return { reply: null, error: { ...error, record: true } };
  if (run.fatalText !== undefined)
    return { reply: null, error: { code: 'RUN_FATAL', message: run.fatalText.slice(0, 10_000), record: false } };
  return { reply: null };
}
