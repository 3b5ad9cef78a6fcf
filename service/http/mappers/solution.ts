import { replicationSettingsOf, type SolutionView } from '../../solutions/solutions.js';
import { SOLUTION_TYPES } from '../../solutions/status.js';
import { fromFlag } from '../../util/values.js';
import type { Solution } from '../schemas/solution.schema.js';

/** The API model of a Solution; `mapLinks` is empty until the Solution has Maps. */
export function toSolution({ row, status }: SolutionView): Solution {
  const settings = replicationSettingsOf(row);
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    solutionType: SOLUTION_TYPES.find((t) => t === row.solutionType) ?? 'Integration',
    status,
    agentId: row.agentId,
    connectionIdForSource: row.connectionIdForSource,
    connectionIdForTarget: row.connectionIdForTarget,
    replicationSettings: settings ? { selectionType: settings.selectionType, entities: [...settings.entities] } : null,
    entities: settings ? [...settings.entities] : [],
    checkForBulk: fromFlag(row.checkForBulk),
    isDisabled: fromFlag(row.isDisabled),
    reasonDisabled: row.reasonDisabled,
    inProgressStartTime: row.inProgressStartTime,
    lastRunTime: row.lastRunTime,
    nextRunTime: row.nextRunTime,
    minAgentVersion: row.minAgentVersion,
    mapLinks: [],
    creationDate: row.creationDate,
    lastModificationDate: row.lastModificationDate,
    modificationBy: row.modificationBy,
  };
}
