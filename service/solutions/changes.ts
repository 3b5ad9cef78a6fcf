import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { Database } from '../store/schema.js';
import type { SolutionAssignments } from './assignments.js';
import { orgOfSolution, type PrepareJobs } from './prepare.js';
import type { SolutionChangeEvent } from './solutions.js';

/**
 * What follows a change of a Solution (`SolutionsOptions.changed`): every Agent whose assignments
 * may differ now is brought up to date, and a created or changed Replication Solution prepares
 * itself when its Agent is connected, since clients start one without preparing it.
 */
export function followSolutionChanges(deps: {
  readonly db: Kysely<Database>;
  readonly assignments: Pick<SolutionAssignments, 'syncSoon'>;
  readonly prepare: Pick<PrepareJobs, 'start'>;
  readonly isConnected: (agentId: string) => boolean;
  readonly log: FastifyBaseLogger;
}): (change: SolutionChangeEvent) => void {
  const { db, assignments, prepare, isConnected, log } = deps;
  return ({ solution, agentIds, definitionChanged }) => {
    for (const agentId of agentIds) assignments.syncSoon(agentId);
    if (!solution || !definitionChanged || solution.solutionType !== 'Replication') return;
    if (!isConnected(solution.agentId)) return;
    void orgOfSolution(db, solution)
      .then((org) => prepare.start(org, solution.id))
      .catch((err: unknown) => log.warn({ err, solutionId: solution.id }, 'automatic prepare not started'));
  };
}
