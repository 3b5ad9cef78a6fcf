import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { claimDownload, requestExport } from '../../lookup-tables/export.js';
import { importIntoTable } from '../../lookup-tables/import.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import {
  ExportCreated,
  ExportParams,
  ImportBody,
  ImportQuery,
  ImportResult,
  TableParams,
} from '../schemas/lookup-table.schema.js';

const tags = ['Lookup Tables'];

/** The raw CSV body of an import request, left unread by the content-type parser. */
const uploads = new WeakMap<FastifyRequest, Readable>();

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

  app.post(
    '/v1/orgs/:orgId/lookuptables/:tableId/import',
    {
      config: { access: 'write', bodyTypes: ['text/csv', 'application/csv', 'text/plain', 'application/json'] },
      schema: {
        tags,
        summary:
          'Import comma-separated value1,value2 lines into an existing Lookup Table (appends; replace=true replaces)',
        description:
          'The body is the CSV text: raw (text/csv or text/plain), a JSON string, or {"commaSeparatedValues": "…", "hasHeaderRow": true}. ' +
          'All or nothing: a line that cannot be read or has other than two fields is a 400 naming the line. ' +
          'A raw body is read as a stream and written in batches: send large files raw.',
        params: TableParams,
        querystring: ImportQuery,
        body: ImportBody,
        response: { 200: ImportResult },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      const body = req.body;
      const upload = uploads.get(req);
      const hasHeaderRow =
        typeof body === 'string' ? req.query.hasHeaderRow : (body.hasHeaderRow ?? req.query.hasHeaderRow);
      const declared = Number(req.headers['content-length']);
      const source = upload
        ? { upload, declaredLength: Number.isFinite(declared) ? declared : undefined }
        : { text: typeof body === 'string' ? body : body.commaSeparatedValues };
      const job = {
        orgId: org.id,
        tableId: req.params.tableId.toLowerCase(),
        modifiedBy: userName(user),
        replace: req.query.replace,
        hasHeaderRow,
      };
      return importIntoTable(deps.store, deps.config, job, source);
    },
  );

  // No automatic HEAD routes: a HEAD would create an export, or use one up, without delivering it.
  app.get(
    '/v1/orgs/:orgId/lookuptables/:tableId/export',
    {
      exposeHeadRoute: false,
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Export a Lookup Table: returns a single-use exportId',
        params: TableParams,
        response: { 200: ExportCreated },
      },
    },
    async (req) => ({ exportId: await requestExport(db, orgOf(req).org.id, req.params.tableId) }),
  );

  app.get(
    '/v1/orgs/:orgId/lookuptables/:tableId/export/:exportId',
    {
      exposeHeadRoute: false,
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'Download an export as CSV (value1,value2); each exportId works once',
        params: ExportParams,
        response: {
          200: z
            .string()
            .describe('text/csv: a header line value1,value2, then one line per value, CRLF, RFC 4180 quoting'),
        },
      },
    },
    async (req, reply) => {
      const { table, csv } = await claimDownload(db, orgOf(req).org.id, req.params.tableId, req.params.exportId);
      return sendCsv(reply, table.name, Readable.from(csv));
    },
  );
};

export default lookupImportExportRoutes;
