import { FerryError } from '../../src/errors/ferry-error.js';
import { claimExport, createExport, LOOKUP_TABLE_EXPORT } from '../store/repos/lookup-tables.repo.js';
import { pairPages } from '../store/repos/lookup-values.repo.js';
import type { LookupTableRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { nowIso } from '../util/values.js';
import { CSV_HEADER, csvRecords } from './csv.js';
import { tableOf } from './tables.js';

/**
 * The export of a Lookup Table as CSV: an export ID is asked for first, and each ID downloads the
 * table once.
 */

/** A new single-use export of the table; answers its ID. */
export async function requestExport(db: Db, orgId: number, tableId: string): Promise<number> {
  const table = await tableOf(db, orgId, tableId);
  return createExport(db, orgId, LOOKUP_TABLE_EXPORT, table.id, nowIso());
}

/** The CSV of a table, header first, read a page of values at a time. */
async function* tableCsv(db: Db, tableId: string): AsyncGenerator<string> {
  yield CSV_HEADER;
  for await (const page of pairPages(db, tableId)) yield csvRecords(page);
}

/**
 * Uses up an export ID and answers the table with its CSV, read as it is pulled. An ID that was
 * never issued for this table is a 404; one already used is API_EXPORT_USED.
 */
export async function claimDownload(
  db: Db,
  orgId: number,
  tableId: string,
  exportId: number,
): Promise<{ table: LookupTableRow; csv: AsyncIterable<string> }> {
  const table = await tableOf(db, orgId, tableId);
  const claim = await claimExport(
    db,
    { orgId, id: exportId, kind: LOOKUP_TABLE_EXPORT, resourceId: table.id },
    nowIso(),
  );
  if (claim === 'missing')
    throw new FerryError('API_NOT_FOUND', `Export ${exportId} of Lookup Table ${table.id} was not found.`);
  if (claim === 'used') {
    throw new FerryError(
      'API_EXPORT_USED',
      `Export ${exportId} of Lookup Table "${table.name}" was already downloaded; request a new exportId with GET …/lookuptables/${table.id}/export.`,
    );
  }
  return { table, csv: tableCsv(db, table.id) };
}
