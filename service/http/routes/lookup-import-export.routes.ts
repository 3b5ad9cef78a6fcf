import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { claimExport, createExport, getTable, LOOKUP_TABLE_EXPORT } from '../../store/repos/lookup-tables.repo.js';
import { pairPages } from '../../store/repos/lookup-values.repo.js';
import type { Db } from '../../store/sql.js';
import { nowIso } from '../../util/values.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { CSV_HEADER, csvRecords } from '../lookup-csv.js';
import { importCsv, spoolUpload, textChunks } from '../lookup-import.js';
import { tableNotFound } from '../lookup-table-model.js';
import { ExportCreated, ExportParams, ImportBody, ImportQuery, ImportResult, TableParams } from '../schemas/lookup-table.schema.js';

const tags = ['Lookup Tables'];

/** The raw CSV body of an import request, left unread by the content-type parser. */
const uploads = new WeakMap<FastifyRequest, Readable>();

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
  const { db } = deps.store;

  // A raw CSV body (text/csv, application/csv, text/plain) is not read here: the handler streams
  // it to a spool file after authentication, so a 60 MB import never sits in memory. The body the
  // schema sees is an empty string standing for it.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser(['text/csv', 'application/csv', 'text/plain'], (req, payload, done) => {
    uploads.set(req, payload);
    done(null, '');
  });

  app.post('/v1/orgs/:orgId/lookuptables/:tableId/import', {
    config: { access: 'write' },
    schema: {
      tags,
      summary: 'Import comma-separated value1,value2 lines into an existing Lookup Table (appends; replace=true replaces)',
      description:
        'The body is the CSV text: raw (text/csv or text/plain), a JSON string, or {"commaSeparatedValues": "…", "hasHeaderRow": true}. ' +
        'All or nothing: a line that cannot be read or has other than two fields is a 400 naming the line. ' +
        'A raw body is read as a stream and written in batches: send large files raw.',
      params: TableParams,
      querystring: ImportQuery,
      body: ImportBody,
      response: { 200: ImportResult },
    },
  }, async (req) => {
    const { org, user } = orgOf(req);
    const tableId = req.params.tableId.toLowerCase();
    const body = req.body;
    const upload = uploads.get(req);
    const hasHeaderRow = typeof body === 'string' ? req.query.hasHeaderRow : (body.hasHeaderRow ?? req.query.hasHeaderRow);
    if (!(await getTable(db, org.id, tableId))) {
      upload?.resume();
      throw tableNotFound(tableId);
    }
    // The raw body goes to a spool file first, so a slow upload never holds the store's write
    // lock; a JSON body is already in memory (bounded by FERRY_BODY_LIMIT) and is cut in slices.
    const declared = Number(req.headers['content-length']);
    const spool = upload ? await spoolUpload(upload, deps.config.bodyLimit, deps.config.dataDir, Number.isFinite(declared) ? declared : undefined) : undefined;
    try {
      const text = typeof body === 'string' ? body : body.commaSeparatedValues;
      const chunks = spool ? spool.chunks() : textChunks(text);
      return await importCsv(deps.store, { orgId: org.id, tableId, modifiedBy: userName(user), replace: req.query.replace, hasHeaderRow, chunks });
    } finally {
      await spool?.remove();
    }
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
