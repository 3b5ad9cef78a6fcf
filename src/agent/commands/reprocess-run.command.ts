import type { ReprocessRunCommand, ReprocessRunResult } from '../../protocol/reprocess.js';
import type { SolutionRunner } from '../../solutions/runner.js';

/** `reprocessRun`: queues a run of the Solution that reprocesses failed records from their stored copies; ignored (started false) while one runs. */
export function reprocessRunCommand(deps: { runner: SolutionRunner }) {
  return (command: ReprocessRunCommand): Promise<ReprocessRunResult> =>
    Promise.resolve(deps.runner.reprocess(command.solutionId, command.runId, command.maps, command.version));
}
