import type { Logger } from 'pino';
import type { PutSolutionCommand } from '../../protocol/solutions.js';
import type { SolutionStore } from '../../solutions/solution-store.js';

/** `putSolution`: keeps the prepared Solution (sealed) and reschedules. */
export function putSolutionCommand(deps: { store: SolutionStore; log: Logger; assigned: () => void }) {
  return (command: PutSolutionCommand): Promise<{ version: string }> => {
    deps.store.put(command.solution);
    deps.assigned();
    deps.log.info(
      { solutionId: command.solution.solutionId, version: command.solution.version },
      'solution definition stored',
    );
    return Promise.resolve({ version: command.solution.version });
  };
}
