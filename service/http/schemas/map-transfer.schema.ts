import { z } from 'zod';
import { BLOCK_ACTIONS, MAP_MODEL_VERSION } from '../../../src/protocol/map.js';
import { decimal, Guid, MAX_INT, qbool } from './common.js';
import { documentedAs } from './map-model.schema.js';
import { MapParams } from './map.schema.js';
import { SolutionParams } from './solution.schema.js';

/** One of `values`, accepted in any case and answered in the spelling of `values`. */
const anyCase = <const T extends readonly [string, ...string[]]>(values: T) =>
  z.preprocess(
    (v) => (typeof v === 'string' ? (values.find((x) => x.toLowerCase() === v.toLowerCase()) ?? v) : v),
    z.enum(values),
  );

export const ExportQuery = z.object({
  mapIds: z
    .string()
    .max(20_000)
    .optional()
    .describe('Map IDs separated by commas; blank or absent exports every Map of the Solution'),
  revision: decimal(z.number().int().positive().max(MAX_INT))
    .optional()
    .describe('a revision of the one Map named in mapIds (several mapIds with a revision are refused)'),
});

export const ExportCreated = z.object({
  exportId: z.number().int().describe('downloads the file once with GET …/maps/export/{exportId}, within an hour'),
});

export const MapExportParams = SolutionParams.extend({ exportId: decimal(z.number().int().positive().max(MAX_INT)) });

export const ImportQuery = z.object({
  importedMapOrder: qbool(true).describe(
    'true: the overwritten Maps move to the end of the run order; false: they keep their places. New Maps are added at the end',
  ),
});

/** An import file: the JSON of an export file (an array of Maps), of the original service's export, one Map, or `{maps: […]}`. */
export const ImportFile = z
  .union([z.array(z.unknown()), z.record(z.string(), z.unknown())])
  .describe(
    'The export file: an array of Maps (this Service\'s export, or the original service\'s with model 2.5 flat Block lists), one Map, or {"maps": [...]}. ' +
      'Send it as application/json (text/plain and application/octet-stream are read as JSON too).',
  );

export const ImportedMap = z.object({
  id: z.number().int(),
  name: z.string(),
  revision: z.number().int().describe('the revision the import wrote'),
  index: z.number().int().describe("the Map's place in the run order after the import"),
  action: z.enum(['Created', 'Overwritten']),
});

export const ImportAnswer = z.object({
  maps: z.array(ImportedMap).describe("the Maps written, in the file's order"),
  unresolvedConnections: z
    .array(
      z.object({
        mapName: z.string(),
        connectionId: z.string(),
        connectionName: z.string().nullable(),
        connectionAlias: z.string().nullable(),
      }),
    )
    .describe(
      'Connection references of the file that matched no Connection of the Organization by ID, name or alias; the Blocks keep them and validation names them',
    ),
});

/** A Map model in a request body (optional): 3.0, or a 2.x export upgraded on the way. */
export const OptionalModelBody = documentedAs(
  z.record(z.string(), z.unknown()),
  'MapModel',
  'input',
  `A Map model (version ${MAP_MODEL_VERSION}, or a 2.x export upgraded first); when absent, the stored Map's latest revision is used`,
).nullish();

export const UpgradeBody = z
  .record(z.string(), z.unknown())
  .describe("A Map model of an older version (2.x: the original service's export) or 3.0");

/** The Map model answered by upgrade, changeblocktype and renameblock: not saved. */
export const ModelAnswer = documentedAs(
  z.record(z.string(), z.unknown()),
  'MapModel',
  'output',
  `A Map model, version ${MAP_MODEL_VERSION}`,
);

export const ChangeBlockTypeQuery = z.object({
  action: anyCase(BLOCK_ACTIONS).describe(
    'the new action: Create, Update, UpdateInsert, InsertUpdate (Upsert), Delete, Query (Lookup), CreateWith, UpdateWith',
  ),
  operationName: z
    .string()
    .min(1)
    .max(255)
    .describe("the Connection's operationName for the action (supportedactions), e.g. Update/Insert"),
  blockId: Guid,
});

export const RenameBlockQuery = z.object({
  blockId: Guid,
  newName: z
    .string()
    .min(1)
    .max(255)
    .describe(
      'letters, digits and underscores, not starting with a digit, at most 50 characters; unique in the Map ignoring case',
    ),
});

export { MapParams };
