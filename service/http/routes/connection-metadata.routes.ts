import { randomUUID } from 'node:crypto';
import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { gunzipSync } from 'node:zlib';
import { PackedMetadata } from '../../../src/protocol/channel.js';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError, isFerryError } from '../../../src/errors/ferry-error.js';
import { getConnection } from '../../store/repos/connections.repo.js';
import {
  countMetadataRequests,
  finishMetadataRequest,
  getMetadataCache,
  insertMetadataRequest,
  listMetadataRequests,
  markMetadataErrorSeen,
  pruneMetadataRequests,
  putMetadataCache,
  resetMetadataCache,
} from '../../store/repos/metadata.repo.js';
import type { ConnectionRow, OrgRow } from '../../store/schema.js';
import { newId, nowIso } from '../../util/values.js';
import { requireAgent } from '../agent-model.js';
import { connectionNotFound, openProperties } from '../connection-model.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { pageOf, sendList } from '../schemas/common.js';
import { ConnectionParams } from '../schemas/connection.schema.js';
import {
  ActionWithEntities,
  ActionsQuery,
  AgentMetadata,
  Entity,
  EntitiesQuery,
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
  type Action,
  type AgentEntity,
} from '../schemas/metadata.schema.js';

const tags = ['Connections'];

/** Metadata requests kept per Connection. */
const KEEP_REQUESTS = 50;
export const METADATA_LOADING = 'Metadata is loading; repeat the call';

const loadingProblem = (connectionId: string): FerryError => new FerryError('API_METADATA_LOADING', METADATA_LOADING, { details: { connectionId } });

/** A load this process sent: its request, and the Agent channel it went out on. */
interface InFlight {
  requestId: string;
  agentId: string;
  channel: object | undefined;
}

/**
 * Connection metadata (SPEC.md "Connections": actions, supportedactions, entities, entitynames,
 * entities/{entityIdOrName}, fields, relationships), the latest metadata requests and the reset.
 *
 * Every read is POLL-style: the first call on a Connection without cached metadata starts a
 * `loadMetadata` command on the Agent (agentId, or the Agent that loaded it before) and answers
 * 404 API_METADATA_LOADING; calls answer the same while the load runs, then serve the cache.
 *
 * "The load runs" means an answer can still come: this process sent it, on the channel the Agent
 * holds now. A request recorded as Requested that no longer qualifies (sent by a Service process
 * that is gone, or on a channel the Agent has since replaced or closed) gets no answer, so the
 * next call sends the load again at once instead of answering "loading" until a time-out.
 */
const connectionMetadataRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  /** Loads under way in this process, by Connection ID (one at a time per Connection). */
  const loading = new Map<string, InFlight>();
  /** Whether the load's answer can still arrive: the channel it was sent on is the Agent's current one. */
  const answerable = (f: InFlight | undefined): boolean => f?.channel !== undefined && deps.agents.commands.channelOf(f.agentId) === f.channel;

  const requireConnection = async (orgId: number, id: string): Promise<ConnectionRow> => {
    const row = await getConnection(db, orgId, id);
    if (!row) throw connectionNotFound(orgId, id);
    return row;
  };

  /** The cached metadata, or a 404 (loading) / 400 (no Agent) / 502 (last load failed) problem. */
  const metadataOf = async (log: FastifyBaseLogger, org: OrgRow, conn: ConnectionRow, agentId: string | undefined): Promise<AgentMetadata> => {
    const cache = await getMetadataCache(db, conn.id);
    if (cache?.metadata) return AgentMetadata.parse(JSON.parse(cache.metadata));
    const [latest] = await listMetadataRequests(db, conn.id, 1);
    // After the read, so that a load another call started meanwhile is seen here.
    const inFlight = loading.get(conn.id);
    if (answerable(inFlight)) throw loadingProblem(conn.id);
    if (latest?.state === 'Requested') {
      // Not answerable (checked above): its answer is lost, so it is closed and sent again below.
      const why = inFlight?.requestId === latest.id ? "the Agent's channel closed or was replaced" : 'the Service restarted';
      await finishMetadataRequest(db, latest.id, 'Failed', nowIso(), `No answer arrived: ${why} while the Agent was loading the metadata.`, { report: false });
    } else if (latest?.state === 'Failed' && latest.errorSeen === 0) {
      await markMetadataErrorSeen(db, latest.id);
      throw new FerryError('API_METADATA_LOAD_FAILED', `Loading the metadata of Connection ${conn.name} failed: ${latest.errorMessage ?? 'unknown error'}`, {
        details: { connectionId: conn.id, requestId: latest.id, agentId: latest.agentId },
      });
    }
    const loaderId = agentId ?? cache?.agentId ?? latest?.agentId;
    if (!loaderId) {
      throw new FerryError('API_METADATA_AGENT_REQUIRED', `The metadata of Connection ${conn.name} was never loaded; give the agentId of an Agent that has the Connector and can reach the datastore.`, {
        details: { connectionId: conn.id },
      });
    }
    const agent = await requireAgent(db, org.id, loaderId);
    if (!deps.agents.commands.isConnected(agent.id)) {
      throw new FerryError('AGT_NOT_CONNECTED', `Agent ${agent.name} is not connected; start it (or wait until its status is Running) and try again.`, { details: { agentId: agent.id } });
    }
    // Another call may have started a load while this one awaited the store.
    if (answerable(loading.get(conn.id))) throw loadingProblem(conn.id);
    const id = newId();
    const entry: InFlight = { requestId: id, agentId: agent.id, channel: deps.agents.commands.channelOf(agent.id) };
    loading.set(conn.id, entry);
    const forget = (): void => {
      if (loading.get(conn.id) === entry) loading.delete(conn.id);
    };
    try {
      await insertMetadataRequest(db, { id, orgId: org.id, connectionId: conn.id, agentId: agent.id, objectName: conn.name, startDate: nowIso(), endDate: null, state: 'Requested', errorMessage: null });
      await pruneMetadataRequests(db, conn.id, KEEP_REQUESTS);
      log.info({ requestId: id, agentId: agent.id, connectionId: conn.id }, 'metadata load requested');
      // The channel the command goes out on; the Agent may have reconnected while the store was written.
      entry.channel = deps.agents.commands.channelOf(agent.id);
      void load(log, org, conn, agent.id, id, cache !== undefined).finally(forget);
    } catch (err) {
      forget();
      throw err;
    }
    throw loadingProblem(conn.id);
  };

  const load = async (log: FastifyBaseLogger, org: OrgRow, conn: ConnectionRow, agentId: string, requestId: string, reload: boolean): Promise<void> => {
    try {
      const result = await deps.agents.commands.send(
        agentId,
        { type: 'loadMetadata', connectionId: conn.id, connectorId: conn.connectorId, properties: openProperties(deps.secrets, conn), reload },
      );
      const parsed = AgentMetadata.safeParse(unpackMetadata(result));
      if (!parsed.success) {
        const issue = parsed.error.issues[0];
        throw new Error(`The Agent's metadata is not valid: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'unknown shape'}`);
      }
      await putMetadataCache(db, { connectionId: conn.id, orgId: org.id, agentId, metadata: JSON.stringify(parsed.data), loadedAt: nowIso() });
      await finishMetadataRequest(db, requestId, 'Completed', nowIso(), null);
      log.info({ requestId, connectionId: conn.id, entities: parsed.data.entities.length }, 'metadata loaded');
    } catch (err) {
      const message = loadFailure(err);
      log.warn({ requestId, connectionId: conn.id, message }, 'metadata load failed');
      // A channel that closed before the answer is not the load's failure: the next call sends it again.
      const lost = isFerryError(err) && err.code === 'AGT_NOT_CONNECTED';
      await finishMetadataRequest(db, requestId, 'Failed', nowIso(), message, { report: !lost }).catch((e: unknown) => log.error({ err: e, requestId }, 'metadata request result not stored'));
    }
  };

  const findEntity = (md: AgentMetadata, idOrName: string, conn: ConnectionRow): AgentEntity => {
    const key = idOrName.toLowerCase();
    const hit = md.entities.find((e) => e.id.toLowerCase() === key) ?? md.entities.find((e) => e.fullName.toLowerCase() === key);
    if (!hit) throw new FerryError('API_NOT_FOUND', `Entity ${idOrName} was not found in the metadata of Connection ${conn.name}.`, { details: { connectionId: conn.id } });
    return hit;
  };

  const context = async (req: FastifyRequest, params: { connectionId: string }, query: { agentId?: string | undefined; mapType?: string | undefined }) => {
    const { org } = orgOf(req);
    const conn = await requireConnection(org.id, params.connectionId);
    const mapType = query.mapType;
    if (mapType !== undefined && RETIRED_MAP_TYPES.some((t) => t.toLowerCase() === mapType.toLowerCase())) {
      throw new FerryError('API_UNSUPPORTED', `The Map type ${mapType} is no longer supported.`, { errors: [{ path: 'querystring.mapType', message: 'no longer supported' }] });
    }
    return { org, conn, md: await metadataOf(req.log, org, conn, query.agentId) };
  };

  app.get('/v1/orgs/:orgId/connections/:connectionId/actions', {
    config: { access: 'read' },
    schema: { tags, summary: 'POLL: the actions the Connection supports (404 while the metadata loads)', params: ConnectionParams, querystring: ActionsQuery, response: { 200: z.array(ActionWithEntities) } },
  }, async (req, reply) => {
    const { md } = await context(req, req.params, req.query);
    const actions = md.actions.map((a) => (req.query.expand ? { ...a, entities: md.entities.filter((e) => e.actions.some((x) => x.action === a.action)).map((e) => e.fullName) } : a));
    return sendList(reply, pageOf(actions, req.query), actions.length);
  });

  app.get('/v1/orgs/:orgId/connections/:connectionId/supportedactions', {
    config: { access: 'read' },
    schema: { tags, summary: 'POLL: the actions and the entities with their actions, in one answer', params: ConnectionParams, querystring: SupportedActionsQuery, response: { 200: SupportedActions } },
  }, async (req, reply) => {
    const { md } = await context(req, req.params, req.query);
    const { offset, limit } = req.query;
    const entities = md.entities.slice(offset, limit === undefined ? undefined : offset + limit).map((e) => toEntity(e, req.query.expand));
    void reply.header('Total-Count', String(md.entities.length));
    return { actions: md.actions.map(toAction), entities };
  });

  app.get('/v1/orgs/:orgId/connections/:connectionId/entities', {
    config: { access: 'read' },
    schema: { tags, summary: 'POLL: the entities, with fields and relationships unless expand=false', params: ConnectionParams, querystring: EntitiesQuery, response: { 200: z.array(Entity) } },
  }, async (req, reply) => {
    const { md } = await context(req, req.params, req.query);
    return sendList(reply, pageOf(md.entities, req.query).map((e) => toEntity(e, req.query.expand)), md.entities.length);
  });

  app.get('/v1/orgs/:orgId/connections/:connectionId/entitynames', {
    config: { access: 'read' },
    schema: { tags, summary: 'POLL: the fullNames of the entities', params: ConnectionParams, querystring: MetadataQuery, response: { 200: z.array(z.string()) } },
  }, async (req, reply) => {
    const { md } = await context(req, req.params, req.query);
    return sendList(reply, md.entities.map((e) => e.fullName), md.entities.length);
  });

  app.get('/v1/orgs/:orgId/connections/:connectionId/entities/:entityIdOrName', {
    config: { access: 'read' },
    schema: { tags, summary: 'POLL: one entity by ID or fullName (case-insensitive), with fields and relationships', params: EntityParams, querystring: MetadataQuery, response: { 200: Entity } },
  }, async (req) => {
    const { md, conn } = await context(req, req.params, req.query);
    return toEntity(findEntity(md, req.params.entityIdOrName, conn), true);
  });

  app.get('/v1/orgs/:orgId/connections/:connectionId/entities/:entityIdOrName/fields', {
    config: { access: 'read' },
    schema: { tags, summary: "POLL: one entity's fields", params: EntityParams, querystring: MetadataQuery, response: { 200: z.array(Field) } },
  }, async (req, reply) => {
    const { md, conn } = await context(req, req.params, req.query);
    const fields = findEntity(md, req.params.entityIdOrName, conn).fields.map(toField);
    return sendList(reply, fields, fields.length);
  });

  app.get('/v1/orgs/:orgId/connections/:connectionId/entities/:entityIdOrName/relationships', {
    config: { access: 'read' },
    schema: { tags, summary: "POLL: one entity's relationships (nestedPropertyRelations 0 to 10: property-type relations only)", params: EntityParams, querystring: RelationshipsQuery, response: { 200: z.array(Relationship) } },
  }, async (req, reply) => {
    const { md, conn } = await context(req, req.params, req.query);
    // nestedPropertyRelations follows property-type (complex) fields; the built-in Connectors have
    // none, so every depth answers the entity's own relationships.
    const rels = toRelationships(findEntity(md, req.params.entityIdOrName, conn));
    return sendList(reply, rels, rels.length);
  });

  app.get('/v1/orgs/:orgId/connections/:connectionId/metadatarequests', {
    config: { access: 'read' },
    schema: { tags, summary: "The Connection's latest metadata requests, newest first", params: ConnectionParams, querystring: MetadataRequestsQuery, response: { 200: z.array(MetadataRequest) } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const conn = await requireConnection(org.id, req.params.connectionId);
    const rows = await listMetadataRequests(db, conn.id, req.query.limit, req.query.offset);
    const total = await countMetadataRequests(db, conn.id);
    return sendList(
      reply,
      rows.map((r) => ({ id: r.id, agentId: r.agentId, tenantId: org.tenantId, objectDefinitionId: r.connectionId, objectName: r.objectName, startDate: r.startDate, endDate: r.endDate, state: r.state, errorMessage: r.errorMessage })),
      total,
    );
  });

  app.delete('/v1/orgs/:orgId/connections/:connectionId/metadata', {
    config: { access: 'write' },
    schema: { tags, summary: "Reset the Connection's metadata: the next metadata call reloads it", params: ConnectionParams, response: { 204: z.null() } },
  }, async (req, reply) => {
    const { org } = orgOf(req);
    const conn = await requireConnection(org.id, req.params.connectionId);
    await resetMetadataCache(db, conn.id);
    return reply.code(204).send(null);
  });
};

function toAction(a: Action): Action {
  return {
    action: a.action,
    operationName: a.operationName,
    blockType: a.blockType,
    supportsBulk: a.supportsBulk,
    supportsConstraints: a.supportsConstraints,
    supportsInput: a.supportsInput,
    supportsLookupConditions: a.supportsLookupConditions,
    supportsRelations: a.supportsRelations,
    supportsMultipleRecordOperations: a.supportsMultipleRecordOperations,
    supportsSequences: a.supportsSequences,
  };
}

function toField(f: AgentEntity['fields'][number]): Field {
  return {
    name: f.name,
    fullName: f.fullName,
    originalName: f.originalName,
    description: f.description,
    isPrimaryKey: f.isPrimaryKey,
    nullable: f.nullable,
    size: f.size,
    ordinal: f.ordinal,
    presentationType: '',
    propertyType: f.propertyType,
    minOccurs: 0,
    maxOccurs: 0,
    requiredInActionInput: f.requiredInActionInput,
    usedInLookupCondition: f.usedInLookupCondition,
    usedInActionInput: f.usedInActionInput,
    usedInQueryConstraint: f.usedInQueryConstraint,
    usedInQuerySelect: f.usedInQuerySelect,
    usedInActionOutput: false,
    usedInQuerySequence: false,
  };
}

/** The entity's relationships with fresh grouping IDs: one parentId per call, one uniqueId each. */
function toRelationships(e: AgentEntity): Relationship[] {
  const parentId = randomUUID();
  return e.relationships.map((r) => ({
    name: r.name,
    fullName: r.fullName,
    description: r.description,
    path: r.path,
    thisEntityFullName: r.thisEntityFullName,
    relatedEntityFullName: r.relatedEntityFullName,
    thisProperties: r.thisProperties,
    relatedProperties: r.relatedProperties,
    relationshipType: r.relationshipType,
    parentId,
    uniqueId: randomUUID(),
  }));
}

function toEntity(e: AgentEntity, expand: boolean): Entity {
  const base: Entity = { id: e.id, name: e.name, fullName: e.fullName, originalName: e.originalName, description: e.description, isHidden: e.isHidden, actions: e.actions.map(toAction) };
  return expand ? { ...base, fields: e.fields.map(toField), relationships: toRelationships(e) } : base;
}

/** The stored reason of a failed load: the Agent's own error when it answered, else why it did not. */
function loadFailure(err: unknown): string {
  if (isFerryError(err)) {
    const { agentMessage, agentErrorCode } = err.details ?? {};
    if (typeof agentMessage === 'string') return typeof agentErrorCode === 'string' ? `${agentErrorCode}: ${agentMessage}` : agentMessage;
    return `${err.code}: ${err.message}`;
  }
  return err instanceof Error ? err.message : String(err);
}

export default connectionMetadataRoutes;

/** The Agent's answer, uncompressed when it came packed (PackedMetadata), at most 256 MiB of JSON. */
function unpackMetadata(result: unknown): unknown {
  const packed = PackedMetadata.safeParse(result);
  if (!packed.success) return result;
  return JSON.parse(gunzipSync(Buffer.from(packed.data.data, 'base64'), { maxOutputLength: 256 * 1024 * 1024 }).toString('utf8')) as unknown;
}
