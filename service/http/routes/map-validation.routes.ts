import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { MapInfo } from '../../solutions/map-info.js';
import { MapValidations } from '../../solutions/map-validation.js';
import { serviceBaseUrl } from '../base-url.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { toRelationships } from '../mappers/metadata.js';
import { pageOf, sendList } from '../schemas/common.js';
import { MapInput, MapParams } from '../schemas/map.schema.js';
import {
  EventInfo,
  FormulaAnswer,
  FormulaBody,
  FormulaParams,
  MapRelationshipsQuery,
  ValidateStarted,
  ValidationFinding,
  ValidationParams,
  ValidationResultsQuery,
} from '../schemas/map-validation.schema.js';
import { Relationship } from '../schemas/metadata.schema.js';

const tags = ['Maps'];

/** Validate a Map, its findings, a formula in its context; its selected relationships and event information (SPEC.md "Maps"). */
const mapValidationRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { maps } = deps;
  const validations = new MapValidations({
    db: deps.store.db,
    commands: deps.agents.commands,
    metadata: deps.metadata,
    log: deps.log,
  });
  const info = new MapInfo({ db: deps.store.db, metadata: deps.metadata });
  // Validations waiting on an Agent finish before the store closes.
  app.addHook('onClose', async () => validations.settled());

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId/validate',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          "Validate the Map (or the model in the body) against its Connections' metadata, loaded through the Solution's Agent; answers the validateId (a model of version 2.0 or older must be upgraded first)",
        params: MapParams,
        body: MapInput.nullish(),
        response: { 200: ValidateStarted },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      const view = await maps.get(org.id, req.params.solutionId, req.params.mapId);
      return validations.start(org, view, req.body, userName(user));
    },
  );

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:validationId/validationresults',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary:
          'POLL: the findings of a validation per Block (404 until it has finished), errors and warnings with the formula position; kept 24 hours',
        params: ValidationParams,
        querystring: ValidationResultsQuery,
        response: { 200: z.array(ValidationFinding) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const { limit, offset, filterByBlockId } = req.query;
      const { items, total } = await validations.results(org.id, req.params.solutionId, req.params.validationId, {
        blockId: filterByBlockId,
        limit,
        offset,
      });
      return sendList(reply, items, total);
    },
  );

  app.post(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId/validateformula',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary:
          'Whether a formula is valid where it sits in a validated Map, with the position of each error; {mapId} is the validateId of a validation',
        params: FormulaParams,
        body: FormulaBody,
        response: { 200: FormulaAnswer },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const { formula, blockId, targetFieldDataType, path } = req.body;
      return validations.validateFormula(org.id, req.params.solutionId, req.params.mapId, {
        formula,
        blockId: blockId ?? undefined,
        targetFieldDataType: targetFieldDataType ?? undefined,
        path: path ?? undefined,
      });
    },
  );

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId/relationships',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary:
          "POLL: the relationships the Map selects (its Query's, or the Block blockId's), as the metadata describes them (404 while the metadata loads)",
        params: MapParams,
        querystring: MapRelationshipsQuery,
        response: { 200: z.array(Relationship) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const view = await maps.get(org.id, req.params.solutionId, req.params.mapId);
      const entity = await info.relationships(req.log, org, view, req.query.blockId, req.query.agentId);
      const all = entity ? toRelationships(entity) : [];
      return sendList(reply, pageOf(all, req.query), all.length);
    },
  );

  app.get(
    '/v1/orgs/:orgId/solutions/:solutionId/maps/:mapId/eventinfo',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary:
          'The event information of a Map that begins with Wait For Message (or Wait For Request); 400 for other Maps',
        params: MapParams,
        response: { 200: EventInfo },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const view = await maps.get(org.id, req.params.solutionId, req.params.mapId);
      return info.eventInfo(org, view, serviceBaseUrl(req, deps.config));
    },
  );
};

export default mapValidationRoutes;
