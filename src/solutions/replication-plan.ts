/**
 * A Replication entity as a Map (the original service's ReplicationServicesMap): the target entity
 * made to hold the source's, and the plan the Map runtime runs for it (maps/runtime/run.ts):
 *
 *   Read (Query the source entity; net change on the stamp net-change-field.ts picks)
 *     ─▶ Upsert by key, or Create (a target without a key), every field copied as read (maps/blocks/copy-step.ts)
 *
 * with what the runtime does for any Map: the watermark and its skip of records read again, the
 * checkpoint in the target's transaction for a Create, the first copy in key order (first-copy.ts),
 * the packed lane, the retry of a target that went away, the stop between batches.
 */
import type { Logger } from 'pino';
import type { HostConnection } from '../connectors/connection.js';
import type { EntityMetadata } from '../connectors/sdk.js';
import { FerryError, isFerryError } from '../errors/ferry-error.js';
import { checkpointKeyOf, type CheckpointKey } from '../maps/runtime/checkpoint.js';
import { copyStep } from '../maps/blocks/copy-step.js';
import { firstCopyKey } from '../maps/runtime/first-copy.js';
import type { RunPlan } from '../maps/runtime/run-types.js';
import { queryKind } from '../maps/blocks/query.block.js';
import { DEFAULT_MAP_BATCH_SIZE, MAP_MODEL_VERSION, type Block } from '../protocol/map.js';
import { netChangeField } from './net-change-field.js';

/** The IDs the plan's Blocks name the two Connections by (RunOptions.connections). */
export const SOURCE_ID = 'source';
export const TARGET_ID = 'target';

/** An entity's copy, decided once its target is ensured. */
export interface ReplicaPlan {
  readonly plan: RunPlan;
  /** The target entity. */
  readonly dest: EntityMetadata;
  /** The target was created by this run: it gets everything. */
  readonly created: boolean;
  /** The net-change field; undefined when the source has none (every run copies all, by key). */
  readonly field: string | undefined;
  readonly action: 'Upsert' | 'Create';
  readonly bulk: boolean;
  readonly batchSize: number;
  /** Its checkpoint's key in a transactional target (checkpoint.ts), with net change. */
  readonly key: CheckpointKey | undefined;
  /** The source's key a first copy may read in (first-copy.ts): an Upsert from a source that reads snapshots. */
  readonly firstCopyKey: string | undefined;
}

/** The target entity made to hold the source's (created, fields added), and the plan that copies it. */
export async function ensureReplica(
  name: string,
  run: {
    source: HostConnection;
    target: HostConnection;
    checkForBulk: boolean;
    signal: AbortSignal;
    batchSize?: number | undefined;
  },
  log: Logger,
): Promise<ReplicaPlan> {
  const { source, target, signal } = run;
  const src = await source.entity(name, { signal });
  const field = netChangeField(src);
  if (field === undefined) {
    // Refused before the target is created: the key it would have is the existing target's, else the source's.
    const existing = await target.entity(name, { signal }).catch((err: unknown) => {
      if (isFerryError(err) && err.code === 'CON_ENTITY_NOT_FOUND') return undefined;
      throw err;
    });
    if (!(existing ?? src).fields.some((f) => f.isPrimaryKey)) throw unkeyed(name, existing?.fullName ?? name);
  }
  const ensured = await target.ensureEntity(src, { signal });
  const dest = ensured.entity;
  if (ensured.created) log.info({ target: dest.fullName }, 'target entity created');
  if (ensured.addedFields.length)
    log.info({ target: dest.fullName, fields: ensured.addedFields }, 'target entity gained fields');
  // Once per entity and run: the types are left as they are, values that do not fit fail alone.
  if (ensured.mismatchedFields.length)
    log.warn(
      { target: dest.fullName, fields: ensured.mismatchedFields },
      'target fields differ in type from the source',
    );
  const keyFields = dest.fields.filter((f) => f.isPrimaryKey).map((f) => f.fullName);
  if (keyFields.length === 0 && field === undefined) throw unkeyed(name, dest.fullName);
  // A keyed target is written by key, so a record read twice (a re-copy, a batch re-read after a
  // crash) is written over, never doubled.
  const action: 'Upsert' | 'Create' = keyFields.length ? 'Upsert' : 'Create';
  const bulk = run.checkForBulk && (dest.actions.find((a) => a.action === action)?.supportsBulk ?? false);
  const limit = Math.min(source.bulkLimit, target.bulkLimit);
  // Not bulk, a batch goes the records way (no packed COPY) in calls of a Map's default batch.
  const batchSize = Math.max(1, Math.min(run.batchSize ?? (bulk ? limit : DEFAULT_MAP_BATCH_SIZE), limit));
  const sourceKeys = src.fields.filter((f) => f.isPrimaryKey).map((f) => f.fullName);
  const read: Block = {
    blockId: 'read',
    name: 'Read',
    blockType: 'Query',
    action: 'Query',
    connectionId: SOURCE_ID,
    entity: name,
    ...(field !== undefined ? { netChange: { fieldName: field } } : {}),
  };
  const write: Block = {
    blockId: 'write',
    name: action,
    blockType: action,
    action: action === 'Upsert' ? 'InsertUpdate' : 'Create',
    connectionId: TARGET_ID,
    entity: dest.fullName,
  };
  const fields = src.fields.map((f) => f.fullName);
  const plan: RunPlan = {
    model: {
      version: MAP_MODEL_VERSION,
      name,
      mapType: 'ReplicationServicesMap',
      batchSize,
      blocks: [read, write],
    },
    starter: read,
    source: queryKind.source?.(read, []) ?? unreachable(),
    steps: [
      copyStep({
        block: write,
        from: read.name,
        action,
        target: dest.fullName,
        fields,
        keyFields: keyFields.length ? keyFields : sourceKeys,
        bulk,
      }),
    ],
    blocks: [read, write],
    sourceFields: fields,
    sourceKeyFields: sourceKeys,
    errorKeyFields: keyFields.length ? keyFields : sourceKeys,
    noFormulas: true,
  };
  return {
    plan,
    dest,
    created: ensured.created,
    field,
    action,
    bulk,
    batchSize,
    key:
      field === undefined
        ? undefined
        : checkpointKeyOf({ kind: 'entity', sourceConnectionId: source.connectionId, entity: name, field }),
    firstCopyKey: field !== undefined && action === 'Upsert' ? firstCopyKey(src, source) : undefined,
  };
}

function unreachable(): never {
  throw new Error('the Query Block binds no source');
}

function unkeyed(name: string, target: string): FerryError {
  return new FerryError(
    'RUN_REPLICATION_UNKEYED',
    `${name} cannot be replicated: its target ${target} has no primary key and the source has no modification-stamp field, so every run would copy all its records again and double them. Give the table a primary key or a datetime field such as modified_at.`,
    { details: { entity: name, target } },
  );
}
