import type { Logger } from 'pino';
import type { AssignSolutionsCommand, AssignSolutionsResult, SolutionAssignment } from '../../protocol/solutions.js';
import type { SolutionStore } from '../../solutions/solution-store.js';

/**
 * `assignSolutions`: the full list of Solutions this Agent holds a current assignment for. The
 * others are dropped (and their schedules with them) before the answer, which names the ones the
 * Agent lacks at the assigned version.
 */
export function assignSolutionsCommand(deps: {
  store: SolutionStore;
  log: Logger;
  /** Told the list before it is applied (the scheduler waits to hold what the Service's first list names). */
  received?: (assignments: readonly SolutionAssignment[]) => void;
  /** Told once the held Solutions changed. */
  assigned: () => void;
}) {
  return (command: AssignSolutionsCommand): Promise<AssignSolutionsResult> => {
    deps.received?.(command.assignments);
    const need = deps.store.assign(command.assignments);
    deps.assigned();
    deps.log.info({ assigned: command.assignments.length, need: need.length }, 'solution assignments received');
    return Promise.resolve({ need });
  };
}
