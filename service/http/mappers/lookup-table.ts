import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import { valuePages } from '../../store/repos/lookup-values.repo.js';
import type { LookupTableRow, LookupTableValueRow } from '../../store/schema.js';
import type { Db } from '../../store/sql.js';
import type { LookupTableModel, LookupTableValueModel } from '../schemas/lookup-table.schema.js';

/** Stored Lookup Tables and their values as the API shows them. */

export function toLookupTableValue(row: LookupTableValueRow): LookupTableValueModel {
  return {
    id: row.id,
    value1: row.value1,
    value2: row.value2,
    creationDate: row.creationDate,
    lastModificationDate: row.lastModificationDate,
  };
}

/** A table without its values (lists without includeLookupTableValues). */
export function toLookupTable(row: LookupTableRow): LookupTableModel {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    creationDate: row.creationDate,
    lastModificationDate: row.lastModificationDate,
    modificationBy: row.modificationBy,
  };
}

const str = JSON.stringify;

/** The JSON of one value, as `JSON.stringify(toLookupTableValue(row))` but without the object in between (it runs 200,000 times a table). */
function valueJson(v: LookupTableValueRow): string {
  return `{"id":${str(v.id)},"value1":${str(v.value1)},"value2":${str(v.value2)},"creationDate":${str(v.creationDate)},"lastModificationDate":${str(v.lastModificationDate)}}`;
}

/** Characters gathered before a chunk is handed to the socket. */
const FLUSH_AT = 64 * 1024;

/**
 * The JSON of tables with all their values, produced a page of values at a time: a table of
 * 200,000 values goes out without being built in memory, and a slow client slows the reads down
 * (the stream is pulled). `array` wraps the tables in a JSON array (lists).
 */
async function* tablesJson(db: Db, rows: readonly LookupTableRow[], array: boolean): AsyncGenerator<string> {
  let buffer = array ? '[' : '';
  for (const [i, row] of rows.entries()) {
    const head = JSON.stringify(toLookupTable(row));
    buffer += `${i > 0 ? ',' : ''}${head.slice(0, -1)},"lookupTableValues":[`;
    let first = true;
    for await (const page of valuePages(db, row.id)) {
      for (const v of page) {
        buffer += (first ? '' : ',') + valueJson(v);
        first = false;
        if (buffer.length >= FLUSH_AT) {
          yield buffer;
          buffer = '';
        }
      }
    }
    buffer += ']}';
  }
  if (array) buffer += ']';
  yield buffer;
}

/**
 * Sends tables with their values as a JSON stream. The route's response schema still documents
 * the model; a stream bypasses the serializer, which would otherwise hold it all in memory twice.
 */
export function sendTablesJson(
  reply: FastifyReply,
  db: Db,
  rows: readonly LookupTableRow[],
  array: boolean,
): FastifyReply {
  return reply.type('application/json; charset=utf-8').send(Readable.from(tablesJson(db, rows, array)));
}
