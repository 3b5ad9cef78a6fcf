/**
 * The write of a generated copy plan (a Replication entity: solutions/replicate-entity.ts): each
 * source record goes to the target as it was read, every field to the target field of the same
 * name, by key (Upsert) or as a new record (Create), one call per batch — with the batch's
 * checkpoint when the run commits one in the target (runtime/run.ts). A record the target refuses fails
 * alone (RUN_WRITE_FAILED, naming the target and the record's key). A call that fails as a whole
 * ends the run: a datastore that went away was tried again first (target-retry.ts), and what is
 * left is the entity's failure, not a record's.
 *
 * It evaluates nothing, so the run starts no formula engine for it (RunPlan.noFormulas); in bulk it
 * also writes packed batches as they are read (runtime/packed-copy.ts: `exact`, no row needs the records way).
 */
import type { ConnectorRecord, PackedBatch, RecordError, WriteAction, WriteResult } from '../../connectors/sdk.js';
import { packedRecord } from '../../connectors/sdk.js';
import type { ErrorData } from '../../errors/ferry-error.js';
import type { Block } from '../../protocol/map.js';
import { committed } from './write.js';
import type { RunEnv, Step } from '../runtime/context.js';

export interface CopySpec {
  /** The write Block of the plan (its connectionId names the target in the run's connections). */
  readonly block: Block;
  /** The starter's name: the Block whose records are copied. */
  readonly from: string;
  readonly action: Extract<WriteAction, 'Upsert' | 'Create'>;
  /** The target entity's fullName. */
  readonly target: string;
  /** The source's fields, in its order: what a packed batch carries. */
  readonly fields: readonly string[];
  /** The fields a refused record is named by in its error: the target's key, else the source's. */
  readonly keyFields: readonly string[];
  /** The target's action writes in bulk: the run may move packed batches. */
  readonly bulk: boolean;
}

export function copyStep(spec: CopySpec): Step {
  const { block, action, target, bulk } = spec;
  return {
    block,
    bulkWrite: bulk,
    ...(bulk
      ? {
          fieldCopies: {
            block: spec.from,
            sourceFields: spec.fields,
            targetFields: spec.fields,
            exact: true,
            write: (b: PackedBatch, env: RunEnv) => writePacked(spec, b, env),
          },
        }
      : {}),
    async run(items, env) {
      const conn = env.connections.get(block.connectionId ?? '');
      if (!conn) throw new Error(`connection ${block.connectionId ?? ''} is not open`);
      const records = items.map((i) => i.state.source);
      const checkpoint = env.checkpointFor?.(block);
      const signal = env.signal;
      const results = await env.retrying(
        block,
        (): Promise<WriteResult[]> =>
          conn.write(action, target, records, checkpoint ? { checkpoint, signal } : { signal }),
        // A try that failed after its commit is known by the checkpoint it committed.
        checkpoint ? () => committed(conn, checkpoint, records.length, signal) : undefined,
      );
      let refused = 0;
      for (let k = 0; k < results.length; k++) {
        const r = results[k] as WriteResult;
        if (r.ok) continue;
        refused++;
        env.fail(items[k] as (typeof items)[number], block, refusedCopy(spec, r.error, records[k] ?? {}));
      }
      return refused ? items.filter((i) => !i.state.failed) : items;
    },
  };
}

/** A packed batch in one call; the rows the target refused, with their errors. */
async function writePacked(spec: CopySpec, b: PackedBatch, env: RunEnv): Promise<Array<[number, ErrorData]>> {
  const { block, action, target } = spec;
  const conn = env.connections.get(block.connectionId ?? '');
  if (!conn) throw new Error(`connection ${block.connectionId ?? ''} is not open`);
  const t0 = performance.now();
  const results = await env.retrying(block, () => conn.writePacked(action, target, b, { signal: env.signal }));
  const failed: Array<[number, ErrorData]> = [];
  for (let k = 0; k < results.length; k++) {
    const r = results[k] as WriteResult;
    if (!r.ok) failed.push([k, refusedCopy(spec, r.error, packedRecord(b, k))]);
  }
  env.stats.block(block, b.rows, performance.now() - t0);
  return failed;
}

/** The error of a record the target refused: the target, the datastore's reason and the record's key. */
function refusedCopy(spec: CopySpec, error: RecordError, rec: ConnectorRecord): ErrorData {
  const { keyFields, target } = spec;
  const key = keyFields.length ? Object.fromEntries(keyFields.map((f) => [f, rec[f] ?? null])) : undefined;
  return {
    code: 'RUN_WRITE_FAILED',
    kind: 'config',
    message: `${target} refused the record: ${error.message}`,
    details: { target, recordError: error, ...(key ? { key } : {}) },
  };
}
