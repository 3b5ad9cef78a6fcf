import { replicationSettingsOf, type ScheduleView, type SolutionView } from '../../solutions/solutions.js';
import { SOLUTION_TYPES } from '../../solutions/status.js';
import { fromFlag } from '../../util/values.js';
import { toMapLink, type EventUrls } from './map.js';
import type { ScheduleAnswer, Solution } from '../schemas/solution.schema.js';
import type { z } from 'zod';

/** The API model of a Solution; `mapLinks` are its Maps in run order, with the event URLs of `eventUrls`. */
export function toSolution({ row, status, nextRunTime, maps }: SolutionView, eventUrls?: EventUrls): Solution {
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
    replicationSettings: settings
      ? {
          selectionType: settings.selectionType,
          entities: [...settings.entities],
          ...(settings.changeCapture ? { changeCapture: { ...settings.changeCapture } } : {}),
        }
      : null,
    entities: settings ? [...settings.entities] : [],
    checkForBulk: fromFlag(row.checkForBulk),
    isDisabled: fromFlag(row.isDisabled),
    reasonDisabled: row.reasonDisabled,
    inProgressStartTime: row.inProgressStartTime,
    lastRunTime: row.lastRunTime,
    nextRunTime,
    minAgentVersion: row.minAgentVersion,
    sharedFromSolutionId: row.sharedFrom,
    mapLinks: maps.map((m) => toMapLink(m, eventUrls?.get(m.id) ?? null)),
    creationDate: row.creationDate,
    lastModificationDate: row.lastModificationDate,
    modificationBy: row.modificationBy,
  };
}

/** The schedule model as answered: as last set, named by the Solution it belongs to. */
export function toScheduleAnswer({ solutionId, model }: ScheduleView): z.infer<typeof ScheduleAnswer> {
  return {
    scheduleOption: model.scheduleOption,
    solutionId,
    runOnceOptions: model.runOnceOptions ?? null,
    recurringOptions: model.recurringOptions ?? null,
  };
}
