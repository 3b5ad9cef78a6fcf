import type { StartSolutionCommand, StartSolutionResult } from '../../protocol/solutions.js';
import type { SolutionRunner } from '../../solutions/runner.js';

/** `startSolution`: queues a run now with the Service's run ID (of every enabled Map, or of `mapIds`); ignored (started false) while one runs. */
export function startSolutionCommand(deps: { runner: SolutionRunner }) {
  return (command: StartSolutionCommand): Promise<StartSolutionResult> =>
    Promise.resolve(
      deps.runner.start(command.solutionId, command.runId, 'start', undefined, command.version, command.mapIds),
    );
}
