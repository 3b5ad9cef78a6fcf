import { FerryError } from '../errors/ferry-error.js';

/** One piece of running work (a Solution run, a metadata load, a log zip). */
export interface WorkHandle {
  readonly id: number;
  readonly kind: string;
  /** Aborted when the Agent interrupts running work (restartNow=true, or a stop past its grace). */
  readonly signal: AbortSignal;
}

/**
 * Tracks running work so that a restart can wait for it, interrupt it, and refuse new work while
 * draining. Every command that does more than answer from memory runs through {@link run}.
 */
export class WorkRegistry {
  private readonly running = new Map<number, { handle: WorkHandle; controller: AbortController }>();
  private readonly idleWaiters = new Set<() => void>();
  private nextId = 1;
  private drainReason: string | undefined;
  private readonly pauses = new Set<string>();

  /** How many pieces of work run now. */
  get count(): number {
    return this.running.size;
  }

  get draining(): boolean {
    return this.drainReason !== undefined;
  }

  /** Whether {@link run} refuses new work now (draining, or paused by a Connector update). */
  get refusing(): boolean {
    return this.drainReason !== undefined || this.pauses.size > 0;
  }

  /** From now on {@link run} refuses new work with AGT_DRAINING. */
  drain(reason: string): void {
    this.drainReason ??= reason;
    for (const wake of [...this.resumeWaiters]) wake();
  }

  /**
   * Refuses new work until {@link resume} with the same reason (a Connector update waiting for
   * running work); unlike {@link drain} it ends.
   */
  pause(reason: string): void {
    this.pauses.add(reason);
  }

  resume(reason: string): void {
    this.pauses.delete(reason);
    if (this.pauses.size === 0) for (const wake of [...this.resumeWaiters]) wake();
  }

  private readonly resumeWaiters = new Set<() => void>();

  /**
   * Resolves once no pause holds new work back (at once when none does): queued work waits for a
   * Connector update to end instead of failing. A drain is not waited for: {@link run} refuses it.
   */
  unpaused(): Promise<void> {
    if (this.pauses.size === 0 || this.drainReason !== undefined) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        this.resumeWaiters.delete(wake);
        resolve();
      };
      this.resumeWaiters.add(wake);
    });
  }

  /** Runs `fn` as tracked work; refuses when draining or paused. */
  async run<T>(kind: string, fn: (work: WorkHandle) => Promise<T>): Promise<T> {
    const refusal = this.drainReason ?? [...this.pauses][0];
    if (refusal !== undefined) {
      throw new FerryError('AGT_DRAINING', `The Agent is ${refusal} and starts no new work; ask again shortly.`, {
        details: { kind },
      });
    }
    const controller = new AbortController();
    const handle: WorkHandle = { id: this.nextId++, kind, signal: controller.signal };
    this.running.set(handle.id, { handle, controller });
    try {
      return await fn(handle);
    } finally {
      this.running.delete(handle.id);
      if (this.running.size === 0) for (const wake of [...this.idleWaiters]) wake();
    }
  }

  /** Aborts every running piece of work; each ends with its own AGT_INTERRUPTED error. */
  interruptAll(reason: string): void {
    for (const { controller, handle } of this.running.values()) {
      controller.abort(
        new FerryError('AGT_INTERRUPTED', `Interrupted: ${reason}.`, { details: { kind: handle.kind } }),
      );
    }
  }

  /** Resolves when no work runs (at once when none does). */
  idle(): Promise<void> {
    if (this.running.size === 0) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        this.idleWaiters.delete(wake);
        resolve();
      };
      this.idleWaiters.add(wake);
    });
  }
}
