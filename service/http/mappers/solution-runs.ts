import type { z } from 'zod';
import type { MonitorSolutionResult } from '../../../src/protocol/solutions.js';
import type { BlockError } from '../../solutions/block-errors.js';
import type { PrepareJobRow } from '../../store/schema.js';
import type { MonitorAnswer, PrepareJob } from '../schemas/solution-runs.schema.js';

export function toPrepareJob(job: PrepareJobRow): z.infer<typeof PrepareJob> {
  let mapErrorModels: z.infer<typeof PrepareJob>['mapErrorModels'] = [];
  try {
    const v: unknown = JSON.parse(job.mapErrors);
    // Jobs stored before the list per Block have only the message.
    if (Array.isArray(v))
      mapErrorModels = (v as Array<{ mapId: number; message: string; errors?: BlockError[] }>).map((e) => ({
        ...e,
        errors: e.errors ?? [],
      }));
  } catch {
    mapErrorModels = [];
  }
  return {
    id: job.id,
    solutionId: job.solutionId,
    creationDate: job.creationDate,
    isComplete: job.isComplete === 1,
    hasError: job.hasError === 1,
    mapErrorModels,
    message: job.message,
  };
}

export function toMonitor(m: MonitorSolutionResult & { solutionId: string }): z.infer<typeof MonitorAnswer> {
  return {
    solutionId: m.solutionId,
    running: m.running,
    runId: m.runId ?? null,
    startedAt: m.startedAt ?? null,
    recordsProcessed: m.processed,
    recordsFailed: m.failed,
  };
}
