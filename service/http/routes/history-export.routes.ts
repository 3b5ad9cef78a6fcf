import { Readable } from 'node:stream';
import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { z } from 'zod';
import { HistoryExports } from '../../history/export.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { ExecutionParams } from '../schemas/history.schema.js';
import { HistoryExportCreated, HistoryExportCsv, HistoryExportParams } from '../schemas/history-export.schema.js';

const tags = ['History'];

/** Sends a CSV download; the stream bypasses the response serializer. */
function sendCsv(reply: FastifyReply, fileName: string, csv: Readable): FastifyReply {
  return reply
    .type('text/csv; charset=utf-8')
    .header('Content-Disposition', `attachment; filename="${fileName}.csv"`)
    .send(csv);
}

/** The CSV export of an execution's record errors: an exportId first, then one download (service/history/export.ts). */
const historyExportRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const exports = new HistoryExports({ db: deps.store.db, secrets: deps.secrets });
  const H = '/v1/orgs/:orgId/solutions/:solutionId/history';

  const request = async (
    req: FastifyRequest<{ Params: z.infer<typeof ExecutionParams> }>,
  ): Promise<{ exportId: number }> => {
    const { org, user } = orgOf(req);
    return { exportId: await exports.request(org.id, req.params.solutionId, req.params.id, userName(user)) };
  };
  const summary = "Export an execution's record errors as CSV: returns a single-use exportId";

  // No automatic HEAD routes: a HEAD would create an export, or use one up, without delivering it.
  app.get(
    `${H}/:id/export`,
    {
      exposeHeadRoute: false,
      config: { access: 'read' },
      schema: { tags, summary, params: ExecutionParams, response: { 200: HistoryExportCreated } },
    },
    request,
  );

  // The older clients' form of the same request (DESIGN.md "Compatibility facts").
  app.post(
    `${H}/:id/export`,
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: `${summary} (the older clients' POST form of GET …/export)`,
        params: ExecutionParams,
        response: { 200: HistoryExportCreated },
      },
    },
    request,
  );

  app.get(
    `${H}/:id/export/:exportId`,
    {
      exposeHeadRoute: false,
      config: { access: 'read' },
      schema: {
        tags,
        summary:
          "Download an export: the execution's record errors as CSV; each exportId works once, within an hour (then 404)",
        params: HistoryExportParams,
        response: { 200: HistoryExportCsv },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const { fileName, csv } = await exports.take(org.id, req.params.solutionId, req.params.id, req.params.exportId);
      return sendCsv(reply, fileName, Readable.from(csv));
    },
  );
};

export default historyExportRoutes;
