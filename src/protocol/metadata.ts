import { gunzipSync, gzipSync } from 'node:zlib';
import { z } from 'zod';
import { MAX_MESSAGE_BYTES } from './channel.js';

/**
 * Connection metadata (SPEC.md "Entity, Field, Relationship, Action"): the one contract between a
 * Connector plugin, the Agent and the Service.
 *
 *   plugin ── session.metadata() ──▶ Agent host ── packMetadata ──▶ loadMetadata reply
 *   Service ◀── unpackMetadata + ConnectionMetadata.parse ◀──────────────────┘
 *      └──▶ cache (one JSON document per Connection) ── parse ──▶ API models (service/http/mappers)
 *
 * The SDK (`src/connectors/sdk.ts`) re-exports the inferred types, so plugins build plain objects
 * of exactly this shape. The Service validates an Agent's answer with these schemas before caching
 * it and parses its cache with them again: the bounds (string lengths, list sizes) protect it from
 * an answer too large or malformed. A member added after the first release has a default, so a
 * document cached before it still parses (docs/decisions.md, "Connections").
 */

// ── enumerations ───────────────────────────────────────────────────────────────

/** The type of a field, which fixes the JavaScript form of its values (src/connectors/value.ts). */
export const PROPERTY_TYPES = [
  /** text → string */
  'string',
  /** whole number → number when safe, else a decimal string (`"9007199254740993"`) */
  'integer',
  /** exact decimal (NUMERIC) → string (`"12.50"`), never a float */
  'decimal',
  /** binary floating point → number */
  'double',
  'boolean',
  /** `YYYY-MM-DD` */
  'date',
  /** `YYYY-MM-DDTHH:mm:ss[.fraction][Z]`; `Z` when the datastore keeps an instant (normalised to UTC) */
  'datetime',
  /** `HH:mm:ss[.fraction]` */
  'time',
  /** base64 string */
  'binary',
  /** JSON text (a string) */
  'json',
  /** lower-case GUID text: 8-4-4-4-12 hex digits */
  'guid',
] as const;
export type PropertyType = (typeof PROPERTY_TYPES)[number];

export const WRITE_ACTIONS = ['Create', 'Update', 'UpdateInsert', 'Upsert', 'Delete'] as const;
/**
 * `Update/Insert` (UpdateInsert) updates the records the key fields match and inserts the rest;
 * `Upsert` (the original's InsertUpdate) uses the datastore's own insert-or-update on its primary
 * key or unique constraint.
 */
export type WriteAction = (typeof WRITE_ACTIONS)[number];
export const ActionName = z.enum(['Query', 'NativeQuery', ...WRITE_ACTIONS]);
export type ActionName = z.infer<typeof ActionName>;

// ── the document ───────────────────────────────────────────────────────────────

/** Names, labels and paths. */
const Text = z.string().max(1000);
const Description = z.string().max(10_000).default('');

export const Action = z.object({
  /** The datastore action run. */
  action: ActionName,
  /** Label: Query, Native Query, Create, Update, Update/Insert, Upsert, Delete. */
  operationName: Text,
  /** `Starter` (Query, Native Query) or `Operation` (writes). */
  blockType: z.enum(['Starter', 'Operation']),
  supportsBulk: z.boolean(),
  /** Filters (Query only). */
  supportsConstraints: z.boolean(),
  /** Field mapping input. */
  supportsInput: z.boolean(),
  supportsLookupConditions: z.boolean(),
  supportsRelations: z.boolean(),
  supportsMultipleRecordOperations: z.boolean(),
  supportsSequences: z.boolean(),
});
export type Action = z.infer<typeof Action>;

export const Field = z.object({
  name: Text,
  /** Letters, digits, underscore; how records and filters name the field. */
  fullName: Text,
  /** The datastore's own name. */
  originalName: Text,
  description: Description,
  isPrimaryKey: z.boolean(),
  nullable: z.boolean(),
  /** Characters for text, bytes for integers (2, 4, 8), precision digits for decimals; 0 = unknown or unbounded. */
  size: z.number(),
  /** Decimal scale when known. */
  scale: z.number().int().optional(),
  /** 1-based position in the entity. */
  ordinal: z.number().int(),
  propertyType: z.enum(PROPERTY_TYPES),
  /** The datastore's type as its catalogue spells it (`character varying(50)`, `INTEGER`); '' = unknown. */
  nativeType: Text.default(''),
  /** The datastore fills it when a Create leaves it out (default, identity, rowid); false when unknown. */
  hasDefault: z.boolean().default(false),
  requiredInActionInput: z.boolean(),
  usedInLookupCondition: z.boolean(),
  usedInActionInput: z.boolean(),
  usedInQueryConstraint: z.boolean(),
  usedInQuerySelect: z.boolean(),
});
export type Field = z.infer<typeof Field>;

export const Relationship = z.object({
  name: Text,
  fullName: Text,
  description: Description,
  /** `ThisEntityFullName.RelatedEntityFullName` */
  path: Text,
  thisEntityFullName: Text,
  relatedEntityFullName: Text,
  /** Field fullNames of this entity, in key order. */
  thisProperties: z.array(Text).max(100),
  /** The matching field fullNames of the related entity. */
  relatedProperties: z.array(Text).max(100),
  /** `ManyToOne`: this entity holds the foreign key; `OneToMany`: the related one does. */
  relationshipType: z.enum(['ManyToOne', 'OneToMany']),
  /** Temporary grouping IDs (SPEC.md): the API answers fresh ones on every call. */
  parentId: Text.default(''),
  uniqueId: Text.default(''),
});
export type Relationship = z.infer<typeof Relationship>;

/** The most entities a loadMetadata answer may carry. */
export const MAX_METADATA_ENTITIES = 20_000;

export const EntityMetadata = z.object({
  id: Text,
  name: Text,
  fullName: Text,
  originalName: Text,
  description: Description,
  isHidden: z.boolean(),
  actions: z.array(Action).max(20),
  fields: z.array(Field).max(10_000),
  relationships: z.array(Relationship).max(10_000),
});
export type EntityMetadata = z.infer<typeof EntityMetadata>;

export const ConnectionMetadata = z.object({
  entities: z.array(EntityMetadata).max(MAX_METADATA_ENTITIES),
  /** The actions the connection supports at all (each entity lists its own). */
  actions: z.array(Action).max(20),
});
export type ConnectionMetadata = z.infer<typeof ConnectionMetadata>;

// ── on the channel ─────────────────────────────────────────────────────────────

/**
 * A loadMetadata answer whose JSON would not fit in one channel message travels compressed:
 * `{encoding: 'gzip+base64', data}` (metadata compresses 10–20×). Larger still is refused with
 * CON_METADATA_TOO_LARGE.
 */
export const PackedMetadata = z.object({ encoding: z.literal('gzip+base64'), data: z.string() });
export type PackedMetadata = z.infer<typeof PackedMetadata>;

/** What a loadMetadata reply carries: the document, or the document packed. */
export type MetadataAnswer = ConnectionMetadata | PackedMetadata;

/** Room left in a channel message for the reply's envelope (`{re, ok, result}`). */
const ENVELOPE_BYTES = 1024;
/** The largest answer, plain or packed, that fits in one channel message with its envelope. */
export const MAX_METADATA_ANSWER_BYTES = MAX_MESSAGE_BYTES - ENVELOPE_BYTES;
/** The most JSON a packed answer may uncompress to (a gzip bomb stops here). */
export const MAX_UNPACKED_METADATA_BYTES = 256 * 1024 * 1024;

/** A document made ready for the channel by {@link packMetadata}. */
export type PackedAnswer =
  | { packed: false; answer: ConnectionMetadata; /** Bytes of the document's JSON. */ bytes: number }
  | {
      packed: true;
      answer: PackedMetadata;
      bytes: number;
      /** Characters of the packed data. */
      compressed: number;
      /** Whether the packed data fits in the limit; an answer that does not must be refused, not sent. */
      fits: boolean;
    };

/** The document as it travels: as is when its JSON fits in `maxBytes`, else gzip+base64. */
export function packMetadata(md: ConnectionMetadata, maxBytes: number = MAX_METADATA_ANSWER_BYTES): PackedAnswer {
  const json = JSON.stringify(md);
  const bytes = Buffer.byteLength(json);
  if (bytes <= maxBytes) return { packed: false, answer: md, bytes };
  const data = gzipSync(json, { level: 9 }).toString('base64');
  return {
    packed: true,
    answer: { encoding: 'gzip+base64', data },
    bytes,
    compressed: data.length,
    fits: data.length <= maxBytes,
  };
}

/**
 * An Agent's answer as it was before packing: uncompressed when it came packed (at most
 * {@link MAX_UNPACKED_METADATA_BYTES} of JSON), else as it came. Still to be parsed with
 * {@link ConnectionMetadata}.
 */
export function unpackMetadata(answer: unknown): unknown {
  const packed = PackedMetadata.safeParse(answer);
  if (!packed.success) return answer;
  return JSON.parse(
    gunzipSync(Buffer.from(packed.data.data, 'base64'), { maxOutputLength: MAX_UNPACKED_METADATA_BYTES }).toString(
      'utf8',
    ),
  ) as unknown;
}

/**
 * The loadMetadata reply as the Service reads it: a packed answer is unpacked (at most
 * {@link MAX_UNPACKED_METADATA_BYTES} of JSON) and either is parsed as the ConnectionMetadata once.
 */
export const LoadMetadataResult = z.union([
  PackedMetadata.transform((packed, ctx): unknown => {
    try {
      return unpackMetadata(packed);
    } catch (err) {
      ctx.addIssue({
        code: 'custom',
        message: `packed metadata that does not unpack: ${err instanceof Error ? err.message : String(err)}`,
      });
      return z.NEVER;
    }
  }).pipe(ConnectionMetadata),
  ConnectionMetadata,
]);
