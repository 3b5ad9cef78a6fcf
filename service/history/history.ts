import type { Kysely } from 'kysely';
import { FerryError } from '../../src/errors/ferry-error.js';
import {
  getError,
  getExecution,
  listErrors,
  listExecutions,
  listScheduleSkips,
  reprocessableCounts,
  type ExecutionSortColumn,
} from '../store/repos/executions.repo.js';
import { getSolution } from '../store/repos/solutions.repo.js';
import { getFailedRecord } from '../store/repos/failed-records.repo.js';
import type { SecretBox } from '../crypto/master-key.js';
import type { ConnectorRecord } from '../../src/connectors/sdk.js';
import { sourceOf } from './failed-records.js';
import { markError, markExecutionErrors } from '../store/repos/error-marks.repo.js';
import type { AgentRow } from '../store/schema.js';
import type { ReprocessPage } from '../../src/protocol/reprocess.js';
import { Reprocessing, type ReprocessAnswer, type ReprocessingOptions } from './reprocess.js';
import type { Database, ExecutionErrorRow, ExecutionRow, ScheduleSkipRow, SolutionRow } from '../store/schema.js';
import { defaultLaterThan, type ExecutionSort, type HistoryResult } from './query.js';
import { parseStatistics, toStatistics, type ExecutionStatistics } from './statistics.js';
import { awayNotes } from './agent-away.js';

/** An execution as read: its row and how many of its record errors can still be reprocessed. */
export interface ExecutionView {
  readonly row: ExecutionRow;
  readonly reprocessRecordsRemaining: number;
  /** When it was read: the duration of a run still going counts to this. */
  readonly readAt: Date;
  /** A run still going whose Agent is away: what its `details` says of the Agent (./agent-away.ts). */
  readonly agentAway?: string | undefined;
}

/** An execution named in a path: its integer ID, or its run ID (`processExecutionId`). */
export type ExecutionRef = number | string;

export interface ExecutionListQuery {
  /** Executions that started at or after this; default the last 45 days. */
  readonly laterThanDate?: Date | undefined;
  readonly result?: HistoryResult | undefined;
  readonly executionHistoryColumnSort: ExecutionSort;
  readonly sortOrder: 'asc' | 'desc';
  readonly limit: number;
  readonly offset: number;
}

export interface Page {
  readonly limit: number;
  readonly offset: number;
}

export interface HistoryOptions extends Omit<ReprocessingOptions, 'db' | 'secrets'> {
  readonly db: Kysely<Database>;
  /** Opens the failed records kept in the cloud. */
  readonly secrets: SecretBox;
}

/** The answer of a history-level mark. */
export interface MarkAllAnswer {
  readonly historyId: number;
  readonly mark: boolean;
  /** Record errors whose mark changed. */
  readonly changed: number;
  readonly reprocessRecordsRemaining: number;
}

const SORT_COLUMN: Record<ExecutionSort, ExecutionSortColumn> = {
  Start: 'start',
  Result: 'result',
  RecordsProcessed: 'recordsProcessed',
  RecordsFailed: 'recordsFailed',
};

const solutionNotFound = (orgId: number, id: string): FerryError =>
  new FerryError('API_NOT_FOUND', `Solution ${id} was not found in Organization ${orgId}.`);
const executionNotFound = (solutionId: string, ref: ExecutionRef): FerryError =>
  new FerryError('API_NOT_FOUND', `Execution ${ref} was not found in the History of Solution ${solutionId}.`);

/**
 * The History of a Solution (SPEC.md "History, errors and failed records"): its executions, their
 * statistics and record errors, and the due times its schedule skipped — all as the Agent reported
 * them (RunReports, ./reports.ts). Reads only; everything goes with the Solution.
 */
export class History {
  readonly #reprocessing: Reprocessing;

  constructor(private readonly opts: HistoryOptions) {
    this.#reprocessing = new Reprocessing(opts);
  }

  private async solution(orgId: number, solutionId: string): Promise<SolutionRow> {
    const row = await getSolution(this.opts.db, orgId, solutionId);
    if (!row) throw solutionNotFound(orgId, solutionId);
    return row;
  }

  private async execution(orgId: number, solutionId: string, ref: ExecutionRef): Promise<ExecutionRow> {
    const solution = await this.solution(orgId, solutionId);
    const row = await getExecution(this.opts.db, solution.id, typeof ref === 'string' ? ref.toLowerCase() : ref);
    if (!row) throw executionNotFound(solution.id, ref);
    return row;
  }

  /** The Solution's executions in the window, filtered by result, sorted and paged. */
  async list(
    orgId: number,
    solutionId: string,
    q: ExecutionListQuery,
    now: Date = new Date(),
  ): Promise<{ items: ExecutionView[]; total: number }> {
    const solution = await this.solution(orgId, solutionId);
    const { rows, total } = await listExecutions(this.opts.db, solution.id, {
      startFrom: (q.laterThanDate ?? defaultLaterThan(now)).toISOString(),
      result: q.result === 'InProgress' ? null : q.result,
      sort: { column: SORT_COLUMN[q.executionHistoryColumnSort], desc: q.sortOrder === 'desc' },
      page: q,
    });
    const remaining = await reprocessableCounts(
      this.opts.db,
      rows.map((r) => r.id),
    );
    const away = await awayNotes(this.opts.db, rows, this.opts.commands);
    return {
      items: rows.map((row) => ({
        row,
        reprocessRecordsRemaining: remaining.get(row.id) ?? 0,
        readAt: now,
        agentAway: away.get(row.id),
      })),
      total,
    };
  }

  async get(orgId: number, solutionId: string, ref: ExecutionRef, now: Date = new Date()): Promise<ExecutionView> {
    const row = await this.execution(orgId, solutionId, ref);
    const remaining = await reprocessableCounts(this.opts.db, [row.id]);
    const away = await awayNotes(this.opts.db, [row], this.opts.commands);
    return { row, reprocessRecordsRemaining: remaining.get(row.id) ?? 0, readAt: now, agentAway: away.get(row.id) };
  }

  /** Per Map (or entity) and per Block: what the run's end reported; empty while it runs. */
  async statistics(orgId: number, solutionId: string, ref: ExecutionRef): Promise<ExecutionStatistics> {
    return toStatistics(parseStatistics((await this.execution(orgId, solutionId, ref)).statistics));
  }

  /** The execution's record errors in order of arrival. */
  async errors(
    orgId: number,
    solutionId: string,
    ref: ExecutionRef,
    page: Page,
  ): Promise<{ items: ExecutionErrorRow[]; total: number }> {
    const execution = await this.execution(orgId, solutionId, ref);
    const { rows, total } = await listErrors(this.opts.db, execution.id, page);
    return { items: rows, total };
  }

  async error(orgId: number, solutionId: string, ref: ExecutionRef, errorId: string): Promise<ExecutionErrorRow> {
    const execution = await this.execution(orgId, solutionId, ref);
    const row = await getError(this.opts.db, execution.id, errorId);
    if (!row)
      throw new FerryError(
        'API_NOT_FOUND',
        `Error ${errorId} was not found in execution ${execution.id} of Solution ${execution.solutionId}.`,
      );
    return row;
  }

  /**
   * The failed source record of a record error (SPEC.md "Failed Record"), when the run kept it in
   * the cloud; 409 saying where it is, and the command that reads it there, when the Organization
   * keeps failed records on the Agent.
   */
  async failedRecord(
    orgId: number,
    solutionId: string,
    ref: ExecutionRef,
    errorId: string,
  ): Promise<{ error: ExecutionErrorRow; source: ConnectorRecord }> {
    const execution = await this.execution(orgId, solutionId, ref);
    const error = await getError(this.opts.db, execution.id, errorId);
    if (!error)
      throw new FerryError(
        'API_NOT_FOUND',
        `Error ${errorId} was not found in execution ${execution.id} of Solution ${execution.solutionId}.`,
      );
    if (!error.failedRecordId)
      throw new FerryError(
        'API_NOT_FOUND',
        `Error ${errorId} has no failed record: the run kept none for it (capture was off, or the record could not be read again).`,
      );
    if (execution.sourceDataLocal === 1) {
      const show = `ferry agent failures show ${error.failedRecordId}`;
      throw new FerryError(
        'API_CONFLICT',
        `The failed record of error ${errorId} is kept on the Agent that ran execution ${execution.id} (Agent ${execution.agentId}), not in the Service: the Organization keeps failed records on the Agent (isSourceDataLocal true). ` +
          `Read it on that Agent's machine with "${show} [--home DIR] [--instance N]", or list the run's with "ferry agent failures list --execution ${execution.runId}"; it is reprocessed from there.`,
        { details: { agentId: execution.agentId, failedRecordId: error.failedRecordId, command: show } },
      );
    }
    const row = await getFailedRecord(this.opts.db, execution.solutionId, error.failedRecordId);
    if (!row)
      throw new FerryError('API_NOT_FOUND', `The failed record of error ${errorId} has not reached the Service (yet).`);
    return { error, source: sourceOf(this.opts.secrets, row) };
  }

  /**
   * Sets (`mark` true) or clears the mark of one record error (SPEC.md "Record error"). Only an
   * error that can still be reprocessed can be marked: marking another is a 409; clearing its mark
   * is not an error (it has none).
   */
  async mark(
    orgId: number,
    solutionId: string,
    ref: ExecutionRef,
    errorId: string,
    mark: boolean,
  ): Promise<ExecutionErrorRow> {
    const execution = await this.execution(orgId, solutionId, ref);
    const before = await getError(this.opts.db, execution.id, errorId);
    if (!before)
      throw new FerryError(
        'API_NOT_FOUND',
        `Error ${errorId} was not found in execution ${execution.id} of Solution ${execution.solutionId}.`,
      );
    if (mark && before.canReprocess !== 1) {
      throw new FerryError(
        'API_CONFLICT',
        before.failedRecordId
          ? `Error ${before.id} cannot be marked: its record was reprocessed already (a record is reprocessed once; a new failure of it is a new error in the reprocess execution).`
          : `Error ${before.id} cannot be marked: the run kept no copy of its record to reprocess (capture of failed records was off, or the error is not a record's).`,
        { details: { errorId: before.id, canReprocess: false } },
      );
    }
    if (mark || before.canReprocess === 1) await markError(this.opts.db, execution.id, before.id, mark);
    const after = await getError(this.opts.db, execution.id, before.id);
    return after ?? before;
  }

  /**
   * Sets or clears the mark of every record error of the execution that can still be reprocessed:
   * the execution's mark default, at the cost of the errors marked one by one (error-marks.repo.ts).
   */
  async markAll(orgId: number, solutionId: string, ref: ExecutionRef, mark: boolean): Promise<MarkAllAnswer> {
    const execution = await this.execution(orgId, solutionId, ref);
    const { changed, reprocessable } = await this.opts.db
      .transaction()
      .execute((tx) => markExecutionErrors(tx, execution.id, mark));
    return { historyId: execution.id, mark, changed, reprocessRecordsRemaining: reprocessable };
  }

  /**
   * Reprocesses the marked records of the execution on the Solution's Agent (./reprocess.ts).
   * `also` is the second execution reference of `POST H/{historyId}/{id}/reprocess`: it must name
   * the same execution (by its id or its processExecutionId).
   */
  async reprocess(orgId: number, solutionId: string, ref: ExecutionRef, also?: ExecutionRef): Promise<ReprocessAnswer> {
    const solution = await this.solution(orgId, solutionId);
    const execution = await this.execution(orgId, solution.id, ref);
    if (also !== undefined) {
      const other = await this.execution(orgId, solution.id, also);
      if (other.id !== execution.id)
        throw new FerryError(
          'API_NOT_FOUND',
          `Execution ${String(also)} is not execution ${execution.id}: name the execution in both places of …/history/{historyId}/{id}/reprocess (its id or its processExecutionId).`,
        );
    }
    return this.#reprocessing.reprocess(solution, execution);
  }

  /** A page of a reprocess run's records for the Agent that runs it. */
  reprocessPage(agent: AgentRow, runId: string, mapId: number, after: number): Promise<ReprocessPage> {
    return this.#reprocessing.page(agent, runId, mapId, after);
  }

  /** Whether this process still waits for the Agent's answer to the reprocess run (./lost-reprocess-runs.ts leaves it alone). */
  isReprocessSending(runId: string): boolean {
    return this.#reprocessing.isSending(runId);
  }

  /** The due times the Solution's schedule did not start a run for, newest first. */
  async skipped(orgId: number, solutionId: string, page: Page): Promise<{ items: ScheduleSkipRow[]; total: number }> {
    const solution = await this.solution(orgId, solutionId);
    const { rows, total } = await listScheduleSkips(this.opts.db, solution.id, page);
    return { items: rows, total };
  }
}
