/**
 * Reading a local failed-record store without changing it (`ferry map failures list|show`): the
 * file is opened read-only and must exist, so that a mistyped folder is said, not created.
 */
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { FerryError } from '../errors/ferry-error.js';
import { FAILED_RECORDS_FILE, toRecord, type FailedRecordRow, type StoredFailedRecord } from './store.js';

/** Which records a page holds: filters (all optional) and the page. */
export interface FailedRecordQuery {
  mapName?: string | undefined;
  code?: string | undefined;
  executionId?: string | undefined;
  limit: number;
  offset: number;
}

export interface FailedRecordPage {
  /** Records matching the filters, all pages together. */
  total: number;
  records: StoredFailedRecord[];
}

/** A read-only view of the store in `folder`. */
export class FailedRecordBrowser {
  readonly #db: Database.Database;

  constructor(folder: string) {
    const file = path.join(folder, FAILED_RECORDS_FILE);
    if (!fs.existsSync(file)) {
      throw new FerryError(
        'RUN_STORE_FAILED',
        `There is no failed-record store in ${folder} (no ${FAILED_RECORDS_FILE}); give the folder a run was given with --failures.`,
        { details: { folder } },
      );
    }
    try {
      this.#db = new Database(file, { readonly: true, fileMustExist: true });
    } catch (err) {
      throw new FerryError(
        'RUN_STORE_FAILED',
        `The failed-record store in ${folder} cannot be opened: ${err instanceof Error ? err.message : String(err)}`,
        { cause: err, details: { folder } },
      );
    }
  }

  /** A page of records, newest first. */
  page(q: FailedRecordQuery): FailedRecordPage {
    const where: string[] = [];
    const params: (string | number)[] = [];
    if (q.mapName !== undefined) {
      where.push('map_name = ?');
      params.push(q.mapName);
    }
    if (q.code !== undefined) {
      where.push('code = ?');
      params.push(q.code);
    }
    if (q.executionId !== undefined) {
      where.push('execution_id = ?');
      params.push(q.executionId);
    }
    const clause = where.length > 0 ? ` WHERE ${where.join(' AND ')}` : '';
    const total = this.#db
      .prepare(`SELECT count(*) FROM failed_records${clause}`)
      .pluck()
      .get(...params) as number;
    const rows = this.#db
      .prepare(`SELECT * FROM failed_records${clause} ORDER BY created_at DESC, rowid DESC LIMIT ? OFFSET ?`)
      .all(...params, q.limit, q.offset) as FailedRecordRow[];
    return { total, records: rows.map(toRecord) };
  }

  /** One record by its id, or by a unique beginning of it (as printed in a list). */
  get(idOrPrefix: string): StoredFailedRecord | undefined {
    const exact = this.#db.prepare('SELECT * FROM failed_records WHERE id = ?').get(idOrPrefix) as
      FailedRecordRow | undefined;
    if (exact) return toRecord(exact);
    if (!/^[0-9a-f-]{4,}$/i.test(idOrPrefix)) return undefined;
    const rows = this.#db
      .prepare("SELECT * FROM failed_records WHERE id LIKE ? || '%' LIMIT 2")
      .all(idOrPrefix.toLowerCase()) as FailedRecordRow[];
    if (rows.length > 1)
      throw new FerryError(
        'API_VALIDATION',
        `More than one failed record begins with ${idOrPrefix}: give more of its id.`,
      );
    return rows[0] ? toRecord(rows[0]) : undefined;
  }

  close(): void {
    this.#db.close();
  }
}
