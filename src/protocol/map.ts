import { z } from 'zod';
import { Filter } from './filter.js';

/**
 * The Map model, version 3.0 (DESIGN.md "Maps"): an ordered tree of Blocks. Field names follow
 * the original service's 2.5 export where the concept is the same (`fieldMappings`,
 * `targetField`, `targetFormula`, `filterItems`-style `lookupConditions`, `connectionId`,
 * `useBulk`, `bulkCountPerOperation`, `onErrorMessage`), so `upgradeMap` converts such exports.
 *
 * Formulas (mappings, conditions, compare values) are text in the formula language
 * (docs/formulas.md) and reference fields as `BlockName.Field`.
 */

export const MAP_MODEL_VERSION = '3.0';
/** Most Blocks a Map may hold, nested ones included (SPEC.md limits). */
export const MAX_BLOCKS = 250;
/** Longest Block name. */
export const MAX_BLOCK_NAME = 50;
/** Records per write batch unless the Map says otherwise (the original's default). */
export const DEFAULT_MAP_BATCH_SIZE = 2000;

/** Every Block kind. The Agent reports the ones it cannot run yet as validation errors. */
export const BLOCK_TYPES = [
  // starters
  'Query',
  'Fetch',
  'NativeQuery',
  'WaitForMessage',
  // control
  'ForEachResult',
  'ForEachChild',
  'IfElse',
  'Loop',
  'LoopExit',
  'Continue',
  'MapExit',
  // operations
  'Lookup',
  'Create',
  'Update',
  'UpdateInsert',
  'Upsert',
  'Delete',
  'CreateWith',
  'UpdateWith',
  // request-response event Maps
  'WaitForRequest',
  'BuildReply',
  'SendReply',
] as const;
export type BlockType = (typeof BLOCK_TYPES)[number];

export const STARTER_TYPES: readonly BlockType[] = [
  'Query',
  'Fetch',
  'NativeQuery',
  'WaitForMessage',
  'WaitForRequest',
];
/** Starters whose single record is a message handed to the run. */
export const MESSAGE_STARTERS: readonly BlockType[] = ['WaitForMessage', 'WaitForRequest'];
/** Blocks whose body runs repeatedly; Loop Exit and Continue act on the innermost one. */
export const LOOP_TYPES: readonly BlockType[] = ['ForEachResult', 'ForEachChild', 'Loop'];
export const WRITE_TYPES = ['Create', 'Update', 'UpdateInsert', 'Upsert', 'Delete'] as const;
export type WriteBlockType = (typeof WRITE_TYPES)[number];
export const isWriteType = (t: BlockType): t is WriteBlockType => (WRITE_TYPES as readonly string[]).includes(t);

/** The action values of changeblocktype (SPEC.md). */
export const BLOCK_ACTIONS = [
  'None',
  'Create',
  'InsertUpdate',
  'UpdateInsert',
  'Query',
  'Update',
  'Delete',
  'NativeQuery',
  'CreateWith',
  'UpdateWith',
] as const;
export type BlockAction = (typeof BLOCK_ACTIONS)[number];

/** The action a Block kind runs by default. `InsertUpdate` is the original's name for Upsert. */
export const DEFAULT_ACTION: Record<BlockType, BlockAction> = {
  Query: 'Query',
  Fetch: 'Query',
  NativeQuery: 'NativeQuery',
  WaitForMessage: 'None',
  ForEachResult: 'None',
  ForEachChild: 'None',
  IfElse: 'None',
  Loop: 'None',
  LoopExit: 'None',
  Continue: 'None',
  MapExit: 'None',
  Lookup: 'Query',
  Create: 'Create',
  Update: 'Update',
  UpdateInsert: 'UpdateInsert',
  Upsert: 'InsertUpdate',
  Delete: 'Delete',
  CreateWith: 'CreateWith',
  UpdateWith: 'UpdateWith',
  WaitForRequest: 'None',
  BuildReply: 'None',
  SendReply: 'None',
};

/** `targetField` ← `targetFormula`. */
export const FieldMapping = z
  .object({
    targetField: z.string().min(1).describe("the target entity's field (its fullName) the value is written to"),
    targetDataType: z
      .string()
      .optional()
      .describe('the data type of the target field, as the original service exported it (informative)'),
    targetFormula: z
      .string()
      .describe('the formula that gives the value (docs/formulas.md), reading earlier Blocks as `Block.Field`'),
  })
  .describe('One target field and the formula that fills it (`targetField` ← `targetFormula`).');
export type FieldMapping = z.infer<typeof FieldMapping>;

export const LOOKUP_OPERATORS = ['=', '<>', '<', '<=', '>', '>='] as const;
/** A Lookup (or keyed write) condition: the entity's `fieldName` compared with a formula's value. */
export const LookupCondition = z
  .object({
    fieldName: z.string().min(1).describe("the Block entity's field (its fullName) compared"),
    comparisonOperator: z
      .enum(LOOKUP_OPERATORS)
      .default('=')
      .describe('how the field compares with the value (default =)'),
    compareValue: z.string().describe('a formula giving the value the field is compared with'),
  })
  .describe(
    'How a Lookup, Update, UpdateInsert, Upsert or Delete finds its records: the conditions of a Block are all true.',
  );
export type LookupCondition = z.infer<typeof LookupCondition>;

/** Most records a Fetch reads. */
export const MAX_FETCH_RECORDS = 1000;
/** Iterations a Loop runs per record unless its `maxIterations` says otherwise. */
export const DEFAULT_LOOP_ITERATIONS = 100;
/** Highest `maxIterations` a Loop may set. */
export const MAX_LOOP_ITERATIONS = 100_000;

/**
 * CreateWith / UpdateWith: child records written with the parent. For each record of `source` (a
 * Lookup Block's results, or a Query relationship's children named `Query.relationship`), one child
 * record of the `relationship`'s related entity is written from `fieldMappings`; the relationship's
 * key fields are set from the parent as written. Child formulas read the current source record as
 * `name.Field`.
 */
export const ChildWrite = z
  .object({
    relationship: z
      .string()
      .min(1)
      .describe(
        "the relationship (fullName) of the Block's entity whose related entity the child records are written to",
      ),
    source: z
      .string()
      .min(1)
      .describe(
        "what gives one child record per record: a Lookup Block's name, or a Query relationship's children as `Query.relationship`",
      ),
    /** The name the child formulas read the current source record by; default `source` (required for `Query.relationship`). */
    name: z
      .string()
      .min(1)
      .max(MAX_BLOCK_NAME)
      .optional()
      .describe(
        'the name the child formulas read the current source record by; default `source` (required for `Query.relationship`)',
      ),
    fieldMappings: z
      .array(FieldMapping)
      .describe("the child record's fields; the relationship's key fields are set from the parent"),
  })
  .describe('CreateWith / UpdateWith: child records written with the parent record, one per record of `source`.');
export type ChildWrite = z.infer<typeof ChildWrite>;

/** Net change of a Query: read records whose `fieldName` (date/datetime) is at or after the Map's lastRunDate. */
export const NetChangeSpec = z
  .object({ fieldName: z.string().min(1).describe('a date or datetime field of the entity') })
  .describe("Net change: read only the records whose `fieldName` is at or after the Map's lastRunDate.");

/** Most unacknowledged deliveries a broker message source may hold (its `prefetch`). */
export const MAX_PREFETCH = 10_000;
/** A broker message source's `prefetch` unless it sets one. */
export const DEFAULT_PREFETCH = 500;

/** A JetStream stream or consumer name: no whitespace, `.`, `*`, `>`, path separators or controls. */
const NATS_NAME = /^[^\s.*>/\\\p{Cc}]{1,200}$/u;
/** A JetStream subject filter: tokens joined by `.`, `*` for one token, a final `>` for the rest. */
const NATS_SUBJECT = /^(?:(?:[^\s.*>\p{Cc}]+|\*)(?:\.(?:[^\s.*>\p{Cc}]+|\*))*(?:\.>)?|>)$/u;

const sourceFields = {
  connectionId: z
    .string()
    .min(1)
    .describe("the broker's Connection (a RabbitMQ or NATS Connector's): where it is and its credentials"),
  prefetch: z
    .number()
    .int()
    .min(1)
    .max(MAX_PREFETCH)
    .optional()
    .describe(
      `most messages delivered to the Agent and not yet acknowledged (default ${DEFAULT_PREFETCH}): the back-pressure`,
    ),
};

/** Wait For Message from a RabbitMQ queue (docs/events.md "Messages from RabbitMQ or NATS JetStream"). */
export const RabbitMqSource = z
  .strictObject({
    type: z.literal('rabbitmq'),
    ...sourceFields,
    queue: z.string().min(1).max(255).describe('the queue the messages are consumed from; it must exist'),
  })
  .describe('Messages from a RabbitMQ queue, acknowledged once the Map wrote them.');

/** Wait For Message from a NATS JetStream stream, through a durable pull consumer. */
export const NatsSource = z
  .strictObject({
    type: z.literal('nats'),
    ...sourceFields,
    stream: z.string().regex(NATS_NAME, 'a JetStream stream name').describe('the stream; it must exist'),
    consumer: z
      .string()
      .regex(NATS_NAME, 'a JetStream consumer name')
      .optional()
      .describe('the durable pull consumer Ferry creates and reads (default `ferry-map-<mapId>`)'),
    subject: z
      .string()
      .max(1000)
      .regex(NATS_SUBJECT, 'a NATS subject (tokens joined by ".", with "*" or a final ">")')
      .optional()
      .describe("only the stream's messages of this subject (default all)"),
    ackWaitSeconds: z
      .number()
      .int()
      .min(1)
      .max(3600)
      .optional()
      .describe(
        'seconds a delivery may stay unacknowledged by a dead Agent before JetStream delivers it again (default 30)',
      ),
  })
  .describe('Messages from a NATS JetStream stream, acknowledged once the Map wrote them.');

/** Where a Wait For Message Block takes its messages from instead of its HTTP endpoint. */
export const MessageSource = z.discriminatedUnion('type', [RabbitMqSource, NatsSource]);
export type MessageSource = z.infer<typeof MessageSource>;
export type RabbitMqSource = z.infer<typeof RabbitMqSource>;
export type NatsSource = z.infer<typeof NatsSource>;

/** The built-in Connector each message source type reads through (connectors/rabbitmq, connectors/nats). */
export const MESSAGE_SOURCE_CONNECTORS: Readonly<Record<MessageSource['type'], { id: string; name: string }>> = {
  rabbitmq: { id: 'b0a423c7-09b8-4bed-a530-2989734f9e1a', name: 'RabbitMQ' },
  nats: { id: '504ceeed-73e5-46f4-b254-71303a4cfb6d', name: 'NATS JetStream' },
};

/** The durable JetStream consumer of a Map that names none. */
export const defaultNatsConsumer = (mapId: number | undefined): string => `ferry-map-${mapId ?? 0}`;

export interface Block {
  blockId: string;
  name: string;
  blockType: BlockType;
  action: BlockAction;
  operationName?: string | undefined;
  label?: string | undefined;
  connectionId?: string | undefined;
  /** Entity fullName. */
  entity?: string | undefined;
  /** Query / Fetch: the filter AST. */
  filter?: Filter | undefined;
  /** Query: net change on a date field. */
  netChange?: { fieldName: string } | undefined;
  /** Query: relationship fullNames to child entities read with each record. */
  relationships?: string[] | undefined;
  /** For Each Child: the relationship (one of its source Query's `relationships`) whose children it iterates. */
  relationship?: string | undefined;
  /** Native Query, Wait For Message, Wait For Request without an entity: the fields of the records the Block yields. */
  fields?: string[] | undefined;
  /** Wait For Message: a RabbitMQ queue or NATS JetStream stream instead of the Map's HTTP endpoint. */
  messageSource?: MessageSource | undefined;
  /** Fetch: most records read (default 1, at most {@link MAX_FETCH_RECORDS}). */
  maxRecords?: number | undefined;
  /** Loop: most iterations per record (default {@link DEFAULT_LOOP_ITERATIONS}). */
  maxIterations?: number | undefined;
  /** CreateWith / UpdateWith: the child records written with the parent. */
  children?: ChildWrite[] | undefined;
  fieldMappings?: FieldMapping[] | undefined;
  /** Lookup, Update, UpdateInsert, Delete: how the record is found. */
  lookupConditions?: LookupCondition[] | undefined;
  /** If/Else and Loop: a formula that is true or false. */
  condition?: string | undefined;
  /** Native Query: the statement. */
  statement?: string | undefined;
  /** For Each Result: the Lookup whose results it iterates; For Each Child: the Query (default the starter); Send Reply: the Build Reply. */
  source?: string | undefined;
  /** Lookup: cache results per key for the run. */
  cacheResults?: boolean | undefined;
  /** Write Blocks: write in bulk when the Action supports it (default true). */
  useBulk?: boolean | undefined;
  bulkCountPerOperation?: number | undefined;
  onErrorMessage?: string | undefined;
  then?: Block[] | undefined;
  else?: Block[] | undefined;
  body?: Block[] | undefined;
}

const Guid = z
  .string()
  .regex(/^[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}$/, 'a GUID');

/** What each Block kind reads from the Block, for the OpenAPI document (docs/maps.md has the rules). */
const BLOCK_KIND_FIELDS = [
  'Query: connectionId, entity, filter?, netChange?, relationships?',
  'Fetch: connectionId, entity, filter, maxRecords?, relationships?',
  'NativeQuery: connectionId, statement, fields',
  'WaitForMessage / WaitForRequest: fields, or connectionId + entity; WaitForMessage: messageSource?',
  'ForEachResult: source (a Lookup), body',
  'ForEachChild: source? (a Query), relationship, body',
  'IfElse: condition, then, else',
  'Loop: condition, maxIterations?, body',
  'LoopExit, Continue, MapExit: nothing more',
  'Lookup: connectionId, entity, lookupConditions, cacheResults?',
  'Create, Update, UpdateInsert, Upsert, Delete: connectionId, entity, fieldMappings, lookupConditions?, useBulk?, bulkCountPerOperation?, onErrorMessage?',
  'CreateWith, UpdateWith: as Create / Update, plus children',
  'BuildReply: fieldMappings',
  'SendReply: source (a BuildReply)',
].join('; ');

export const Block: z.ZodType<Block> = z.lazy(() =>
  z
    .object({
      blockId: Guid.describe("the Block's GUID, unique in the Map"),
      name: z
        .string()
        .min(1)
        .max(MAX_BLOCK_NAME)
        .describe("unique in the Map ignoring case; formulas read the Block's record as `name.Field`"),
      blockType: z.enum(BLOCK_TYPES).describe(`the Block kind, and the fields it reads — ${BLOCK_KIND_FIELDS}`),
      action: z
        .enum(BLOCK_ACTIONS)
        .describe(
          "what the Block does; each kind has its default (docs/maps.md): Query for Query, Fetch and Lookup, InsertUpdate for Upsert, the kind's name for the other writes, None for control Blocks",
        ),
      operationName: z
        .string()
        .optional()
        .describe("the Connection's name for the action (its supportedactions), e.g. Update/Insert"),
      label: z.string().optional().describe('a free text shown for the Block'),
      connectionId: z
        .string()
        .min(1)
        .optional()
        .describe('the Connection the Block reads or writes (starters, Lookup, writes)'),
      entity: z.string().min(1).optional().describe("the entity's fullName (starters, Lookup, writes)"),
      filter: Filter.optional().describe('Query, Fetch: which records are read'),
      netChange: NetChangeSpec.optional(),
      relationships: z
        .array(z.string().min(1))
        .optional()
        .describe('Query, Fetch: relationship fullNames whose child records are read with each record'),
      relationship: z
        .string()
        .min(1)
        .optional()
        .describe("ForEachChild: the relationship (one of its Query's relationships) whose children it iterates"),
      fields: z
        .array(z.string().min(1))
        .optional()
        .describe(
          'NativeQuery, WaitForMessage, WaitForRequest without an entity: the fields of the records the Block yields',
        ),
      messageSource: MessageSource.optional().describe(
        'WaitForMessage: take the messages from a RabbitMQ queue or a NATS JetStream stream instead of the HTTP endpoint',
      ),
      maxRecords: z
        .number()
        .int()
        .min(1)
        .max(MAX_FETCH_RECORDS)
        .optional()
        .describe('Fetch: most records read (default 1)'),
      maxIterations: z
        .number()
        .int()
        .min(1)
        .max(MAX_LOOP_ITERATIONS)
        .optional()
        .describe(`Loop: most iterations per record (default ${DEFAULT_LOOP_ITERATIONS})`),
      children: z
        .array(ChildWrite)
        .optional()
        .describe('CreateWith, UpdateWith: the child records written with the parent'),
      fieldMappings: z
        .array(FieldMapping)
        .optional()
        .describe('writes, BuildReply: the target fields and their formulas'),
      lookupConditions: z
        .array(LookupCondition)
        .optional()
        .describe('Lookup, Update, UpdateInsert, Upsert, Delete: how the record is found (else by primary key)'),
      condition: z.string().optional().describe('IfElse, Loop: a formula that is true or false'),
      statement: z.string().optional().describe('NativeQuery: the statement run by the Connector'),
      source: z
        .string()
        .optional()
        .describe(
          'ForEachResult: the Lookup whose results it iterates; ForEachChild: the Query (default the starter); SendReply: the BuildReply',
        ),
      cacheResults: z.boolean().optional().describe('Lookup: cache the results per key for the run'),
      useBulk: z.boolean().optional().describe('writes: write in bulk when the Action supports it (default true)'),
      bulkCountPerOperation: z.number().int().min(1).optional().describe('writes: records per bulk call'),
      onErrorMessage: z
        .string()
        .optional()
        .describe("writes: the message a refused record's error carries instead of the Connector's"),
      then: z.array(Block).optional().describe('IfElse: the Blocks a record runs when the condition is true'),
      else: z.array(Block).optional().describe('IfElse: the Blocks a record runs otherwise'),
      body: z.array(Block).optional().describe('ForEachResult, ForEachChild, Loop: the Blocks run per iteration'),
    })
    .describe('One Block of a Map. Every kind shares one shape; blockType says which fields it reads.'),
);

export const MapModel = z
  .object({
    version: z.literal(MAP_MODEL_VERSION).describe('the model version; a 2.x export sent to the API is upgraded first'),
    mapId: z.number().int().optional(),
    name: z.string().min(1),
    description: z.string().optional(),
    mapType: z
      .string()
      .optional()
      .describe(
        'IntegrationServicesAdvancedMap, IntegrationServicesAdvancedMessageMap, IntegrationServicesAdvancedRequestResponseMap or ReplicationServicesMap',
      ),
    /** Net change: records modified at or after this instant are read (ISO-8601; null = all). */
    lastRunDate: z
      .string()
      .nullable()
      .optional()
      .describe('net change: records modified at or after this instant are read (ISO-8601; null: all)'),
    /** Records per write batch (default 2000; clamped to the Connector's bulkLimit). */
    batchSize: z
      .number()
      .int()
      .min(1)
      .max(100_000)
      .optional()
      .describe(`records per write batch (default ${DEFAULT_MAP_BATCH_SIZE}; at most the Connector's bulk limit)`),
    blocks: z
      .array(Block)
      .min(1)
      .describe(`the Blocks in flow order, the starter first; at most ${MAX_BLOCKS} in all, nested ones included`),
  })
  .describe(`A Map model, version ${MAP_MODEL_VERSION}: an ordered tree of Blocks (docs/maps.md).`)
  .superRefine((m, ctx) => {
    const all = [...walkBlocks(m.blocks)];
    if (all.length > MAX_BLOCKS)
      ctx.addIssue({
        code: 'custom',
        path: ['blocks'],
        message: `a Map holds at most ${MAX_BLOCKS} Blocks (this one has ${all.length})`,
      });
    const names = new Map<string, Block>();
    const ids = new Set<string>();
    for (const b of all) {
      const key = b.name.toLowerCase();
      const first = names.get(key);
      if (first) {
        ctx.addIssue({
          code: 'custom',
          path: ['blocks'],
          message: `the Blocks "${first.name}" (${first.blockId}) and "${b.name}" (${b.blockId}) have the same name; Block names are unique in a Map, ignoring case`,
        });
      } else {
        names.set(key, b);
      }
      if (b.messageSource && (b.blockType !== 'WaitForMessage' || b !== m.blocks[0]))
        ctx.addIssue({
          code: 'custom',
          path: ['blocks'],
          message: `the Block "${b.name}" has a messageSource: only a Map's first Block, a WaitForMessage, takes messages from a broker`,
        });
      if (ids.has(b.blockId.toLowerCase()))
        ctx.addIssue({ code: 'custom', path: ['blocks'], message: `the blockId ${b.blockId} is used twice` });
      ids.add(b.blockId.toLowerCase());
    }
  });
export type MapModel = z.infer<typeof MapModel>;

/** Every Block of a tree, depth first, in flow order. */
export function* walkBlocks(blocks: readonly Block[]): Generator<Block> {
  for (const b of blocks) {
    yield b;
    if (b.then) yield* walkBlocks(b.then);
    if (b.else) yield* walkBlocks(b.else);
    if (b.body) yield* walkBlocks(b.body);
  }
}
