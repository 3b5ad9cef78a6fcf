import { randomUUID } from 'node:crypto';
import { expect } from 'vitest';
import type { ReportBody } from '../../src/protocol/channel.js';
import {
  MAX_ERRORS_PER_REPORT,
  MAX_FAILED_RECORDS_PER_REPORT,
  type RunFailedRecord,
  type RunRecordError,
} from '../../src/protocol/solutions.js';
import type { TestChannel } from './agent-client.js';

type RunFinished = Extract<ReportBody, { kind: 'runFinished' }>;

/** The time `minutes` ago, as ISO-8601 text. */
export const ago = (minutes: number): string => new Date(Date.now() - minutes * 60_000).toISOString();

/** The runStarted report of a run started by hand at `at`. */
export const started = (solutionId: string, runId: string, at: string): ReportBody => ({
  kind: 'runStarted',
  runId,
  solutionId,
  trigger: 'start',
  at,
});

/** The runFinished report of a run started by hand at `startedAt`: 90.5 s later, CompletedSuccessfully with no records, unless `extra` says otherwise. */
export const finished = (
  solutionId: string,
  runId: string,
  startedAt: string,
  extra: Partial<RunFinished> = {},
): ReportBody => ({
  kind: 'runFinished',
  runId,
  solutionId,
  trigger: 'start',
  startedAt,
  at: new Date(Date.parse(startedAt) + 90_500).toISOString(),
  result: 'CompletedSuccessfully',
  processed: 0,
  failed: 0,
  stopped: false,
  sourceDataLocal: true,
  statistics: [],
  ...extra,
});

/**
 * Record error `n` of a run as an Agent reports it: Map 7 "Accounts" refused the record at its
 * Create Block, every second one can be reprocessed, each names a failed record of its own.
 */
export function recordError(n: number, extra: Partial<RunRecordError> = {}): RunRecordError {
  return {
    id: randomUUID(),
    mapId: 7,
    mapName: 'Accounts',
    sourceEntity: 'account',
    blockName: 'Create contact',
    code: 'RUN_WRITE_FAILED',
    errorMessage: `record ${n} refused`,
    errorDetail: `detail ${n}`,
    canReprocess: n % 2 === 0,
    failedRecordId: randomUUID(),
    ...extra,
  };
}

/** The copy of the record behind `error` (under its failedRecordId) that a run keeps in the cloud, with these source fields. */
export function failedRecordOf(error: RunRecordError, source: Record<string, unknown>): RunFailedRecord {
  if (!error.failedRecordId) throw new Error(`record error ${error.id} names no failed record`);
  return {
    id: error.failedRecordId,
    mapId: error.mapId,
    mapName: error.mapName,
    entity: error.sourceEntity,
    blockId: error.blockId ?? 'b',
    blockName: error.blockName ?? 'b',
    code: error.code,
    errorMessage: error.errorMessage,
    source,
  };
}

/** A run to seed History with: {@link seedRun}. */
export interface SeededRun {
  solutionId: string;
  /** When it started; a minute ago unless set. */
  start?: string;
  errors?: RunRecordError[];
  /** Failed records kept in the cloud: a run that sends any ends with sourceDataLocal false. */
  failedRecords?: RunFailedRecord[];
  /**
   * Fields of its runFinished report over the defaults (a minute after the start; CompletedWithErrors
   * when it has errors, with as many processed and failed), or false to leave it InProgress.
   */
  finish?: Partial<RunFinished> | false;
}

/**
 * Seeds History through `ch` as an Agent reports a run: its start, its record errors and failed
 * records in reports of the largest size the protocol takes, then (unless `finish` is false) its
 * end; every report acknowledged. Answers the run ID.
 */
export async function seedRun(ch: TestChannel, run: SeededRun): Promise<string> {
  const send = async (report: ReportBody): Promise<void> => {
    const reply = await ch.report(report);
    expect(reply, JSON.stringify(reply)).toMatchObject({ ok: true });
  };
  const { solutionId, errors = [], failedRecords = [] } = run;
  const runId = randomUUID();
  const start = run.start ?? new Date(Date.now() - 60_000).toISOString();
  await send({ kind: 'runStarted', runId, solutionId, trigger: 'start', at: start });
  for (let i = 0; i < errors.length; i += MAX_ERRORS_PER_REPORT) {
    await send({ kind: 'runErrors', runId, solutionId, errors: errors.slice(i, i + MAX_ERRORS_PER_REPORT) });
  }
  for (let i = 0; i < failedRecords.length; i += MAX_FAILED_RECORDS_PER_REPORT) {
    await send({
      kind: 'runFailedRecords',
      runId,
      solutionId,
      records: failedRecords.slice(i, i + MAX_FAILED_RECORDS_PER_REPORT),
    });
  }
  if (run.finish !== false) {
    await send({
      kind: 'runFinished',
      runId,
      solutionId,
      trigger: 'start',
      startedAt: start,
      at: new Date(Date.parse(start) + 60_000).toISOString(),
      result: errors.length > 0 ? 'CompletedWithErrors' : 'CompletedSuccessfully',
      processed: errors.length,
      failed: errors.length,
      stopped: false,
      sourceDataLocal: failedRecords.length === 0,
      statistics: [],
      ...run.finish,
    });
  }
  return runId;
}
