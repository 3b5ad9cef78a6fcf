import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { MapTransfer } from '../../solutions/map-transfer.js';
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from '../../util/json-depth.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { toExportedMap } from '../mappers/map-export.js';
import { MapAnswer } from '../schemas/map.schema.js';
import {
  ExportCreated,
  ExportQuery,
  ImportAnswer,
  ImportFile,
  ImportQuery,
  MapExportParams,
} from '../schemas/map-transfer.schema.js';
import { SolutionParams } from '../schemas/solution.schema.js';

const tags = ['Maps'];

/** `attachment` with an ASCII fallback name and the exact name in RFC 5987 form. */
function attachment(name: string): string {
  const ascii = name.replace(/[^\x20-\x7e]|["\\%;]/g, '_');
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(name)}`;
}

/** Export of a Solution's Maps as a single-use JSON file, and import of such a file (SPEC.md "Maps"). */
const mapTransferRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const transfer = new MapTransfer({ db: deps.store.db, maps: deps.maps });
  const catalogue = deps.connections.catalogue;

  // An export file uploaded as it was saved may come as text/plain or application/octet-stream:
  // read as JSON, with the same depth bound as application/json.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser(['text/plain', 'application/octet-stream'], { parseAs: 'string' }, (_req, body, done) => {
    const raw = typeof body === 'string' ? body : body.toString('utf8');
    const textOf = raw.charCodeAt(0) === 0xfeff ? raw.slice(1) : raw;
    if (textOf.trim() === '') {
      done(null, undefined);
      return;
    }
    if (jsonNestsDeeperThan(textOf, MAX_JSON_DEPTH)) {
      done(
        new FerryError('API_BODY_TOO_DEEP', `The file nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels.`),
        undefined,
      );
      return;
    }
    try {
      done(null, JSON.parse(textOf) as unknown);
    } catch (err) {
      done(
        new FerryError(
          'API_MALFORMED_BODY',
          `The import file is not valid JSON: ${err instanceof Error ? err.message : String(err)}`,
        ),
        undefined,
      );
    }
  });

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/export',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary:
          'Export Maps (all, or mapIds; a revision of one Map): returns an exportId, downloadable once within an hour',
        params: SolutionParams,
        querystring: ExportQuery,
        response: { 200: ExportCreated },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      const exportId = await transfer.requestExport(
        org,
        req.params.solutionId,
        req.query,
        userName(user),
        (view, connections) => toExportedMap(view, connections, catalogue),
      );
      return { exportId };
    },
  );

  // No automatic HEAD route: a HEAD would use the export up without delivering it.
  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/export/:exportId',
    {
      exposeHeadRoute: false,
      config: { access: 'read' },
      schema: {
        tags,
        summary:
          'Download an export: a JSON file named after the Solution holding its Maps; each exportId works once (then 404)',
        params: MapExportParams,
        response: {
          200: z.array(MapAnswer).describe('the file: an array of Maps (the Map model, Connection names filled in)'),
        },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const file = await transfer.takeExport(org.id, req.params.solutionId, req.params.exportId);
      const maps = JSON.parse(file.body) as MapAnswer[];
      return reply
        .type('application/json; charset=utf-8')
        .header('Content-Disposition', attachment(file.fileName))
        .send(maps);
    },
  );

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/import',
    {
      config: { access: 'write', bodyTypes: ['application/json', 'text/plain', 'application/octet-stream'] },
      schema: {
        tags,
        summary:
          'Import an export file: same-named Maps get a new revision "Map Imported…", others are added; importedMapOrder (default true) moves the overwritten ones to the end',
        description:
          "The body is the file: this Service's export or the original service's (model 2.5). Every Map is upgraded and checked before anything is written: a Map that cannot be read is a 400 naming it, and nothing changes. " +
          "Connection IDs that are not this Organization's are matched to its Connections by the name, then the alias, the file gives for them; unmatched ones are listed in unresolvedConnections.",
        params: SolutionParams,
        querystring: ImportQuery,
        body: ImportFile,
        response: { 200: ImportAnswer },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      return transfer.importMaps(org, req.params.solutionId, req.body, req.query.importedMapOrder, userName(user));
    },
  );
};

export default mapTransferRoutes;
