import type { Logger } from 'pino';
import type { ReportBody } from '../protocol/channel.js';
import type { SolutionRunner } from '../solutions/runner.js';
import type { SchedulerOptions } from '../solutions/scheduler.js';
import type { WorkRegistry } from './work.js';

/**
 * What a due time does on this Agent (the scheduler's callbacks): it is skipped while the
 * Solution's previous run goes on or while the Agent refuses new work (waiting to restart, a
 * Connector update), else it starts a run; a run the runner refuses is reported as a due time
 * skipped ('paused'), as every other skipped due time is.
 */
export function scheduledRuns(deps: {
  readonly runner: Pick<SolutionRunner, 'start' | 'isRunning'>;
  readonly work: Pick<WorkRegistry, 'refusing'>;
  readonly report: (body: ReportBody) => void;
  readonly log: Logger;
}): Pick<SchedulerOptions, 'isRunning' | 'isPaused' | 'fire' | 'skipped'> {
  const { runner, work, report, log } = deps;
  return {
    isRunning: (solutionId) => runner.isRunning(solutionId),
    isPaused: () => work.refusing,
    fire: (solutionId, dueAt, runId) => {
      try {
        runner.start(solutionId, runId, 'schedule', dueAt);
      } catch (err) {
        const due = dueAt.toISOString();
        log.warn({ err, solutionId, dueAt: due }, 'scheduled run not started');
        report({ kind: 'scheduleSkipped', solutionId, dueAt: due, reason: 'paused', at: new Date().toISOString() });
      }
    },
    skipped: (solutionId, dueAt, reason, earlier) => {
      const due = dueAt.toISOString();
      const at = new Date().toISOString();
      report({ kind: 'scheduleSkipped', solutionId, dueAt: due, reason, at, ...(earlier ? { earlier } : {}) });
    },
  };
}
