import type { MonitorSolutionCommand, MonitorSolutionResult } from '../../protocol/solutions.js';
import type { SolutionRunner } from '../../solutions/runner.js';

/** `monitorSolution`: the records processed so far by the run in progress. */
export function monitorSolutionCommand(deps: { runner: SolutionRunner }) {
  return (command: MonitorSolutionCommand): Promise<MonitorSolutionResult> =>
    Promise.resolve(deps.runner.monitor(command.solutionId));
}
