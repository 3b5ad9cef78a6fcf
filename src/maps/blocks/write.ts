/**
 * What every write Block shares: evaluate the field mappings (and key conditions) for the batch in
 * one sandbox call, write the records in bulk calls of at most the batch size (or one by one when
 * the Block does not write in bulk, so its output can be read), and turn each refused record into
 * a record error.
 */
import type { ConnectorRecord, WriteAction } from '../../connectors/sdk.js';
import { isFerryError, toErrorData, type ErrorData } from '../../errors/ferry-error.js';
import type { Block } from '../../protocol/map.js';
import type { CompiledFormulas } from '../formula/evaluator.js';
import { clampBatch } from '../runtime/batching.js';
import type { Item, Step } from '../runtime/context.js';
import { evaluateOrTake } from '../runtime/formulas.js';

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
  return {
    block,
    leading: formulas,
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
      const size = bulk && conn ? clampBatch(block.bulkCountPerOperation ?? env.batchSize, conn.bulkLimit) : 1;
      const opts = keyFields.length ? { keyFields: [...keyFields], signal: env.signal } : { signal: env.signal };
      for (let s = 0; s < records.length; s += size) {
        if (env.signal.aborted) break;
        const part = records.slice(s, s + size);
        let results;
        try {
          if (!conn) throw new Error(`connection ${block.connectionId ?? ''} is not open`);
          results = await conn.write(action, entity, part, opts);
        } catch (e) {
          // Cancelled while writing: the batch is not checkpointed and is read again next run, so its records did not fail.
          if (env.signal.aborted) throw e;
          const cause: ErrorData | { message: string } = isFerryError(e) ? toErrorData(e) : { message: e instanceof Error ? e.message : String(e) };
          for (let k = 0; k < part.length; k++) {
            env.fail(ready[s + k] as Item, block, { code: 'RUN_BATCH_FAILED', kind: 'transient', message: block.onErrorMessage ?? `${block.name}: the ${action} of ${part.length} records in ${entity} failed: ${cause.message}`, details: { blockId: block.blockId, cause } });
          }
          continue;
        }
        results.forEach((r, k) => {
          const item = ready[s + k] as Item;
          if (r.ok) {
            if (!bulk) item.ctx[block.name] = { ...(part[k] as ConnectorRecord), ...(r.key ?? {}) };
            return;
          }
          env.fail(item, block, {
            code: 'RUN_WRITE_FAILED',
            kind: 'config',
            message: block.onErrorMessage ?? `${block.name}: ${entity} refused the record: ${r.error.message}`,
            details: { blockId: block.blockId, recordError: r.error },
          });
        });
      }
      return items.filter((i) => !i.state.failed);
    },
  };
}
