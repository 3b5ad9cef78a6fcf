import { z } from 'zod';
import { Filter } from './filter.js';

/**
 * Reading a few records through an Agent while a Map is being built: the Maps API's preview query
 * (a Query or Fetch Block's entity, its filter applied) and native query test (a Native Query
 * Block's statement). Both open the Connection with its plain properties (the channel is
 * authenticated), read at most {@link PREVIEW_LIMIT} records, close it and answer with them.
 *
 *   Service                                             Agent
 *     previewQuery {connection, entity, filter, limit} ──▶ host.open ─▶ query(limit) ─▶ close
 *     nativeQueryTest {connection, statement, limit} ────▶ host.open ─▶ nativeQuery ─▶ close
 *                    ◀── {records ≤ limit, fields, truncated} | error (CON_…, plain data)
 *
 * The answer always fits in one channel message: records past {@link PREVIEW_MAX_BYTES} of JSON are
 * left out and `truncated` says so. Added in protocol version 1 without a bump, like
 * testConnection: an older Agent answers them with a validation error.
 */

/** Most records a preview or a native query test answers with. */
export const PREVIEW_LIMIT = 100;
/** Most bytes of record JSON in one answer: well inside a channel message (1 MiB). */
export const PREVIEW_MAX_BYTES = 768 * 1024;

const Id = z.string().min(1).max(100);
const Properties = z.record(z.string().max(200), z.string().max(100_000));

export const PreviewQueryCommand = z.object({
  id: Id,
  type: z.literal('previewQuery'),
  connectionId: z.string().max(100),
  connectorId: z.string().max(100),
  properties: Properties,
  /** The entity's fullName. */
  entity: z.string().min(1).max(1000),
  filter: Filter.optional(),
  limit: z.number().int().min(1).max(PREVIEW_LIMIT),
});
export type PreviewQueryCommand = z.infer<typeof PreviewQueryCommand>;

export const NativeQueryTestCommand = z.object({
  id: Id,
  type: z.literal('nativeQueryTest'),
  connectionId: z.string().max(100),
  connectorId: z.string().max(100),
  properties: Properties,
  statement: z.string().min(1).max(100_000),
  limit: z.number().int().min(1).max(PREVIEW_LIMIT),
});
export type NativeQueryTestCommand = z.infer<typeof NativeQueryTestCommand>;

/** A record as read: values of the record value model (string | number | boolean | null). */
export const PreviewRecord = z.record(z.string(), z.union([z.string(), z.number(), z.boolean(), z.null()]));
export type PreviewRecord = z.infer<typeof PreviewRecord>;

/** The answer of both commands. */
export const PreviewResult = z.object({
  records: z.array(PreviewRecord).max(PREVIEW_LIMIT),
  /** The fields of the records, in the order the first record has them. */
  fields: z.array(z.string()),
  /** More records exist than are answered (the limit was reached, or the answer was cut to fit). */
  truncated: z.boolean(),
});
export type PreviewResult = z.infer<typeof PreviewResult>;
