import { stringify } from 'csv-stringify/sync';
import { FerryError } from '../../src/errors/ferry-error.js';
import type { SecretBox } from '../crypto/master-key.js';
import { errorsAfter, getExecution } from '../store/repos/executions.repo.js';
import { getFailedRecords } from '../store/repos/failed-records.repo.js';
import { insertHistoryExport, takeHistoryExport } from '../store/repos/history-exports.repo.js';
import { getSolution } from '../store/repos/solutions.repo.js';
import type { ExecutionErrorRow, ExecutionRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { sourceOf } from './failed-records.js';

/**
 * The export of an execution's record errors as CSV (SPEC.md "History": `GET H/{id}/export` →
 * exportId, then `GET H/{id}/export/{exportId}` once):
 *
 *   request ─▶ history_exports row (expires in an hour) ─▶ {exportId}
 *   download ─▶ row deleted by the statement that reads it (a second download is a 404)
 *            ─▶ CSV pulled by the response: a page of 1,000 errors by key (seq > last),
 *               their cloud failed records by ID, opened ─▶ rows ─▶ next page …
 *
 * Memory holds one page whatever the size of the execution: nothing is built ahead of the
 * response, and the next page is read only when the client has taken the previous one.
 */

/** How long an exportId can be downloaded. */
export const HISTORY_EXPORT_TTL_MS = 60 * 60 * 1000;

/** Errors read (and rows written) at a time. */
export const EXPORT_PAGE_SIZE = 1000;

/**
 * The columns, in order. The fields of the failed record are one JSON column, `record` (the
 * source fields the Map read, as an object), not one column each: the records of one execution
 * come from several Maps and entities with different fields, and a header naming them all would
 * need a pass over every record before the first line could be sent. `sourceKey` (the record's key
 * as a JSON object) and `sourceRow` came later and follow `record`, so that a reader that takes the
 * columns by position still finds the first fourteen where they were.
 */
export const EXPORT_COLUMNS = [
  'id',
  'failedRecordId',
  'mapId',
  'mapName',
  'sourceEntity',
  'blockId',
  'blockName',
  'code',
  'errorMessage',
  'errorDetail',
  'canReprocess',
  'marked',
  'created',
  'record',
  'sourceKey',
  'sourceRow',
] as const;

/** RFC 4180: CRLF after every record, a field quoted when it holds a comma, a quote or a line break. */
const CSV_OPTIONS = { record_delimiter: 'windows' } as const;

export interface HistoryExportsOptions {
  readonly db: Db;
  /** Opens the failed records kept in the cloud. */
  readonly secrets: SecretBox;
  readonly now?: () => Date;
}

/** An export being downloaded: the file name to offer and the CSV, read as it is pulled. */
export interface ExportDownload {
  readonly fileName: string;
  readonly csv: AsyncIterable<string>;
}

/** Single-use CSV exports of the record errors of one execution. */
export class HistoryExports {
  readonly #opts: HistoryExportsOptions;
  readonly #now: () => Date;

  constructor(opts: HistoryExportsOptions) {
    this.#opts = opts;
    this.#now = opts.now ?? (() => new Date());
  }

  async #execution(orgId: number, solutionId: string, ref: number | string): Promise<ExecutionRow> {
    const solution = await getSolution(this.#opts.db, orgId, solutionId);
    if (!solution)
      throw new FerryError('API_NOT_FOUND', `Solution ${solutionId} was not found in Organization ${orgId}.`);
    const row = await getExecution(this.#opts.db, solution.id, typeof ref === 'string' ? ref.toLowerCase() : ref);
    if (!row)
      throw new FerryError(
        'API_NOT_FOUND',
        `Execution ${ref} was not found in the History of Solution ${solution.id}.`,
      );
    return row;
  }

  /** A new single-use export of the execution's errors; answers its ID. */
  async request(orgId: number, solutionId: string, ref: number | string, createdBy: string | null): Promise<number> {
    const execution = await this.#execution(orgId, solutionId, ref);
    const now = this.#now();
    return insertHistoryExport(this.#opts.db, {
      orgId,
      solutionId: execution.solutionId,
      executionId: execution.id,
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + HISTORY_EXPORT_TTL_MS).toISOString(),
      createdBy,
    });
  }

  /**
   * Uses up an export ID and answers the CSV of the execution's errors. An ID that was never
   * issued for this execution, was downloaded already or expired is a 404.
   */
  async take(orgId: number, solutionId: string, ref: number | string, exportId: number): Promise<ExportDownload> {
    const execution = await this.#execution(orgId, solutionId, ref);
    const taken = await takeHistoryExport(
      this.#opts.db,
      { orgId, solutionId: execution.solutionId, executionId: execution.id, id: exportId },
      this.#now().toISOString(),
    );
    if (!taken) {
      throw new FerryError(
        'API_NOT_FOUND',
        `Export ${exportId} of execution ${execution.id} was not found: an exportId downloads once, within an hour of the request. Request a new one with GET …/history/${execution.id}/export.`,
      );
    }
    return { fileName: `execution-${execution.id}-errors`, csv: this.#csv(execution) };
  }

  async *#csv(execution: ExecutionRow): AsyncGenerator<string> {
    yield stringify([[...EXPORT_COLUMNS]], CSV_OPTIONS);
    let after = 0;
    for (;;) {
      const page = await errorsAfter(this.#opts.db, execution.id, after, EXPORT_PAGE_SIZE);
      const last = page.at(-1);
      if (!last) return;
      const records =
        execution.sourceDataLocal === 1 ? new Map<string, string>() : await this.#records(execution.solutionId, page);
      yield stringify(
        page.map((e) => csvRow(e, e.failedRecordId === null ? '' : (records.get(e.failedRecordId) ?? ''))),
        CSV_OPTIONS,
      );
      after = last.seq;
    }
  }

  /** The page's failed records kept in the cloud, by ID, as the JSON of their source fields. */
  async #records(solutionId: string, page: readonly ExecutionErrorRow[]): Promise<Map<string, string>> {
    const ids = [...new Set(page.flatMap((e) => (e.failedRecordId === null ? [] : [e.failedRecordId])))];
    const rows = await getFailedRecords(this.#opts.db, solutionId, ids);
    return new Map(rows.map((r) => [r.id, JSON.stringify(sourceOf(this.#opts.secrets, r))]));
  }
}

/** One CSV row of an error, in the order of {@link EXPORT_COLUMNS}. */
function csvRow(e: ExecutionErrorRow, record: string): string[] {
  return [
    e.id,
    e.failedRecordId ?? '',
    e.mapId === null ? '' : String(e.mapId),
    e.mapName,
    e.sourceEntity,
    e.blockId ?? '',
    e.blockName ?? '',
    e.code,
    e.errorMessage,
    e.errorDetail,
    e.canReprocess === 1 ? 'true' : 'false',
    e.marked === 1 ? 'true' : 'false',
    e.created,
    record,
    e.sourceKey ?? '',
    e.sourceRow === null ? '' : String(e.sourceRow),
  ];
}
