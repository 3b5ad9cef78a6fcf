import { z } from 'zod';
import { Guid, PageQuery, Timestamp } from './common.js';
import { MapAnswer } from './map.schema.js';
import { SolutionParams } from './solution.schema.js';

/** `{validationId}` of validationresults: the validateId answered by validate. */
export const ValidationParams = SolutionParams.extend({
  validationId: Guid.describe('the validateId answered by POST …/maps/{mapId}/validate'),
});

/** validateformula's `{mapId}`: SPEC.md passes the validation ID there, not the Map's. */
export const FormulaParams = SolutionParams.extend({
  mapId: z
    .string()
    .min(1)
    .max(100)
    .describe(
      "the validateId answered by POST …/maps/{mapId}/validate (a Map ID is refused: the formula is checked against that validation's metadata)",
    ),
});

export const ValidateStarted = z.object({
  validateId: z.string().describe('GUID; read the findings at GET …/maps/{validateId}/validationresults'),
});

export const ValidationResultsQuery = PageQuery.extend({
  filterByBlockId: Guid.optional().describe('only the findings about this Block'),
});

const Position = z
  .object({
    offset: z.number().int().describe('0-based, in UTF-16 code units'),
    line: z.number().int().describe('1-based'),
    column: z.number().int().describe('1-based'),
    length: z.number().int().describe('code units the offending part spans'),
  })
  .describe('where in the formula text the error is');

/** One finding of a validation. */
export const ValidationFinding = z.object({
  blockId: z
    .string()
    .nullable()
    .describe('null: about the Map as a whole (a Connection whose metadata could not be loaded)'),
  blockName: z.string().nullable(),
  severity: z.enum(['error', 'warning']),
  code: z.string().describe('the error code (docs/errors.md)'),
  message: z.string(),
  formula: z
    .string()
    .nullable()
    .describe(
      'where in the Block the formula sits: fieldMappings.{targetField}.targetFormula, lookupConditions.{fieldName}.compareValue, condition, children.…',
    ),
  field: z.string().nullable().describe('the target field of the mapping, or the field of the lookup condition'),
  position: Position.nullable(),
});

/** One error of a Map as save and prepare answer it (the validator's error findings, per Block). */
export const BlockError = z.object({
  blockId: z
    .string()
    .nullable()
    .describe('null: about the Map as a whole (its model, or a Connection whose metadata could not be loaded)'),
  blockName: z.string().nullable(),
  code: z.string().describe('the error code (docs/errors.md)'),
  message: z
    .string()
    .describe(
      "what is wrong, without the Block's name (see blockName); a misspelt entity or field names the nearest one",
    ),
});

/** What creating or saving a Map answers: the Map, and what the check of the saved revision found. */
export const MapSaveAnswer = MapAnswer.extend({
  valid: z
    .boolean()
    .describe("true: the saved revision was checked against the Connections' metadata and has no errors"),
  validated: z
    .boolean()
    .describe(
      'false: a Connection the Map names has no metadata in the Service yet, so the revision was not checked (valid false, errors empty); POST …/maps/{mapId}/validate or prepare loads it and checks',
    ),
  errors: z
    .array(BlockError)
    .describe('the errors of the saved revision, per Block; empty when it is valid or was not checked'),
});

/** validateformula's body (DESIGN.md: `{blockId, targetFieldDataType, formula, path}`); other keys are ignored. */
export const FormulaBody = z.object({
  formula: z.string().max(100_000).describe('the formula text (required)'),
  blockId: Guid.nullish().describe(
    'the Block the formula belongs to: it reads the Blocks before it; absent: after the last Block',
  ),
  targetFieldDataType: z
    .string()
    .max(100)
    .nullish()
    .describe('accepted; formulas are not typed, the Connector converts the value on write'),
  path: z
    .string()
    .max(1000)
    .nullish()
    .describe(
      'where the formula sits, named in the messages; children.{relationship}… places it in that child write of the Block',
    ),
});

export const FormulaAnswer = z.object({
  valid: z.boolean(),
  message: z.string().nullable().describe("the first error's message; null when valid"),
  errors: z.array(z.object({ code: z.string(), message: z.string(), position: Position.nullable() })),
});

export const MapRelationshipsQuery = PageQuery.extend({
  blockId: Guid.optional().describe('the Block whose relationships to list; default the Query (the starter)'),
  agentId: Guid.optional().describe(
    "the Agent that loads the metadata when it was never loaded; default the Solution's",
  ),
});

export const EventInfo = z.object({
  mapId: z.number().int(),
  entityName: z.string().describe('the entity of the Wait For Message Block (its name when it names none)'),
  mapName: z.string(),
  mapDescription: z.string(),
  eventUrl: z.string().describe("POST messages here with ?accesstoken= the Organization's eventSolutionAccessToken"),
  messageCount: z.number().int().describe('messages received by the Map'),
  createDateTime: Timestamp,
  lastModificationDate: Timestamp,
});
