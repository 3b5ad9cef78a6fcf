import { Readable } from 'node:stream';
import type { FastifyReply } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { claimExport, createExport, getTable, LOOKUP_TABLE_EXPORT, updateTable } from '../../store/repos/lookup-tables.repo.js';
import { countValues, deleteAllValues, insertValues, nextSeq, pairPages } from '../../store/repos/lookup-values.repo.js';
import type { Db } from '../../store/sql.js';
import { nowIso } from '../../util/values.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { CSV_HEADER, csvRecords, parseLookupCsv } from '../lookup-csv.js';
import { tableNotFound } from '../lookup-table-model.js';
import { ExportCreated, ExportParams, ImportBody, ImportQuery, ImportResult, TableParams } from '../schemas/lookup-table.schema.js';

const tags = ['Lookup Tables'];

/** The CSV of a table, header first, read a page of values at a time. */
async function* tableCsv(db: Db, tableId: string): AsyncGenerator<string> {
  yield CSV_HEADER;
  for await (const page of pairPages(db, tableId)) yield csvRecords(page);
}

/** `attachment` with an ASCII fallback name and the exact name in RFC 5987 form. */
function attachment(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%;]/g, '_');
  return `attachment; filename="${ascii}.csv"; filename*=UTF-8''${encodeURIComponent(`${name}.csv`)}`;
}

/** Sends a CSV download; the stream bypasses the response serializer. */
function sendCsv(reply: FastifyReply, name: string, csv: Readable): FastifyReply {
  return reply.type('text/csv; charset=utf-8').header('Content-Disposition', attachment(name)).send(csv);
}

/** Import of comma-separated text into an existing table; export as a single-use CSV download. */
const lookupImportExportRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db, dialect } = deps.store;

  // The import also takes the CSV as the raw body (text/plain is Fastify's own parser).
  app.addContentTypeParser(['text/csv', 'application/csv'], { parseAs: 'string' }, (_req, body, done) => done(null, body));

  app.post('/v1/orgs/:orgId/lookuptables/:tableId/import', {
    config: { access: 'write' },
    schema: {
      tags,
      summary: 'Import comma-separated value1,value2 lines into an existing Lookup Table (appends; replace=true replaces)',
      description:
        'The body is the CSV text: raw (text/csv or text/plain), a JSON string, or {"commaSeparatedValues": "…", "hasHeaderRow": true}. ' +
        'All or nothing: a line that cannot be read or has other than two fields is a 400 naming the line.',
      params: TableParams,
      querystring: ImportQuery,
      body: ImportBody,
      response: { 200: ImportResult },
    },
  }, async (req) => {
    const { org, user } = orgOf(req);
    const tableId = req.params.tableId.toLowerCase();
    const body = req.body;
    const text = typeof body === 'string' ? body : body.commaSeparatedValues;
    const hasHeaderRow = typeof body === 'string' ? req.query.hasHeaderRow : (body.hasHeaderRow ?? req.query.hasHeaderRow);
    if (!(await getTable(db, org.id, tableId))) throw tableNotFound(tableId);
    // Read and check everything before the transaction: a bad line changes nothing, and the store
    // is held only for the writes.
    const pairs = parseLookupCsv(text, hasHeaderRow);
    const now = nowIso();
    return db.transaction().execute(async (tx) => {
      const found = await updateTable(tx, org.id, tableId, { lastModificationDate: now, modificationBy: userName(user) });
      if (!found) throw tableNotFound(tableId);
      const valuesRemoved = req.query.replace ? await deleteAllValues(tx, tableId) : 0;
      const first = req.query.replace ? 0 : await nextSeq(tx, tableId);
      await insertValues(tx, dialect, tableId, first, pairs, now);
      return { lookupTableId: tableId, valuesImported: pairs.length, valuesRemoved, valueCount: await countValues(tx, tableId) };
    });
  });

  // No automatic HEAD routes: a HEAD would create an export, or use one up, without delivering it.
  app.get('/v1/orgs/:orgId/lookuptables/:tableId/export', {
    exposeHeadRoute: false,
    config: { access: 'read' },
    schema: { tags, summary: 'Export a Lookup Table: returns a single-use exportId', params: TableParams, response: { 200: ExportCreated } },
  }, async (req) => {
    const { org } = orgOf(req);
    const table = await getTable(db, org.id, req.params.tableId);
    if (!table) throw tableNotFound(req.params.tableId);
    return { exportId: await createExport(db, org.id, LOOKUP_TABLE_EXPORT, table.id, nowIso()) };
  });

  app.get('/v1/orgs/:orgId/lookuptables/:tableId/export/:exportId', {
    exposeHeadRoute: false,
    config: { access: 'read' },
    schema: {
      tags,
      summary: 'Download an export as CSV (value1,value2); each exportId works once',
      params: ExportParams,
      response: { 200: z.string().describe('text/csv: a header line value1,value2, then one line per value, CRLF, RFC 4180 quoting') },
    },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const table = await getTable(db, org.id, req.params.tableId);
    if (!table) throw tableNotFound(req.params.tableId);
    const claim = await claimExport(db, { orgId: org.id, id: req.params.exportId, kind: LOOKUP_TABLE_EXPORT, resourceId: table.id }, nowIso());
    if (claim === 'missing') throw new FerryError('API_NOT_FOUND', `Export ${req.params.exportId} of Lookup Table ${table.id} was not found.`);
    if (claim === 'used') {
      throw new FerryError('API_EXPORT_USED', `Export ${req.params.exportId} of Lookup Table "${table.name}" was already downloaded; request a new exportId with GET …/lookuptables/${table.id}/export.`);
    }
    return sendCsv(reply, table.name, Readable.from(tableCsv(db, table.id)));
  });
};

export default lookupImportExportRoutes;
