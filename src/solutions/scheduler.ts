import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import type { ScheduleRule } from '../protocol/schedule.js';
import { dueSince, type DueSince } from './due-since.js';
import { nextDueTimes } from './schedule.js';
import { ScheduleStore, type Handled, type LastFired } from './scheduler-store.js';

/**
 * Fires the schedules of the Solutions assigned to this Agent, each due time exactly once
 * (docs/solutions.md "How the Agent fires schedules", docs/decisions.md "Schedules").
 *
 * ```
 *  set(full assignment) ──▶ store.reconcile: new / changed / enabled again → handled until now
 *          │                                   dropped → forgotten, its timer gone
 *          ▼
 *  one timer: the earliest next due time of all Solutions (at most MAX_SLEEP_MS away)
 *          │ fires
 *          ▼
 *  tick: now() ─▶ for each Solution due: its due times in (handledUntil, now], from its buffer
 *          │        of next due times or dueSince (bounded); the newest within grace → fire |
 *          │        'running' | 'paused', the others → 'missed'
 *          ▼
 *  store.advance (one transaction, durable) ─▶ skipped(…) / fire(…) ─▶ re-arm
 * ```
 *
 * The record comes before the call: a crash between them loses that one run instead of running
 * it twice; `lastFired` gives the runner the run ID to find it. `start()` after a restart is the
 * same tick: the due times the Agent was down for are handled then.
 */

/** A Solution as the runner gives it: the full current set goes to {@link Scheduler.set}. */
export interface ScheduledSolution {
  solutionId: string;
  /** The prepared version; a new one starts the schedule afresh. */
  version: string;
  /** Null: on demand, never due. */
  rule: ScheduleRule | null;
  disabled: boolean;
}

/** Why a due time did not start a run. */
export type SkipReason = 'running' | 'missed' | 'paused';

/** Missed due times older than the ones reported one by one. */
export interface EarlierMissed {
  count: number;
  /** False: `count` is a lower bound (counting them all would have cost too much). */
  exact: boolean;
}

export interface SchedulerOptions {
  /** The SQLite file in the Agent's home that records the due times handled. */
  file: string;
  /** A due time noticed at most this late still runs (once); a later one is missed. Default {@link DEFAULT_GRACE_MS}. */
  graceMs?: number;
  /** The wall clock; re-read each time the timer fires. */
  now?: () => Date;
  /** The Solution's previous run is still going: the due time is skipped ('running'). */
  isRunning(solutionId: string): boolean;
  /** The Agent waits to restart or update: due times are skipped ('paused'). */
  isPaused(): boolean;
  /** Starts a run with this ID; called after the due time is recorded. */
  fire(solutionId: string, dueAt: Date, runId: string): void;
  /**
   * A due time that started no run, called after it is recorded. `earlier` comes with the
   * oldest 'missed' one of a catch-up when even older ones were missed and are not reported one by one.
   */
  skipped(solutionId: string, dueAt: Date, reason: SkipReason, earlier?: EarlierMissed): void;
  log: Logger;
}

/** The default grace period: 10 minutes. */
export const DEFAULT_GRACE_MS = 10 * 60_000;
/** Missed due times reported one by one per Solution and catch-up: the latest ones. */
export const MAX_MISSED_REPORTED = 100;
/**
 * The longest the timer sleeps before looking at the clock again. Node's timers count on a
 * monotonic clock that stops while the machine sleeps and ignores changes of the wall clock,
 * so a long delay would fire late; waking each minute also keeps delays far below setTimeout's
 * 2^31−1 ms limit.
 */
export const MAX_SLEEP_MS = 60_000;
/** After a tick failed (the store could not be written), try again this soon. */
const RETRY_MS = 5_000;
/**
 * Due times one catch-up counts, shared by the Solutions it handles (each counts at least
 * {@link MIN_SCAN}): about a tenth of a second of work. Beyond, the count is a lower bound.
 */
const SCAN_BUDGET = 100_000;
const MIN_SCAN = 1_000;

/**
 * Due times computed at once per Solution: one call of the engine costs about as much as a
 * few hundred due times (it lays out whole local days), so firing 1,000 Solutions a minute
 * from a buffer costs a fraction of asking for each next one.
 */
const UPCOMING = 16;

interface Entry {
  solutionId: string;
  version: string;
  ruleKey: string;
  rule: ScheduleRule;
  /** Epoch ms: every due time at or before it is fired or skipped. */
  handledUntil: number;
  /** The next due times after `handledUntil`, ascending, none left out: `upcoming[0]` is the next. */
  upcoming: number[];
  /** True when `upcoming` holds every due time the rule has left. */
  complete: boolean;
}

/** What one tick decided for one Solution, recorded before any callback. */
interface Plan {
  entry: Entry;
  handledUntil: number;
  /** Missed due times reported one by one, ascending; `earlier` counts the older ones. */
  missed: number[];
  earlier: EarlierMissed | undefined;
  /** The newest due time, when within the grace period: it starts a run, or is skipped. */
  fired?: { dueAt: number; runId: string };
  skipped?: { dueAt: number; reason: 'running' | 'paused' };
}

export class Scheduler {
  private readonly store: ScheduleStore;
  private readonly log: Logger;
  private readonly graceMs: number;
  private readonly clock: () => Date;
  /** The enabled Solutions with a rule that is still due some time; the others need no timer. */
  private readonly entries = new Map<string, Entry>();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private state: 'new' | 'started' | 'stopped' = 'new';

  constructor(private readonly opts: SchedulerOptions) {
    const grace = opts.graceMs ?? DEFAULT_GRACE_MS;
    if (!Number.isFinite(grace) || grace < 0)
      throw new RangeError('graceMs must be a number of milliseconds, 0 or more');
    this.graceMs = grace;
    this.clock = opts.now ?? ((): Date => new Date());
    this.log = opts.log.child({ component: 'scheduler' });
    this.store = new ScheduleStore(opts.file);
  }

  /**
   * The full set of Solutions assigned to this Agent. Solutions not in it are dropped at once
   * (their timer too) and never fire; one new here, at a new version or rule, or enabled again
   * is first due after this moment. Call it before {@link start}, so that nothing taken away
   * while the Agent was down fires.
   */
  set(solutions: ScheduledSolution[]): void {
    if (this.state === 'stopped') {
      this.log.debug('schedules set after stop ignored');
      return;
    }
    const now = this.clock().getTime();
    const given = new Map(solutions.map((s) => [s.solutionId, s]));
    const handled = this.store.reconcile(
      [...given.values()].map((s) => ({
        solutionId: s.solutionId,
        version: s.version,
        rule: canonicalJson(s.rule),
        disabled: s.disabled,
      })),
      now,
    );
    const before = new Map(this.entries);
    this.entries.clear();
    for (const s of given.values()) {
      if (s.disabled || !s.rule || s.rule.kind === 'OnDemand') continue;
      const ruleKey = canonicalJson(s.rule);
      const handledUntil = handled.get(s.solutionId) ?? now;
      const kept = before.get(s.solutionId);
      // Unchanged: keep its due times computed already (a set of 1,000 Solutions changes a few).
      if (kept && kept.version === s.version && kept.ruleKey === ruleKey && kept.handledUntil === handledUntil) {
        this.entries.set(s.solutionId, kept);
        continue;
      }
      const entry: Entry = {
        solutionId: s.solutionId,
        version: s.version,
        ruleKey,
        rule: s.rule,
        handledUntil,
        upcoming: [],
        complete: false,
      };
      if (this.refill(entry)) this.entries.set(s.solutionId, entry);
    }
    this.log.debug({ solutions: given.size, scheduled: this.entries.size }, 'schedules set');
    this.arm();
  }

  /** Whether {@link start} was called (and {@link stop} was not). */
  get started(): boolean {
    return this.state === 'started';
  }

  /** Handles the due times since the last ones recorded (the Agent was down), then fires each as it comes. */
  start(): void {
    if (this.state === 'stopped') throw new Error('A stopped scheduler cannot start again: make a new one.');
    if (this.state === 'started') return;
    this.state = 'started';
    this.tick();
  }

  /** Stops firing and closes the file. */
  stop(): void {
    if (this.state === 'stopped') return;
    this.state = 'stopped';
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    this.entries.clear();
    this.store.close();
  }

  /** The due time that last started a run of the Solution here, and the run's ID (durable). */
  lastFired(solutionId: string): LastFired | undefined {
    return this.state === 'stopped' ? undefined : this.store.lastFired(solutionId);
  }

  /** The next due time of a Solution this scheduler will fire, if any. */
  nextDueAt(solutionId: string): Date | undefined {
    const next = this.entries.get(solutionId)?.upcoming[0];
    return next === undefined ? undefined : new Date(next);
  }

  private tick(): void {
    this.timer = undefined;
    if (this.state !== 'started') return;
    // The wall clock, not the timer's delay, says what is due: the machine may have slept.
    const now = this.clock().getTime();
    const due = [...this.entries.values()].filter((e) => (e.upcoming[0] ?? Number.POSITIVE_INFINITY) <= now);
    let plans: Plan[];
    try {
      plans = this.plan(due, now);
      this.store.advance(plans.map(toHandled), now);
    } catch (err) {
      // Nothing was recorded, so nothing fires: the same due times are looked at again soon.
      this.log.error({ err, solutions: due.length }, 'scheduled due times could not be recorded');
      this.arm(RETRY_MS);
      return;
    }
    for (const p of plans) {
      const entry = p.entry;
      entry.handledUntil = p.handledUntil;
      // What is left of the buffer still follows handledUntil without a gap.
      const firstLater = entry.upcoming.findIndex((t) => t > p.handledUntil);
      entry.upcoming = firstLater < 0 ? [] : entry.upcoming.slice(firstLater);
      if (!this.refill(entry)) this.entries.delete(entry.solutionId);
    }
    for (const p of plans) this.report(p);
    this.arm();
  }

  /** Decides each due Solution's due times, asking the runner now: nothing is recorded or called yet. */
  private plan(due: Entry[], now: number): Plan[] {
    if (due.length === 0) return [];
    const scanLimit = Math.max(MIN_SCAN, Math.floor(SCAN_BUDGET / due.length));
    const paused = this.opts.isPaused();
    const plans: Plan[] = [];
    for (const entry of due) {
      let found: DueSince;
      try {
        found = this.dueOf(entry, now, scanLimit);
      } catch (err) {
        // A rule this Agent cannot compute (a zone its Intl lacks): never fire it rather than fail every tick.
        this.log.error({ err, solutionId: entry.solutionId }, 'schedule rule could not be computed');
        this.entries.delete(entry.solutionId);
        continue;
      }
      const newestAt = found.latest.at(-1);
      if (newestAt === undefined) {
        // Cannot be (next was due), but an entry left due would spin the timer at 0 ms.
        this.log.error({ solutionId: entry.solutionId }, 'schedule due time not found again');
        this.entries.delete(entry.solutionId);
        continue;
      }
      const plan: Plan = { entry, handledUntil: newestAt, missed: found.latest, earlier: undefined };
      if (now - newestAt <= this.graceMs) {
        plan.missed = found.latest.slice(0, -1);
        if (paused) plan.skipped = { dueAt: newestAt, reason: 'paused' };
        else if (this.opts.isRunning(entry.solutionId)) plan.skipped = { dueAt: newestAt, reason: 'running' };
        else plan.fired = { dueAt: newestAt, runId: randomUUID() };
      }
      let earlier = found.earlier;
      if (plan.missed.length > MAX_MISSED_REPORTED) {
        earlier += plan.missed.length - MAX_MISSED_REPORTED;
        plan.missed = plan.missed.slice(-MAX_MISSED_REPORTED);
      }
      if (earlier > 0) plan.earlier = { count: earlier, exact: found.exact };
      plans.push(plan);
    }
    return plans;
  }

  /** Tells the runner what was recorded, oldest due time first. */
  private report(p: Plan): void {
    const { solutionId } = p.entry;
    if (p.missed.length > 0) {
      const total = p.missed.length + (p.earlier?.count ?? 0);
      this.log.info(
        { solutionId, missed: total, exact: p.earlier?.exact ?? true, reported: p.missed.length },
        'scheduled due times missed',
      );
    }
    p.missed.forEach((dueAt, i) =>
      this.call('skipped', solutionId, () =>
        this.opts.skipped(solutionId, new Date(dueAt), 'missed', i === 0 ? p.earlier : undefined),
      ),
    );
    const { fired, skipped } = p;
    if (skipped) {
      const dueAt = new Date(skipped.dueAt);
      this.log.debug({ solutionId, dueAt, reason: skipped.reason }, 'scheduled due time skipped');
      this.call('skipped', solutionId, () => this.opts.skipped(solutionId, dueAt, skipped.reason));
    }
    if (fired) {
      const dueAt = new Date(fired.dueAt);
      this.log.debug({ solutionId, dueAt, runId: fired.runId }, 'schedule fired');
      this.call('fire', solutionId, () => this.opts.fire(solutionId, dueAt, fired.runId));
    }
  }

  /** A callback that throws must not stop the others nor the timer; its due time stays handled. */
  private call(callback: 'fire' | 'skipped', solutionId: string, fn: () => void): void {
    try {
      fn();
    } catch (err) {
      this.log.error({ err, solutionId, callback }, 'schedule callback failed');
    }
  }

  /** The due times of (handledUntil, now]: from the buffer when it reaches past now, else computed with bounded work. */
  private dueOf(entry: Entry, now: number, scanLimit: number): DueSince {
    const keep = MAX_MISSED_REPORTED + 1;
    const past = entry.upcoming.findIndex((t) => t > now);
    const seen = past < 0 ? entry.upcoming.length : past;
    if ((past >= 0 || entry.complete) && seen <= keep)
      return { latest: entry.upcoming.slice(0, seen), earlier: 0, exact: true };
    return dueSince(entry.rule, entry.handledUntil, now, keep, scanLimit);
  }

  /** Fills an empty buffer; false when the rule is never due again (or cannot be computed here). */
  private refill(entry: Entry): boolean {
    if (entry.upcoming.length > 0) return true;
    if (entry.complete) return false;
    try {
      entry.upcoming = nextDueTimes(entry.rule, new Date(entry.handledUntil), UPCOMING).map((d) => d.getTime());
    } catch (err) {
      // A rule this Agent cannot compute (a zone its Intl lacks): never fire it rather than fail every tick.
      this.log.error({ err, solutionId: entry.solutionId }, 'schedule rule could not be computed');
      return false;
    }
    entry.complete = entry.upcoming.length < UPCOMING;
    return entry.upcoming.length > 0;
  }

  /** One timer for the earliest next due time of all Solutions, or none when nothing is due. */
  private arm(delayMs?: number): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
    if (this.state !== 'started') return;
    let delay = delayMs;
    if (delay === undefined) {
      let earliest = Number.POSITIVE_INFINITY;
      for (const e of this.entries.values()) earliest = Math.min(earliest, e.upcoming[0] ?? Number.POSITIVE_INFINITY);
      if (earliest === Number.POSITIVE_INFINITY) return;
      delay = Math.max(0, earliest - this.clock().getTime());
    }
    this.timer = setTimeout(() => this.tick(), Math.min(delay, MAX_SLEEP_MS));
    // The scheduler alone does not keep the Agent's process alive.
    this.timer.unref();
  }
}

function toHandled(p: Plan): Handled {
  return { solutionId: p.entry.solutionId, handledUntil: p.handledUntil, fired: p.fired };
}

/** JSON with object keys sorted, so the same rule always gives the same text, whoever built it. */
function canonicalJson(value: unknown): string {
  return JSON.stringify(value, (_key, v: unknown) =>
    v && typeof v === 'object' && !Array.isArray(v)
      ? Object.fromEntries(Object.entries(v).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
      : v,
  );
}
