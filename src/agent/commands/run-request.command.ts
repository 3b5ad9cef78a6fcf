import type { RunRequestCommand, RunRequestResult } from '../../protocol/events.js';
import type { SolutionRunner } from '../../solutions/runner.js';

/** `runRequest`: runs the request/reply Map on the request; answered with its reply (src/solutions/runner.ts request). */
export function runRequestCommand(deps: { runner: SolutionRunner }) {
  return (command: RunRequestCommand): Promise<RunRequestResult> =>
    deps.runner.request(command.solutionId, command.mapId, command.requestId, command.request);
}
