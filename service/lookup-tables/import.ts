import type { Readable } from 'node:stream';
import type { ServiceConfig } from '../config.js';
import { getTable, updateTable } from '../store/repos/lookup-tables.repo.js';
import { countValues, deleteAllValues, insertValues, nextSeq } from '../store/repos/lookup-values.repo.js';
import type { Store } from '../store/store.js';
import { nowIso } from '../util/values.js';
import { readLookupCsv } from './csv.js';
import { spoolUpload, TEXT_SLICE, type Spool } from './spool.js';
import { tableNotFound } from './tables.js';

/**
 * A CSV import into a Lookup Table, in bounded memory and without holding up other requests:
 *
 *   request body ──► spool file (≤ FERRY_BODY_LIMIT, on disk) ──► 16 KiB slices ──► csv-parse
 *        ──► batches of IMPORT_BATCH_ROWS pairs ──► INSERT (awaited: other requests run) ──► …
 *                        (one transaction from the first batch to COMMIT; on SQLite its
 *                         statements and COMMIT run on a worker thread: Store.bulkTransaction)
 *
 * The body is spooled before the transaction begins, so a slow upload never holds the store's
 * write lock (on SQLite other writes wait for it). A bad line anywhere rolls the transaction back:
 * nothing is imported and `replace=true` removes nothing, as before.
 */

/** Pairs per INSERT of an import: one statement, and one slice of parsing between two, is a few milliseconds. */
export const IMPORT_BATCH_ROWS = 500;

/** A text already in memory, in slices, so the reader parses it a bounded piece at a time too. */
export async function* textChunks(text: string): AsyncGenerator<string> {
  for (let i = 0; i < text.length; i += TEXT_SLICE) yield text.slice(i, i + TEXT_SLICE);
}

export interface ImportJob {
  orgId: number;
  tableId: string;
  modifiedBy: string;
  replace: boolean;
  hasHeaderRow: boolean;
  chunks: AsyncIterable<string>;
}

export interface ImportOutcome {
  lookupTableId: string;
  valuesImported: number;
  valuesRemoved: number;
  valueCount: number;
}

/**
 * Reads the CSV and writes its pairs into the table in one transaction, a batch at a time. Every
 * statement is awaited I/O (PostgreSQL's server; on SQLite the worker thread of
 * Store.bulkTransaction, the replace's DELETE and the COMMIT included), so other requests are
 * answered between two batches while an import of a million lines runs.
 */
export async function importCsv(store: Store, job: ImportJob): Promise<ImportOutcome> {
  const now = nowIso();
  const { dialect } = store;
  return store.bulkTransaction(async (tx) => {
    const found = await updateTable(tx, job.orgId, job.tableId, {
      lastModificationDate: now,
      modificationBy: job.modifiedBy,
    });
    if (!found) throw tableNotFound(job.tableId);
    const valuesRemoved = job.replace ? await deleteAllValues(tx, job.tableId) : 0;
    let seq = job.replace ? 0 : await nextSeq(tx, job.tableId);
    let valuesImported = 0;
    for await (const batch of readLookupCsv(job.chunks, job.hasHeaderRow, IMPORT_BATCH_ROWS)) {
      seq = await insertValues(tx, dialect, job.tableId, seq, batch, now);
      valuesImported += batch.length;
    }
    return {
      lookupTableId: job.tableId,
      valuesImported,
      valuesRemoved,
      valueCount: await countValues(tx, job.tableId),
    };
  });
}

/** Where an import's CSV text comes from: a raw request body, or a text already in memory. */
export type ImportSource = { upload: Readable; declaredLength?: number | undefined } | { text: string };

/**
 * Imports CSV text into an existing table (404 otherwise; a raw body is then drained unread). A
 * raw body goes to a spool file first, so a slow upload never holds the store's write lock; a text
 * in memory (bounded by FERRY_BODY_LIMIT) is cut in slices. The spool is removed whatever happens.
 */
export async function importIntoTable(
  store: Store,
  config: Pick<ServiceConfig, 'bodyLimit' | 'dataDir'>,
  job: Omit<ImportJob, 'chunks'>,
  source: ImportSource,
): Promise<ImportOutcome> {
  if (!(await getTable(store.db, job.orgId, job.tableId))) {
    if ('upload' in source) source.upload.resume();
    throw tableNotFound(job.tableId);
  }
  let spool: Spool | undefined;
  let chunks: AsyncIterable<string>;
  if ('upload' in source) {
    spool = await spoolUpload(source.upload, config.bodyLimit, config.dataDir, source.declaredLength);
    chunks = spool.chunks();
  } else {
    chunks = textChunks(source.text);
  }
  try {
    return await importCsv(store, { ...job, chunks });
  } finally {
    await spool?.remove();
  }
}
