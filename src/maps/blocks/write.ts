/**
 * What every write Block shares: evaluate the field mappings (and key conditions) for the batch in
 * one sandbox call, write the records in calls of at most the batch size (a Block that does not
 * write in bulk also binds each written record, with its key, for later Blocks to read), and turn
 * each refused record into a record error. Also what the write kinds share when they are checked and bound.
 */
import type { HostConnection } from '../../connectors/connection.js';
import {
  slicePacked,
  type Checkpoint,
  type ConnectorRecord,
  type EntityMetadata,
  type PackedBatch,
  type RecordError,
  type WriteAction,
  type WriteResult,
} from '../../connectors/sdk.js';
import { isFerryError, toErrorData, type ErrorData } from '../../errors/ferry-error.js';
import { isWriteType, type Block, type LookupCondition } from '../../protocol/map.js';
import type { CompiledFormulas } from '../formula/evaluator.js';
import { entityOf } from '../metadata.js';
import type { FieldCopies, Item, RunEnv, Step } from '../runtime/context.js';
import { evaluateOrTake } from '../runtime/formulas.js';
import type { BindContext, CheckContext } from './registry.js';

export interface WriteStepSpec {
  block: Block;
  action: WriteAction;
  /** Mapping formulas first, then one per key field (lookup conditions). */
  formulas: CompiledFormulas;
  targetFields: readonly string[];
  keyFields: readonly string[];
  bulk: boolean;
}

export function writeStep(spec: WriteStepSpec): Step {
  const { block, action, formulas, targetFields, keyFields, bulk } = spec;
  const nTargets = targetFields.length;
  const copies =
    action === 'Create' && bulk && keyFields.length === 0 ? fieldCopies(block, formulas, targetFields) : undefined;
  return {
    block,
    leading: formulas,
    bulkWrite: bulk,
    ...(copies ? { fieldCopies: copies } : {}),
    async run(items, env, ahead) {
      const conn = env.connections.get(block.connectionId ?? '');
      const entity = block.entity ?? '';
      const { values, errors } = await evaluateOrTake(formulas, items, env, ahead);
      const ready: Item[] = [];
      const records: ConnectorRecord[] = [];
      items.forEach((item, i) => {
        const err = errors.get(i);
        if (err) return env.fail(item, block, err);
        const v = values[i] ?? [];
        const rec: ConnectorRecord = {};
        for (let j = 0; j < nTargets; j++) rec[targetFields[j] as string] = v[j] ?? null;
        for (let k = 0; k < keyFields.length; k++) rec[keyFields[k] as string] = v[nTargets + k] ?? null;
        ready.push(item);
        records.push(rec);
      });
      // Bulk or not, a call carries the batch (its results are per record, in order, each with its
      // key): a write that is not bulk keeps its records' outputs readable by later Blocks.
      const size = env.bulkSize(block);
      const opts = keyFields.length ? { keyFields: [...keyFields], signal: env.signal } : { signal: env.signal };
      // Exactly-once Create (runtime/run.ts): the batch's checkpoint commits with it when the batch is
      // one write call; a batch split into several calls keeps only the Agent's own checkpoint.
      const checkpoint = records.length <= size ? env.checkpointFor?.(block) : undefined;
      for (let s = 0; s < records.length; s += size) {
        if (env.signal.aborted) break;
        const part = records.slice(s, s + size);
        let results;
        try {
          if (!conn) throw new Error(`connection ${block.connectionId ?? ''} is not open`);
          const write = (): Promise<WriteResult[]> =>
            conn.write(action, entity, part, checkpoint ? { ...opts, checkpoint } : opts);
          results = await env.retrying(
            block,
            write,
            checkpoint ? () => committed(conn, checkpoint, part.length, env.signal) : undefined,
          );
        } catch (e) {
          // Cancelled while writing, or the target stayed away: the batch is not checkpointed and is
          // read again next run, so its records did not fail.
          if (env.signal.aborted || isRunFatal(e)) throw e;
          const error = batchFailed(block, action, part.length, e);
          for (let k = 0; k < part.length; k++) env.fail(ready[s + k] as Item, block, error);
          continue;
        }
        results.forEach((r, k) => {
          const item = ready[s + k] as Item;
          if (r.ok) {
            if (!bulk) item.ctx[block.name] = { ...(part[k] as ConnectorRecord), ...(r.key ?? {}) };
            return;
          }
          env.fail(item, block, refused(block, r.error));
        });
      }
      return items.filter((i) => !i.state.failed);
    },
  };
}

/** Whether a write's failure ends the run instead of failing its records (target-retry.ts). */
export function isRunFatal(e: unknown): boolean {
  return isFerryError(e) && e.code === 'RUN_TARGET_UNAVAILABLE';
}

/**
 * A Create sent with its checkpoint failed as a whole, perhaps after its commit: the target's
 * checkpoint tells. When it holds this batch's value the batch is written (every record taken:
 * which ones the target refused is not known any more, and none is written twice).
 */
export async function committed(
  conn: HostConnection,
  cp: Checkpoint,
  records: number,
  signal: AbortSignal,
): Promise<WriteResult[] | undefined> {
  if ((await conn.readCheckpoint(cp.key, { signal })) !== cp.value) return undefined;
  return new Array<WriteResult>(records).fill({ ok: true, affected: 1 });
}

/** The error of each record of a write call that failed as a whole (`e`, what it threw). */
export function batchFailed(block: Block, action: WriteAction, records: number, e: unknown): ErrorData {
  const cause: ErrorData | { message: string } = isFerryError(e)
    ? toErrorData(e)
    : { message: e instanceof Error ? e.message : String(e) };
  return {
    code: 'RUN_BATCH_FAILED',
    kind: 'transient',
    message:
      block.onErrorMessage ??
      `${block.name}: the ${action} of ${records} records in ${block.entity ?? ''} failed: ${cause.message}`,
    details: { blockId: block.blockId, cause },
  };
}

/** The error of a record the target refused. */
export function refused(block: Block, error: RecordError): ErrorData {
  return {
    code: 'RUN_WRITE_FAILED',
    kind: 'config',
    message: block.onErrorMessage ?? `${block.name}: ${block.entity ?? ''} refused the record: ${error.message}`,
    details: { blockId: block.blockId, recordError: error },
  };
}

/** A bulk Create's mappings as {@link FieldCopies} when each is a bare field of one Block, no field copied twice. */
function fieldCopies(
  block: Block,
  formulas: CompiledFormulas,
  targetFields: readonly string[],
): FieldCopies | undefined {
  const list = formulas.formulas;
  if (list.length !== targetFields.length || list.length === 0) return undefined;
  const sourceFields: string[] = [];
  let from: string | undefined;
  for (const f of list) {
    const h = f.host;
    if (h?.kind !== 'field' || (from !== undefined && h.block !== from)) return undefined;
    from = h.block;
    sourceFields.push(h.field);
  }
  if (
    from === undefined ||
    new Set(sourceFields).size !== sourceFields.length ||
    new Set(targetFields).size !== targetFields.length
  )
    return undefined;
  return {
    block: from,
    sourceFields,
    targetFields,
    write: (batch, env) => writeCopies(block, targetFields, batch, env),
  };
}

/** {@link FieldCopies.write}: the batch in calls of at most the Block's bulk size, with the target's field names. */
async function writeCopies(
  block: Block,
  targetFields: readonly string[],
  b: PackedBatch,
  env: RunEnv,
): Promise<Array<[number, ErrorData]>> {
  const conn = env.connections.get(block.connectionId ?? '');
  const started = performance.now();
  const size = env.bulkSize(block);
  const entity = block.entity ?? '';
  const failed: Array<[number, ErrorData]> = [];
  for (let s = 0; s < b.rows; s += size) {
    if (env.signal.aborted) break;
    const end = Math.min(b.rows, s + size);
    let results: WriteResult[];
    try {
      if (!conn) throw new Error(`connection ${block.connectionId ?? ''} is not open`);
      const part = { ...slicePacked(b, s, end), fields: targetFields };
      results = await env.retrying(block, () => conn.writePacked('Create', entity, part, { signal: env.signal }));
    } catch (e) {
      // Cancelled while writing: the rows refused so far are answered; the run does not count the batch.
      if (env.signal.aborted) break;
      if (isRunFatal(e)) throw e;
      const error = batchFailed(block, 'Create', end - s, e);
      for (let r = s; r < end; r++) failed.push([r, error]);
      continue;
    }
    // Rows refused with one error object (a constraint's refusals, say) share one ErrorData.
    let last: { error: RecordError; data: ErrorData } | undefined;
    for (let k = 0; k < results.length; k++) {
      const r = results[k] as WriteResult;
      if (r.ok) continue;
      if (last?.error !== r.error) last = { error: r.error, data: refused(block, r.error) };
      failed.push([s + k, last.data]);
    }
  }
  env.stats.block(block, b.rows, performance.now() - started);
  return failed;
}

/** Whether a write Block writes in bulk: the Block allows it and the entity's Action supports it. */
export function writesInBulk(block: Block, entity: EntityMetadata | undefined): boolean {
  if (block.useBulk === false || !isWriteType(block.blockType)) return false;
  return entity?.actions.find((a) => a.action === block.blockType)?.supportsBulk ?? false;
}

/** The lookup conditions that find the record to write: the `=` ones. */
export function keyConditions(block: Block): LookupCondition[] {
  return (block.lookupConditions ?? []).filter((c) => c.comparisonOperator === '=');
}

/** A write's formulas: the mappings (by targetField), then one per key condition (`key.Field`). */
export function writeFormulas(block: Block, keys: readonly LookupCondition[]): Array<[string, string]> {
  return [
    ...(block.fieldMappings ?? []).map((m): [string, string] => [m.targetField, m.targetFormula]),
    ...keys.map((c): [string, string] => [`key.${c.fieldName}`, c.compareValue]),
  ];
}

/** Binds a write Block (Create, Update, UpdateInsert, Upsert, Delete): its formulas in one program, bulk per its entity's Action. */
export function writeSpec(block: Block, cx: BindContext): Omit<WriteStepSpec, 'action'> {
  const entity = entityOf(block, cx.metadata);
  const keys = keyConditions(block);
  return {
    block,
    formulas: cx.compile(block, writeFormulas(block, keys)),
    targetFields: (block.fieldMappings ?? []).map((m) => m.targetField),
    keyFields: keys.map((c) => c.fieldName),
    bulk: writesInBulk(block, entity),
  };
}

/** Create, CreateWith: a warning for each required field of the entity that has no mapping and no default. */
export function checkRequiredMappings(block: Block, entity: EntityMetadata, cx: CheckContext): void {
  const mapped = new Set((block.fieldMappings ?? []).map((m) => m.targetField));
  for (const f of entity.fields) {
    if (f.requiredInActionInput && !f.hasDefault && !mapped.has(f.fullName))
      cx.warning(
        'MAP_REQUIRED_FIELD_MISSING',
        `${block.name}: ${entity.fullName}.${f.fullName} is required and has no mapping.`,
      );
  }
}

/** Update, UpdateInsert, Delete, UpdateWith: the record is found by lookup conditions or the entity's primary key. */
export function checkKeyed(block: Block, cx: CheckContext, entity: EntityMetadata | undefined): void {
  if (entity && !block.lookupConditions?.length && !entity.fields.some((f) => f.isPrimaryKey)) {
    cx.error(
      'MAP_FIELD_NOT_FOUND',
      `${block.name}: ${block.blockType} needs lookup conditions or a primary key on ${entity.fullName}.`,
    );
  }
}
