import { z } from 'zod';
import { MAX_VALUE_LENGTH } from '../../lookup-tables/values.js';
import { decimal, Guid, MAX_INT, Name, OrgParams, PageQuery, qbool, Text, Timestamp } from './common.js';

export const LookupTableValue = z.object({
  id: z.string(),
  value1: z.string(),
  value2: z.string(),
  creationDate: Timestamp,
  lastModificationDate: Timestamp,
});
export type LookupTableValueModel = z.infer<typeof LookupTableValue>;

export const LookupTable = z.object({
  id: z.string(),
  name: z.string(),
  description: z.string().nullable(),
  creationDate: Timestamp,
  lastModificationDate: Timestamp,
  modificationBy: z.string().nullable(),
  lookupTableValues: z
    .array(LookupTableValue)
    .optional()
    .describe('present unless a list is asked for without includeLookupTableValues'),
});
export type LookupTableModel = z.infer<typeof LookupTable>;

const Value1 = z.string().min(1, 'must not be empty').max(MAX_VALUE_LENGTH);
/** value2 may be empty; null or absent is taken as empty. */
const Value2 = z
  .string()
  .max(MAX_VALUE_LENGTH)
  .nullish()
  .transform((v) => v ?? '');

/**
 * A value as clients send it: value1 and value2. The fields the Service sets (id, dates) are
 * accepted, so that a value read with GET can be sent back, and ignored.
 */
export const LookupTableValueInput = z.strictObject({
  id: z.string().nullish(),
  value1: Value1,
  value2: Value2,
  creationDate: z.string().nullish(),
  lastModificationDate: z.string().nullish(),
});

/**
 * A Lookup Table as clients send it. id, dates and modificationBy are set by the Service: they are
 * accepted (a model read with GET can be sent back) and ignored, except that an id on PUT must
 * name the table of the path.
 */
export const LookupTableInput = z.strictObject({
  id: z.string().nullish(),
  name: Name,
  description: Text.nullish(),
  creationDate: z.string().nullish(),
  lastModificationDate: z.string().nullish(),
  modificationBy: z.string().nullish(),
  lookupTableValues: z.array(LookupTableValueInput).nullish(),
});
export type LookupTableInputModel = z.infer<typeof LookupTableInput>;

export const TableParams = OrgParams.extend({ tableId: Guid });
export const TableRefParams = OrgParams.extend({ tableIdOrName: z.string().trim().min(1).max(255) });
export const ValueParams = TableParams.extend({ valueId: Guid });
export const ExportParams = TableParams.extend({ exportId: decimal(z.number().int().positive().max(MAX_INT)) });
export const Value1LookupParams = TableRefParams.extend({ value2: z.string() });
export const Value2LookupParams = TableRefParams.extend({ value1: z.string() });

export const TableListQuery = PageQuery.extend({ includeLookupTableValues: qbool(false) });

export const ExportCreated = z.object({ exportId: z.number().int() });

export const ImportQuery = z.object({
  hasHeaderRow: qbool(true),
  replace: qbool(false).describe('true removes the existing values first; false (default) appends'),
});

/** The import body: the CSV text as a JSON string, or an object carrying it (and hasHeaderRow). */
export const ImportBody = z.union([
  z.string(),
  z.strictObject({
    commaSeparatedValues: z.string(),
    hasHeaderRow: z.boolean().optional(),
  }),
]);

export const ImportResult = z.object({
  lookupTableId: z.string(),
  valuesImported: z.number().int(),
  valuesRemoved: z.number().int(),
  valueCount: z.number().int(),
});
