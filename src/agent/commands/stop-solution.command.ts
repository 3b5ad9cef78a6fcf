import type { StopSolutionCommand, StopSolutionResult } from '../../protocol/solutions.js';
import type { SolutionRunner } from '../../solutions/runner.js';

/** `stopSolution`: cancels the run in progress between batches. */
export function stopSolutionCommand(deps: { runner: SolutionRunner }) {
  return (command: StopSolutionCommand): Promise<StopSolutionResult> =>
    Promise.resolve(deps.runner.stop(command.solutionId));
}
