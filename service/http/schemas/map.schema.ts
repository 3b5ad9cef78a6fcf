import { z } from 'zod';
import { MAP_MODEL_VERSION } from '../../../src/protocol/map.js';
import { decimal, Guid, MAX_INT, OrgParams, PageQuery, qbool, Text, Timestamp } from './common.js';
import { documentedAs } from './map-model.schema.js';

export const MapParams = OrgParams.extend({
  solutionId: Guid,
  mapId: decimal(z.number().int().positive().max(MAX_INT)),
});

/**
 * The Map model a save sends: the engine's model (src/protocol/map.ts MapModel, version 3.0), or
 * an older one (the original service's 2.5 export) that is upgraded first. The domain parses it
 * with the protocol's schema, so that a 2.5 export is accepted here as any JSON object.
 */
export const MapInput = documentedAs(
  z.record(z.string(), z.unknown()),
  'MapModel',
  'input',
  `A Map model, version ${MAP_MODEL_VERSION}; a 2.x export (the original service's) is accepted too and upgraded on save. Basic and SysController map types are refused.`,
);

export const MapListQuery = PageQuery.extend({
  /** Part of the name, any case. */
  name: z.string().max(255).optional(),
});

const Revision = decimal(z.number().int().positive().max(MAX_INT));

export const MapGetQuery = z.object({
  revision: Revision.optional().describe('the revision to read; the latest when absent'),
  lockMap: qbool(false).describe(
    'true locks the Map for you first (409 MAP_LOCKED when another user holds it); needs the User or Administrator role',
  ),
});

export const MapRevertQuery = z.object({
  revision: Revision.describe('the revision to restore as the next one'),
});

export const MapEnableQuery = z.object({
  enableState: qbool(true).describe(
    'true enables the Map, false disables it (a disabled Map is skipped when its Solution runs)',
  ),
});

export const MapLockQuery = z.object({
  lockState: qbool(true).describe(
    'true locks the Map for you, false unlocks it (the holder, or an Administrator, may unlock)',
  ),
});

export const MapSaveQuery = z.object({
  comment: Text.optional().describe(
    'the revision comment (a `comment` string at the top of the body is read when absent)',
  ),
});

/** PUT also takes the flags of the original service; those not described are accepted and have no effect yet. */
export const MapModifyQuery = MapSaveQuery.extend({
  unlockMap: qbool(false).describe('true releases your lock on the Map once the revision is saved'),
  validateMap: z.stringbool().optional(),
  prepareMap: z.stringbool().optional(),
  oldConnectionId: z.string().max(100).optional(),
  newConnectionId: z.string().max(100).optional(),
  updateBlockConnectionOnly: z.stringbool().optional(),
});

/** A Map of a Solution, in run order (DESIGN.md "Map link"). */
export const MapLink = z.object({
  id: z.number().int(),
  index: z.number().int(),
  name: z.string(),
  enabled: z.boolean(),
  valid: z.boolean().describe("false until a validation against the Connections' metadata (prepare) passes"),
  mapType: z.string(),
  sources: z.array(z.string()).describe('the Connection IDs the Map reads from'),
  targets: z.array(z.string()).describe('the Connection IDs the Map writes to'),
  lockedBy: z.string().nullable(),
  lockDate: Timestamp.nullable(),
  eventUrl: z.string().nullable(),
  lastModified: Timestamp,
  modifiedBy: z.string().nullable(),
  description: z.string(),
});
export type MapLink = z.infer<typeof MapLink>;

const TargetConnection = z.object({
  connectionAlias: z.string().nullable(),
  connectionId: z.string(),
  connectionName: z.string().nullable(),
  connectionType: z.string().nullable(),
});

/** The Map model answered (DESIGN.md "Map"); what is not known yet is null. */
export const MapAnswer = z.object({
  id: z.number().int(),
  name: z.string(),
  description: z.string(),
  mapType: z.string(),
  version: z.string(),
  revision: z.number().int(),
  revisionDate: Timestamp,
  revisionComment: z.string(),
  valid: z.boolean(),
  lastModificationDate: Timestamp,
  lastRunDate: Timestamp.nullable(),
  lockedBy: z.string().nullable().describe("the email of the user holding the Map's lock; null when unlocked"),
  lockDate: Timestamp.nullable(),
  netChange: z.boolean(),
  netChangeFieldName: z.string().nullable(),
  startingBlockId: z.string().nullable(),
  targetConnections: z.array(TargetConnection),
  sourceConnectionId: z.string().nullable(),
  sourceConnectionName: z.string().nullable(),
  sourceConnectionAlias: z.string().nullable(),
  sourceConnectionType: z.string().nullable(),
  batchSize: z.number().int().nullable(),
  blocks: z
    .array(documentedAs(z.record(z.string(), z.unknown()), 'Block', 'output'))
    .describe('the Blocks of the model, in flow order'),
});
export type MapAnswer = z.infer<typeof MapAnswer>;

/** One revision of a Map (GET …/maps/{mapId}/revisions). */
export const MapRevision = z.object({
  id: z.number().int().describe("the Map's ID"),
  revision: z.number().int(),
  revisionDate: Timestamp,
  revisionComment: z.string(),
  comment: z.string().describe('the same as revisionComment'),
  modifiedBy: z.string().nullable(),
});
export type MapRevision = z.infer<typeof MapRevision>;
