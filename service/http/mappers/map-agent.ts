import type { MapPreviewView } from '../../solutions/map-preview.js';
import type { MapRunView } from '../../solutions/map-run.js';
import type { MapRunAnswer, PreviewAnswer } from '../schemas/map-agent.schema.js';

export function toPreview(view: MapPreviewView): PreviewAnswer {
  const { row, result } = view;
  const failed = row.status !== 'Completed';
  return {
    previewId: row.id,
    mapId: row.mapId,
    blockId: row.blockId,
    blockName: row.blockName,
    entity: row.entity,
    connectionId: row.connectionId,
    status: failed ? 'Failed' : 'Completed',
    isComplete: true,
    hasError: failed,
    errorCode: failed ? (row.errorCode ?? 'SVC_INTERNAL') : null,
    message: failed ? (row.errorMessage ?? 'The preview failed.') : '',
    fields: result?.fields ?? [],
    records: result?.records ?? [],
    recordCount: result?.records.length ?? 0,
    limit: row.recordLimit,
    truncated: result?.truncated ?? false,
    requestedAt: row.requestedAt,
    completedAt: row.completedAt,
  };
}

const RESULTS = ['CompletedSuccessfully', 'CompletedWithErrors', 'FatalError', 'RecordErrorsAndFatalErrors'] as const;
type Result = (typeof RESULTS)[number];
const isResult = (s: string): s is Result => (RESULTS as readonly string[]).includes(s);

export function toMapRun(view: MapRunView): MapRunAnswer {
  const { row, execution } = view;
  return {
    commandId: row.id,
    solutionId: row.solutionId,
    mapId: row.mapId,
    status: view.status,
    ignored: row.ignored === 1,
    message: view.message,
    runId: row.runId,
    prepareId: row.prepareId,
    executionId: execution?.id ?? null,
    result: execution
      ? execution.result !== null && isResult(execution.result)
        ? execution.result
        : 'InProgress'
      : null,
    recordsProcessed: execution?.recordsProcessed ?? null,
    recordsFailed: execution?.recordsFailed ?? null,
    startTime: execution?.start ?? null,
    stopTime: execution?.stop ?? null,
    mapStatistics: view.statistics ? { ...view.statistics } : null,
    requestedAt: row.requestedAt,
  };
}
