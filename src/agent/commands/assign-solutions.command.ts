import type { Logger } from 'pino';
import type { ConnectorHost } from '../../connectors/host.js';
import type {
  AssignSolutionsCommand,
  AssignSolutionsResult,
  PreparedSolution,
  SolutionAssignment,
} from '../../protocol/solutions.js';
import { dropCapture } from '../../solutions/change-capture.js';
import type { SolutionStore } from '../../solutions/solution-store.js';

/**
 * `assignSolutions`: the full list of Solutions this Agent holds a current assignment for. The
 * others are dropped (and their schedules with them) before the answer, which names the ones the
 * Agent lacks at the assigned version. A dropped Replication that captured changes from its
 * source's log has its capture dropped there too (docs/change-capture.md): the source keeps no log
 * for a Solution that is gone.
 */
export function assignSolutionsCommand(deps: {
  store: SolutionStore;
  log: Logger;
  /** Told the list before it is applied (the scheduler waits to hold what the Service's first list names). */
  received?: (assignments: readonly SolutionAssignment[]) => void;
  /** Told once the held Solutions changed. */
  assigned: () => void;
  /** Opens the Connections a dropped capture is removed through; absent: captures are left in place. */
  host?: () => Promise<ConnectorHost>;
}) {
  return (command: AssignSolutionsCommand): Promise<AssignSolutionsResult> => {
    deps.received?.(command.assignments);
    const wanted = new Set(command.assignments.map((a) => a.solutionId));
    const capturing = deps.host
      ? deps.store.list().filter((s) => !wanted.has(s.solutionId) && s.replication?.changeCapture?.method === 'Logical')
      : [];
    const need = deps.store.assign(command.assignments);
    deps.assigned();
    deps.log.info({ assigned: command.assignments.length, need: need.length }, 'solution assignments received');
    for (const s of capturing) void dropSolutionCapture(s, deps.host as () => Promise<ConnectorHost>, deps.log);
    return Promise.resolve({ need });
  };
}

/** Drops the change capture of a Solution this Agent no longer holds; a failure is logged (the slot stays). */
async function dropSolutionCapture(
  solution: PreparedSolution,
  host: () => Promise<ConnectorHost>,
  log: Logger,
): Promise<void> {
  const sourceId = solution.replication?.sourceConnectionId;
  const c = solution.connections.find((x) => x.connectionId === sourceId);
  if (!c) return;
  try {
    const source = await (
      await host()
    ).open({ connectorId: c.connectorId, connectionId: c.connectionId, properties: c.properties, log });
    try {
      await dropCapture(source, solution.solutionId);
      log.info(
        { solutionId: solution.solutionId },
        'change capture dropped from the source: the Solution left this Agent',
      );
    } finally {
      await source.close();
    }
  } catch (err) {
    log.warn(
      { err, solutionId: solution.solutionId },
      'the change capture of a Solution that left this Agent could not be dropped from its source: drop its replication slot by hand',
    );
  }
}
