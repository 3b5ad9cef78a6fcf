import type { Logger } from 'pino';
import type { PreparedSolution, SolutionAssignment } from '../protocol/solutions.js';
import type { Scheduler } from '../solutions/scheduler.js';
import type { Component } from './components.js';

/** What the gate needs of the scheduler. */
export type GatedScheduler = Pick<Scheduler, 'set' | 'start' | 'stop' | 'started'>;

/** What the gate reads of a held Solution. */
export type HeldSolution = Pick<PreparedSolution, 'solutionId' | 'version' | 'schedule' | 'isDisabled'>;

export interface SchedulerGateOptions {
  readonly scheduler: GatedScheduler;
  /** The Solutions this Agent holds now (its local copy). */
  readonly held: () => readonly HeldSolution[];
  /** How long the Service has to answer a request (the channel's time-out). */
  readonly requestTimeoutMs: number;
  /** How late a due time may still fire (the scheduler's grace period). */
  readonly graceMs: number;
  readonly log: Logger;
}

/**
 * Nothing fires before the Service has had its say. At start the scheduler holds the local copy,
 * which may be stale: a Solution moved to another Agent, disabled or rescheduled while this one
 * was down. Firing from it at once would run such a Solution here (the due time missed while down
 * is caught up at start). So the scheduler starts once this Agent holds what the Service's first
 * assignment list names, at the versions it names (the list drops what moved away; the new
 * versions follow it as putSolution); or, when that does not happen within the wait (the Service
 * is unreachable), from the local copy, so that scheduled runs go on during an outage. Due times
 * that pass during the wait are caught up at start like any late due time, hence a wait no longer
 * than the grace period: min(request time-out, grace).
 *
 *   start(): assigned(), wait armed ─┬─ received(list), then assigned() holds it at its versions ─┐
 *                                    └─ the wait elapses ─────────────────────────────────────────┴─▶ scheduler.start()
 *
 * Whether or not it started, the scheduler follows every change of the held Solutions
 * ({@link assigned}). Stopping the gate stops the scheduler; nothing starts it afterwards.
 */
export class SchedulerGate implements Component {
  readonly name = 'scheduler';
  readonly #opts: SchedulerGateOptions;
  #wait: ReturnType<typeof setTimeout> | undefined;
  /** The versions the Service's latest assignment list names; undefined until one came. */
  #named: ReadonlyMap<string, string> | undefined;
  #stopped = false;

  constructor(opts: SchedulerGateOptions) {
    this.#opts = opts;
  }

  /** Gives the scheduler the held Solutions and arms the wait. */
  start(): void {
    this.assigned();
    const waitMs = Math.min(this.#opts.requestTimeoutMs, this.#opts.graceMs);
    const why = 'no assignment list from the Service in time; firing from the local copy';
    this.#wait = setTimeout(() => this.#open(why), waitMs);
    this.#wait.unref();
  }

  /** The Service's assignment list came, before it is applied: what the gate waits to hold. */
  received(assignments: readonly SolutionAssignment[]): void {
    this.#named = new Map(assignments.map((a) => [a.solutionId, a.version]));
  }

  /**
   * The held Solutions changed: the scheduler follows the full set (a Solution no longer held
   * stops firing at once), and starts if the Service's list is now held at its versions.
   */
  assigned(): void {
    const { scheduler } = this.#opts;
    const held = this.#opts.held();
    scheduler.set(
      held.map((s) => ({ solutionId: s.solutionId, version: s.version, rule: s.schedule, disabled: s.isDisabled })),
    );
    if (!this.#named || scheduler.started) return;
    const versions = new Map(held.map((s) => [s.solutionId, s.version]));
    const holdsAll = [...this.#named].every(([solutionId, version]) => versions.get(solutionId) === version);
    if (holdsAll) this.#open('holding the assignment of the Service');
  }

  /** Disarms the wait and stops the scheduler. */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#wait);
    this.#opts.scheduler.stop();
  }

  #open(why: string): void {
    clearTimeout(this.#wait);
    this.#wait = undefined;
    if (this.#stopped || this.#opts.scheduler.started) return;
    this.#opts.log.info({ why }, 'scheduler starting');
    this.#opts.scheduler.start();
  }
}
