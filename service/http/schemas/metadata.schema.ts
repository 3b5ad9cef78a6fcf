import { z } from 'zod';
import { Action as ContractAction, MAX_METADATA_ENTITIES } from '../../../src/protocol/metadata.js';
import { decimal, Guid, MAX_INT, PageQuery, Timestamp, qbool } from './common.js';
import { ConnectionParams } from './connection.schema.js';

// ── the API models (SPEC.md "Entity, Field, Relationship, Action") ────────────
// Made from the document an Agent sent (src/protocol/metadata.ts) by service/http/mappers/metadata.ts.

export const Action = ContractAction.describe(
  'An action the datastore supports: action, operationName, blockType and its supports* flags',
);
export type Action = z.infer<typeof Action>;

export const Field = z.object({
  name: z.string(),
  fullName: z.string(),
  originalName: z.string(),
  description: z.string(),
  isPrimaryKey: z.boolean(),
  nullable: z.boolean().describe('unused'),
  size: z.number(),
  ordinal: z.number().int().describe('unused'),
  presentationType: z.string().describe('unused'),
  propertyType: z.string(),
  minOccurs: z.number().int().describe('unused; 0 means 1'),
  maxOccurs: z.number().int().describe('unused; 0 means 1'),
  requiredInActionInput: z.boolean(),
  usedInLookupCondition: z.boolean(),
  usedInActionInput: z.boolean(),
  usedInQueryConstraint: z.boolean(),
  usedInQuerySelect: z.boolean(),
  usedInActionOutput: z.boolean().describe('unused'),
  usedInQuerySequence: z.boolean().describe('unused'),
  // Beyond SPEC.md: what the Connector reported, served as the Agent sent it.
  nativeType: z
    .string()
    .describe("the datastore's type as its catalogue spells it (character varying(50), INTEGER); empty when unknown"),
  hasDefault: z
    .boolean()
    .describe(
      'the datastore fills the field when a Create leaves it out (a default, an identity, a rowid); false when unknown',
    ),
  scale: z.number().int().optional().describe('decimal scale, when known'),
});
export type Field = z.infer<typeof Field>;

export const Relationship = z.object({
  name: z.string(),
  fullName: z.string(),
  description: z.string(),
  path: z.string().describe('EntityFullName.RelatedEntityFullName'),
  thisEntityFullName: z.string(),
  relatedEntityFullName: z.string(),
  thisProperties: z.array(z.string()),
  relatedProperties: z.array(z.string()),
  relationshipType: z.string().describe('ManyToOne (this entity holds the foreign key) or OneToMany'),
  parentId: z.string().describe('temporary grouping ID, regenerated on each call'),
  uniqueId: z.string().describe('temporary grouping ID, regenerated on each call'),
});
export type Relationship = z.infer<typeof Relationship>;

export const Entity = z.object({
  id: z.string(),
  name: z.string(),
  fullName: z.string(),
  originalName: z.string(),
  description: z.string(),
  isHidden: z.boolean(),
  actions: z.array(Action),
  fields: z.array(Field).optional().describe('with expand=true'),
  relationships: z.array(Relationship).optional().describe('with expand=true'),
});
export type Entity = z.infer<typeof Entity>;

export const ActionWithEntities = Action.extend({
  entities: z
    .array(z.string())
    .optional()
    .describe('with expand=true: fullNames of the entities that support the action'),
});

export const SupportedActions = z.object({ actions: z.array(Action), entities: z.array(Entity) });

export const MetadataRequest = z.object({
  id: z.string(),
  agentId: z.string(),
  tenantId: z.string(),
  objectDefinitionId: z.string().describe('the Connection ID'),
  objectName: z.string().nullable().describe("the Connection's name"),
  startDate: Timestamp,
  endDate: Timestamp.nullable(),
  state: z.enum(['Requested', 'Completed', 'Failed']),
  errorMessage: z.string().nullable(),
});

// ── parameters ──────────────────────────────────────────────────────────────

/** Map types no longer supported (SPEC.md). */
export const RETIRED_MAP_TYPES = ['IntegrationServicesBasicMap', 'IntegrationServicesSysControllerMap'];

const AgentIdQuery = z.object({
  agentId: Guid.optional().describe('the Agent that loads the metadata; needed when it was never loaded'),
});
export const MetadataQuery = AgentIdQuery;
export const ActionsQuery = PageQuery.extend(AgentIdQuery.shape).extend({
  expand: qbool(false).describe('add the fullNames of the entities that support each action'),
  mapType: z
    .string()
    .max(100)
    .optional()
    .describe('Solution and Map type; every supported type has the same actions in Ferry'),
});
export const SupportedActionsQuery = AgentIdQuery.extend({
  expand: qbool(false).describe('entities with their fields and relationships'),
  mapType: z.string().max(100).optional(),
  limit: decimal(z.number().int().min(0).max(MAX_METADATA_ENTITIES).optional()).describe('entities; default all'),
  offset: decimal(z.number().int().min(0).max(MAX_INT).default(0)),
});
export const EntityNamesQuery = PageQuery.extend(AgentIdQuery.shape);
export const EntitiesQuery = PageQuery.extend(AgentIdQuery.shape).extend({
  expand: qbool(true).describe('entities with their fields and relationships'),
});
export const RelationshipsQuery = AgentIdQuery.extend({
  nestedPropertyRelations: decimal(z.number().int().min(0).max(10).default(0)).describe(
    'depth of property-type relations (0 to 10); the built-in Connectors have none',
  ),
});
export const EntityParams = ConnectionParams.extend({ entityIdOrName: z.string().min(1).max(1000) });
export const MetadataRequestsQuery = PageQuery;
