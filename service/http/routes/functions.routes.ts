import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { notFound } from '../../../src/errors/ferry-error.js';
import {
  findFunction,
  FORMULA_FUNCTIONS,
  FUNCTION_CATEGORIES,
  type FormulaFunction,
} from '../../../src/maps/formula/catalogue.js';
import type { ServiceConfig } from '../../config.js';
import type { ServiceDeps } from '../deps.js';
import { functionPage } from '../function-page.js';
import { OrgParams, sendList } from '../schemas/common.js';
import { FormulaFunctionModel } from '../schemas/function.schema.js';

/** The catalogue ordered for display: by category (SPEC order), then by name. */
const SORTED: readonly FormulaFunction[] = [...FORMULA_FUNCTIONS].sort(
  (a, b) =>
    FUNCTION_CATEGORIES.indexOf(a.category) - FUNCTION_CATEGORIES.indexOf(b.category) ||
    a.name.localeCompare(b.name, 'en'),
);

/** The address clients reach the Service at: FERRY_PUBLIC_URL, else the request's own scheme and host. */
export function baseUrl(config: ServiceConfig, req: FastifyRequest): string {
  return (config.publicUrl ?? `${req.protocol}://${req.host}`).replace(/\/+$/, '');
}

/** Content-Security-Policy of the description pages: nothing but their own inline style. */
const PAGE_CSP =
  "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

/**
 * The functions of the Map formula language (`GET /v1/orgs/{orgId}/Functions`) and the public
 * HTML page each one's descriptionURL points to (`GET /functions/{name}`).
 */
const functionsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  app.get(
    '/v1/orgs/:orgId/Functions',
    {
      config: { access: 'read' },
      schema: {
        tags: ['Functions'],
        summary: 'Functions of the Map formula language, by category then name',
        params: OrgParams,
        response: { 200: z.array(FormulaFunctionModel) },
      },
    },
    async (req, reply) => {
      const base = baseUrl(deps.config, req);
      const models = SORTED.map((f) => ({
        id: f.id,
        name: f.name,
        categoryName: f.category,
        descriptionURL: `${base}/functions/${encodeURIComponent(f.name)}`,
        lastModificationDate: f.lastModificationDate,
      }));
      return sendList(reply, models, models.length);
    },
  );

  app.get(
    '/functions/:name',
    {
      config: { access: 'public' },
      schema: {
        hide: true,
        tags: ['Functions'],
        summary: 'HTML description page of a formula function',
        params: z.object({ name: z.string().min(1).max(100) }),
      },
    },
    async (req, reply) => {
      const fn = findFunction(req.params.name);
      if (!fn) throw notFound(`Formula function ${req.params.name}`);
      return reply
        .type('text/html; charset=utf-8')
        .header('Content-Security-Policy', PAGE_CSP)
        .header('X-Content-Type-Options', 'nosniff')
        .header('Cache-Control', 'public, max-age=3600')
        .send(functionPage(fn));
    },
  );
};

export default functionsRoutes;
