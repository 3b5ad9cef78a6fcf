import fs from 'node:fs';
import path from 'node:path';
import type { Readable } from 'node:stream';
import { FerryError } from '../../src/errors/ferry-error.js';
import { processAlive } from '../../src/util/process.js';
import { mkdirPrivate } from '../store/data-dir.js';
import { updateTable } from '../store/repos/lookup-tables.repo.js';
import { countValues, deleteAllValues, insertValues, nextSeq } from '../store/repos/lookup-values.repo.js';
import type { Store } from '../store/store.js';
import { nowIso } from '../util/values.js';
import { readLookupCsv } from './lookup-csv.js';
import { tableNotFound } from './lookup-table-model.js';

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

/** Characters of a JSON-borne CSV text handed to the reader at a time. */
const TEXT_SLICE = 16 * 1024;

const tooLarge = (): FerryError => new FerryError('API_PAYLOAD_TOO_LARGE', 'The request body is larger than the Service accepts (FERRY_BODY_LIMIT).');

/** A request body on disk, read back as UTF-8 text chunks; `remove` deletes it. */
export interface Spool {
  chunks(): AsyncIterable<string>;
  remove(): Promise<void>;
}

/** UTF-8 text of byte chunks; a character split across two chunks is kept whole, a byte-order mark is left to the CSV reader. */
async function* decode(bytes: AsyncIterable<Buffer>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { ignoreBOM: true });
  for await (const chunk of bytes) yield decoder.decode(chunk, { stream: true });
  const rest = decoder.decode();
  if (rest) yield rest;
}

/** A text already in memory, in slices, so the reader parses it a bounded piece at a time too. */
export async function* textChunks(text: string): AsyncGenerator<string> {
  for (let i = 0; i < text.length; i += TEXT_SLICE) yield text.slice(i, i + TEXT_SLICE);
}

/**
 * The folder of import spools: in the data folder (private, on disk rather than a RAM-backed
 * /tmp), one folder per upload named after the Service process that made it.
 */
export function spoolRoot(dataDir: string): string {
  return path.join(dataDir, 'import-spool');
}

/**
 * Removes the spools of Service processes that no longer run (a Service killed mid-import leaves
 * its body behind); answers how many. Spools of a live process (another Service on the same data
 * folder) are left alone.
 */
export function removeDeadSpools(dataDir: string): number {
  let removed = 0;
  let names: string[];
  try {
    names = fs.readdirSync(spoolRoot(dataDir));
  } catch {
    return 0;
  }
  for (const name of names) {
    const pid = Number(/^(\d+)-/.exec(name)?.[1]);
    if (Number.isSafeInteger(pid) && pid !== process.pid && processAlive(pid)) continue;
    fs.rmSync(path.join(spoolRoot(dataDir), name), { recursive: true, force: true });
    removed += 1;
  }
  return removed;
}

/**
 * Writes a request body to a file only the Service's user can read, in the data folder, refusing
 * more than `limit` bytes with 413 (the rest of the body is read and dropped, so the answer still
 * reaches the client).
 */
export async function spoolUpload(upload: Readable, limit: number, dataDir: string, declaredLength?: number): Promise<Spool> {
  if (declaredLength !== undefined && declaredLength > limit) {
    upload.resume();
    throw tooLarge();
  }
  mkdirPrivate(spoolRoot(dataDir));
  const dir = await fs.promises.mkdtemp(path.join(spoolRoot(dataDir), `${process.pid}-`));
  const file = path.join(dir, 'body.csv');
  const remove = (): Promise<void> => fs.promises.rm(dir, { recursive: true, force: true });
  try {
    await new Promise<void>((resolve, reject) => {
      const out = fs.createWriteStream(file, { mode: 0o600 });
      let bytes = 0;
      let failed = false;
      const fail = (err: Error): void => {
        if (failed) return;
        failed = true;
        upload.unpipe(out);
        upload.resume();
        out.destroy();
        reject(err);
      };
      upload.on('data', (chunk: Buffer) => {
        bytes += chunk.length;
        if (bytes > limit) fail(tooLarge());
      });
      upload.once('error', fail);
      out.once('error', fail);
      out.once('finish', () => (failed ? undefined : resolve()));
      upload.pipe(out);
    });
  } catch (err) {
    await remove();
    throw err;
  }
  return { chunks: () => decode(fs.createReadStream(file, { highWaterMark: TEXT_SLICE })), remove };
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
    const found = await updateTable(tx, job.orgId, job.tableId, { lastModificationDate: now, modificationBy: job.modifiedBy });
    if (!found) throw tableNotFound(job.tableId);
    const valuesRemoved = job.replace ? await deleteAllValues(tx, job.tableId) : 0;
    let seq = job.replace ? 0 : await nextSeq(tx, job.tableId);
    let valuesImported = 0;
    for await (const batch of readLookupCsv(job.chunks, job.hasHeaderRow, IMPORT_BATCH_ROWS)) {
      seq = await insertValues(tx, dialect, job.tableId, seq, batch, now);
      valuesImported += batch.length;
    }
    return { lookupTableId: job.tableId, valuesImported, valuesRemoved, valueCount: await countValues(tx, job.tableId) };
  });
}
