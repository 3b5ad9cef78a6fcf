import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, vi } from 'vitest';
import type { ScheduleRule } from '../../src/protocol/schedule.js';
import {
  Scheduler,
  type EarlierMissed,
  type ScheduledSolution,
  type SkipReason,
} from '../../src/solutions/scheduler.js';

/** Helpers for the Agent scheduler's tests (test/unit/solutions/scheduler*.test.ts). */

export const MINUTE = 60_000;
export const HOUR = 3_600_000;
export const DAY = 86_400_000;

const everyDay = { kind: 'interval', every: 1, start: '2020-01-01' } as const;
export const daily = (minute: number, timeZone = 'UTC'): ScheduleRule => ({
  kind: 'Recurring',
  days: everyDay,
  times: { kind: 'at', minute },
  timeZone,
});
export const everyMinutes = (minutes: number, timeZone = 'UTC'): ScheduleRule => ({
  kind: 'Recurring',
  days: everyDay,
  times: { kind: 'every', minutes },
  timeZone,
});
export const hourlyAt = (minute: number): ScheduleRule => ({
  kind: 'Recurring',
  days: everyDay,
  times: { kind: 'hourly', minute },
  timeZone: 'UTC',
});
export const everyMinute = everyMinutes(1);
export const solution = (
  solutionId: string,
  rule: ScheduleRule | null,
  version = 'v1',
  disabled = false,
): ScheduledSolution => ({ solutionId, version, rule, disabled });
export const iso = (ms: number): string => new Date(ms).toISOString();
export const at = (text: string): number => Date.parse(text);

export interface Fired {
  solutionId: string;
  dueAt: string;
  runId: string;
}
export interface Skipped {
  solutionId: string;
  dueAt: string;
  reason: SkipReason;
  earlier?: EarlierMissed;
}
export interface AgentOptions {
  graceMs?: number;
  onFire?: (f: Fired) => void;
  /** Another Agent's file, in the same temporary folder. */
  fileName?: string;
}

/** A scheduler as the runner would make it, recording what it is told. */
export interface TestAgent {
  scheduler: Scheduler;
  fired: Fired[];
  skipped: Skipped[];
  /** Solutions whose previous run is still going. */
  running: Set<string>;
  state: { paused: boolean };
}

/**
 * Fake timers and Date from 2026-03-02T10:00:30Z (performance.now stays real: some tests check
 * the work is fast), a temporary folder, and `make` for schedulers on a file in it, stopped after each test.
 */
export function useSchedulerHarness(): { make: (opts?: AgentOptions) => TestAgent } {
  let dir = '';
  const open: Scheduler[] = [];
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-scheduler-'));
    vi.useFakeTimers({
      now: new Date('2026-03-02T10:00:30Z'),
      toFake: ['setTimeout', 'clearTimeout', 'setInterval', 'clearInterval', 'Date'],
    });
  });
  afterEach(() => {
    for (const s of open.splice(0)) s.stop();
    vi.useRealTimers();
    fs.rmSync(dir, { recursive: true, force: true });
  });
  const make = (opts: AgentOptions = {}): TestAgent => {
    const fired: Fired[] = [];
    const skipped: Skipped[] = [];
    const running = new Set<string>();
    const state = { paused: false };
    const scheduler = new Scheduler({
      file: path.join(dir, opts.fileName ?? 'schedules.db'),
      graceMs: opts.graceMs,
      log: pino({ level: 'silent' }),
      isRunning: (id) => running.has(id),
      isPaused: () => state.paused,
      fire: (solutionId, dueAt, runId) => {
        const f = { solutionId, dueAt: dueAt.toISOString(), runId };
        fired.push(f);
        opts.onFire?.(f);
      },
      skipped: (solutionId, dueAt, reason, earlier) =>
        skipped.push({ solutionId, dueAt: dueAt.toISOString(), reason, ...(earlier ? { earlier } : {}) }),
    });
    open.push(scheduler);
    return { scheduler, fired, skipped, running, state };
  };
  return { make };
}
