import type { ExecutionView } from '../../history/history.js';
import { historyResultOf } from '../../history/query.js';
import { durationSeconds, parseStatistics, toStatistics } from '../../history/statistics.js';
import type { ExecutionErrorRow, ScheduleSkipRow } from '../../store/schema.js';
import { fromFlag } from '../../util/values.js';
import type { ConnectorRecord } from '../../../src/connectors/sdk.js';
import type { Execution, FailedRecord, RecordError, ScheduleSkip } from '../schemas/history.schema.js';

/**
 * The API model of an execution; a run without a result is InProgress, its duration counted to when
 * it was read, and its `details` say so when its Agent is away.
 */
export function toExecution({ row, reprocessRecordsRemaining, readAt, agentAway }: ExecutionView): Execution {
  const stats = toStatistics(parseStatistics(row.statistics));
  return {
    id: row.id,
    processExecutionId: row.runId,
    solutionId: row.solutionId,
    agentId: row.agentId,
    start: row.start,
    stop: row.stop,
    duration: durationSeconds(row.start, row.stop, readAt),
    result: row.result === null ? 'InProgress' : (historyResultOf(row.result) ?? 'FatalError'),
    details: row.result === null && agentAway !== undefined ? agentAway : row.details,
    recordsProcessed: row.recordsProcessed,
    recordsFailed: row.recordsFailed,
    reprocessRecordsRemaining,
    isReprocessJob: fromFlag(row.isReprocessJob),
    sourceDataLocal: fromFlag(row.sourceDataLocal),
    stopped: fromFlag(row.stopped),
    trigger: row.trigger,
    dueAt: row.dueAt,
    mapStatistics: stats.mapStatistics,
    legacyCounters: stats.legacyCounters,
  };
}

/** The API model of a record error. */
export function toRecordError(row: ExecutionErrorRow): RecordError {
  return {
    id: row.id,
    failedRecordId: row.failedRecordId,
    mapName: row.mapName,
    sourceEntity: row.sourceEntity,
    errorMessage: row.errorMessage,
    errorDetail: row.errorDetail,
    additionalErrorDetails: '',
    canReprocess: fromFlag(row.canReprocess),
    marked: fromFlag(row.marked),
    mapId: row.mapId,
    blockName: row.blockName,
    code: row.code,
    created: row.created,
    sourceKey: row.sourceKey === null ? null : (JSON.parse(row.sourceKey) as RecordError['sourceKey']),
    sourceRow: row.sourceRow,
  };
}

export function toScheduleSkip(row: ScheduleSkipRow): ScheduleSkip {
  return { solutionId: row.solutionId, dueAt: row.dueAt, reason: row.reason, at: row.at };
}

/** SPEC.md "Failed Record" from a record error and its source fields. */
export function toFailedRecord(r: { error: ExecutionErrorRow; source: ConnectorRecord }): FailedRecord {
  return {
    id: r.error.id,
    name: r.error.sourceEntity,
    properties: Object.entries(r.source).map(([key, value]) => ({ key, value })),
    children: [],
    sourceData: r.source,
  };
}
