/**
 * The Agent scheduler catching up after its Agent was down (src/solutions/scheduler.ts):
 *
 *   npx tsx test/bench/scheduler.bench.ts
 *
 * Each case records a start at T0, then starts again on the same file at T0 + the time offline,
 * with the wall clock given to the scheduler (no timer fires: start() alone does the catch-up —
 * one run for the newest due time, the latest 100 missed ones reported, the others counted).
 * The anchor, in the same run, lists the same span's due times with the schedule engine's
 * nextDueTimes (a thousand a call), as a scheduler that walked every missed due time would; the
 * catch-up also records the runs it fires and the misses it reports in its SQLite file.
 * Prints one JSON document.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pino } from 'pino';
import type { ScheduleRule } from '../../src/protocol/schedule.js';
import { nextDueTimes } from '../../src/solutions/schedule.js';
import { Scheduler, type ScheduledSolution } from '../../src/solutions/scheduler.js';

const MINUTE = 60_000;
const DAY = 86_400_000;
const T0 = Date.parse('2026-03-02T10:00:30Z');
const EVERY_MINUTE: ScheduleRule = {
  kind: 'Recurring',
  days: { kind: 'interval', every: 1, start: '2020-01-01' },
  times: { kind: 'every', minutes: 1 },
  timeZone: 'UTC',
};

interface Case {
  name: string;
  solutions: number;
  offlineMs: number;
}

const CASES: Case[] = [
  { name: 'one Solution every minute, a month offline', solutions: 1, offlineMs: 30 * DAY },
  { name: '1,000 Solutions every minute, a day offline', solutions: 1000, offlineMs: DAY },
];

function scheduler(file: string, now: number, counts: { fired: number; skipped: number }): Scheduler {
  return new Scheduler({
    file,
    now: () => new Date(now),
    log: pino({ level: 'silent' }),
    isRunning: () => false,
    isPaused: () => false,
    fire: () => void counts.fired++,
    skipped: () => void counts.skipped++,
  });
}

function catchUp(c: Case, dir: string): { ms: number; fired: number; reported: number } {
  const file = path.join(dir, `${c.solutions}.db`);
  const solutions: ScheduledSolution[] = Array.from({ length: c.solutions }, (_, i) => ({
    solutionId: `s${i}`,
    version: 'v1',
    rule: EVERY_MINUTE,
    disabled: false,
  }));
  const first = scheduler(file, T0, { fired: 0, skipped: 0 });
  first.set(solutions);
  first.start();
  first.stop();
  const counts = { fired: 0, skipped: 0 };
  const again = scheduler(file, T0 + c.offlineMs, counts);
  again.set(solutions);
  const t = performance.now();
  again.start();
  const ms = performance.now() - t;
  again.stop();
  return { ms, fired: counts.fired, reported: counts.skipped };
}

/** The anchor: every due time of the span, one by one, for each Solution. */
function walk(c: Case): { ms: number; dueTimes: number } {
  const t = performance.now();
  let n = 0;
  for (let s = 0; s < c.solutions; s++) {
    let after = new Date(T0);
    for (;;) {
      const next = nextDueTimes(EVERY_MINUTE, after, 1000).filter((d) => d.getTime() <= T0 + c.offlineMs);
      n += next.length;
      if (next.length < 1000) break;
      after = next[next.length - 1] as Date;
    }
  }
  return { ms: performance.now() - t, dueTimes: n };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-scheduler-bench-'));
try {
  const results = CASES.map((c) => {
    const anchor = walk(c);
    const ferry = catchUp(c, dir);
    process.stderr.write(
      `${c.name}: catch-up ${ferry.ms.toFixed(1)} ms (${ferry.fired} runs, ${ferry.reported} reported), walking ${anchor.dueTimes} due times ${anchor.ms.toFixed(1)} ms\n`,
    );
    return {
      case: c.name,
      dueTimes: anchor.dueTimes,
      catchUpMs: Math.round(ferry.ms * 10) / 10,
      runsFired: ferry.fired,
      missedReported: ferry.reported,
      walkMs: Math.round(anchor.ms * 10) / 10,
      ratio: Math.round((ferry.ms / anchor.ms) * 1000) / 1000,
    };
  });
  process.stdout.write(JSON.stringify({ bench: 'scheduler', minute: MINUTE, results }, null, 2) + '\n');
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
