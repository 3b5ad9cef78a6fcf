import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { findEntity } from '../../connections/metadata.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { toAction, toEntity, toField, toMetadataRequest, toRelationships } from '../mappers/metadata.js';
import { pageOf, sendList } from '../schemas/common.js';
import { ConnectionParams } from '../schemas/connection.schema.js';
import {
  ActionWithEntities,
  ActionsQuery,
  Entity,
  EntitiesQuery,
  EntityNamesQuery,
  EntityParams,
  Field,
  MetadataQuery,
  MetadataRequest,
  MetadataRequestsQuery,
  Relationship,
  RelationshipsQuery,
  RETIRED_MAP_TYPES,
  SupportedActions,
  SupportedActionsQuery,
} from '../schemas/metadata.schema.js';

const tags = ['Connections'];

/** The Organization, the Connection and its metadata a read answers from; a retired Map type is refused. */
const metadataContext =
  ({ connections, metadata }: ServiceDeps) =>
  async (
    req: FastifyRequest,
    params: { connectionId: string },
    query: { agentId?: string | undefined; mapType?: string | undefined },
  ) => {
    const { org } = orgOf(req);
    const conn = await connections.require(org.id, params.connectionId);
    const mapType = query.mapType;
    if (mapType !== undefined && RETIRED_MAP_TYPES.some((t) => t.toLowerCase() === mapType.toLowerCase())) {
      throw new FerryError('API_UNSUPPORTED', `The Map type ${mapType} is no longer supported.`, {
        errors: [{ path: 'querystring.mapType', message: 'no longer supported' }],
      });
    }
    return { org, conn, md: await metadata.of(req.log, org, conn, query.agentId) };
  };

/** actions, supportedactions, entities and entitynames: the Connection's whole metadata, a page at a time. */
const metadataListRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const context = metadataContext(deps);

  app.get(
    '/v1/orgs/:orgId/connections/:connectionId/actions',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'POLL: the actions the Connection supports (404 while the metadata loads)',
        params: ConnectionParams,
        querystring: ActionsQuery,
        response: { 200: z.array(ActionWithEntities) },
      },
    },
    async (req, reply) => {
      const { md } = await context(req, req.params, req.query);
      const actions = md.actions.map((a) =>
        req.query.expand
          ? {
              ...a,
              entities: md.entities.filter((e) => e.actions.some((x) => x.action === a.action)).map((e) => e.fullName),
            }
          : a,
      );
      return sendList(reply, pageOf(actions, req.query), actions.length);
    },
  );

  app.get(
    '/v1/orgs/:orgId/connections/:connectionId/supportedactions',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'POLL: the actions and the entities with their actions, in one answer',
        params: ConnectionParams,
        querystring: SupportedActionsQuery,
        response: { 200: SupportedActions },
      },
    },
    async (req, reply) => {
      const { md } = await context(req, req.params, req.query);
      const { offset, limit } = req.query;
      const entities = md.entities
        .slice(offset, limit === undefined ? undefined : offset + limit)
        .map((e) => toEntity(e, req.query.expand));
      void reply.header('Total-Count', String(md.entities.length));
      return { actions: md.actions.map(toAction), entities };
    },
  );

  app.get(
    '/v1/orgs/:orgId/connections/:connectionId/entities',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'POLL: the entities, with fields and relationships unless expand=false',
        params: ConnectionParams,
        querystring: EntitiesQuery,
        response: { 200: z.array(Entity) },
      },
    },
    async (req, reply) => {
      const { md } = await context(req, req.params, req.query);
      return sendList(
        reply,
        pageOf(md.entities, req.query).map((e) => toEntity(e, req.query.expand)),
        md.entities.length,
      );
    },
  );

  app.get(
    '/v1/orgs/:orgId/connections/:connectionId/entitynames',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'POLL: the fullNames of the entities, a page at a time (offset, limit)',
        params: ConnectionParams,
        querystring: EntityNamesQuery,
        response: { 200: z.array(z.string()) },
      },
    },
    async (req, reply) => {
      const { md } = await context(req, req.params, req.query);
      return sendList(
        reply,
        pageOf(md.entities, req.query).map((e) => e.fullName),
        md.entities.length,
      );
    },
  );
};

/** One entity (entities/{entityIdOrName}), its fields and its relationships. */
const entityRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const context = metadataContext(deps);

  app.get(
    '/v1/orgs/:orgId/connections/:connectionId/entities/:entityIdOrName',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: 'POLL: one entity by ID or fullName (case-insensitive), with fields and relationships',
        params: EntityParams,
        querystring: MetadataQuery,
        response: { 200: Entity },
      },
    },
    async (req) => {
      const { md, conn } = await context(req, req.params, req.query);
      return toEntity(findEntity(md, req.params.entityIdOrName, conn), true);
    },
  );

  app.get(
    '/v1/orgs/:orgId/connections/:connectionId/entities/:entityIdOrName/fields',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: "POLL: one entity's fields",
        params: EntityParams,
        querystring: MetadataQuery,
        response: { 200: z.array(Field) },
      },
    },
    async (req, reply) => {
      const { md, conn } = await context(req, req.params, req.query);
      const fields = findEntity(md, req.params.entityIdOrName, conn).fields.map(toField);
      return sendList(reply, fields, fields.length);
    },
  );

  app.get(
    '/v1/orgs/:orgId/connections/:connectionId/entities/:entityIdOrName/relationships',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: "POLL: one entity's relationships (nestedPropertyRelations 0 to 10: property-type relations only)",
        params: EntityParams,
        querystring: RelationshipsQuery,
        response: { 200: z.array(Relationship) },
      },
    },
    async (req, reply) => {
      const { md, conn } = await context(req, req.params, req.query);
      // nestedPropertyRelations follows property-type (complex) fields; the built-in Connectors have
      // none, so every depth answers the entity's own relationships.
      const rels = toRelationships(findEntity(md, req.params.entityIdOrName, conn));
      return sendList(reply, rels, rels.length);
    },
  );
};

/** The latest metadata requests, and the reset that makes the next metadata call reload. */
const metadataRequestRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { connections, metadata } = deps;

  app.get(
    '/v1/orgs/:orgId/connections/:connectionId/metadatarequests',
    {
      config: { access: 'read' },
      schema: {
        tags,
        summary: "The Connection's latest metadata requests, newest first",
        params: ConnectionParams,
        querystring: MetadataRequestsQuery,
        response: { 200: z.array(MetadataRequest) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const conn = await connections.require(org.id, req.params.connectionId);
      const { rows, total } = await metadata.requests(conn, req.query.limit, req.query.offset);
      return sendList(
        reply,
        rows.map((r) => toMetadataRequest(org, r)),
        total,
      );
    },
  );

  const resetMetadata = async (req: FastifyRequest<{ Params: { connectionId: string } }>): Promise<void> => {
    const { org } = orgOf(req);
    await metadata.reset(await connections.require(org.id, req.params.connectionId));
  };

  app.delete(
    '/v1/orgs/:orgId/connections/:connectionId/metadata',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: "Reset the Connection's metadata: the next metadata call reloads it",
        params: ConnectionParams,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      await resetMetadata(req);
      return reply.code(204).send(null);
    },
  );

  app.post(
    '/v1/orgs/:orgId/connections/:connectionId/reset',
    {
      config: { access: 'write' },
      schema: {
        tags,
        summary: "Reset the Connection's metadata (as DELETE …/metadata): the next metadata call reloads it",
        params: ConnectionParams,
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      await resetMetadata(req);
      return reply.code(204).send(null);
    },
  );
};

/**
 * Connection metadata (SPEC.md "Connections": actions, supportedactions, entities, entitynames,
 * entities/{entityIdOrName}, fields, relationships), the latest metadata requests and the reset.
 * Every read is POLL-style ({@link ConnectionMetadata}): 404 API_METADATA_LOADING until loaded.
 */
const connectionMetadataRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  await metadataListRoutes(app, deps);
  await entityRoutes(app, deps);
  await metadataRequestRoutes(app, deps);
};

export default connectionMetadataRoutes;
