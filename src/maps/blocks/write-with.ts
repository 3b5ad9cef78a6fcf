/**
 * What CreateWith and UpdateWith share: write the parent record (Create, or Update found by the
 * lookup conditions / primary key), bind it (with the key the Connector returned) to the Block's
 * name, then write its children. For each child write, one child record of the relationship's
 * related entity per record of the `source` collection, mapped by the child formulas (which read
 * that record as `name.Field`), with the relationship's `relatedProperties` set from the parent's
 * `thisProperties`. Children are written in bulk (Create for CreateWith, Upsert for UpdateWith).
 *
 * There is no transaction across the calls: a failing child fails the source record, and the
 * parent and the children already written stay written.
 */
import type { HostConnection } from '../../connectors/connection.js';
import type { ConnectorRecord, Relationship, WriteAction } from '../../connectors/sdk.js';
import { isFerryError, toErrorData, type ErrorData } from '../../errors/ferry-error.js';
import type { Block } from '../../protocol/map.js';
import type { CompiledFormulas } from '../formula/evaluator.js';
import { clampBatch } from '../runtime/batching.js';
import { forkItem, type Item, type RunEnv, type Step } from '../runtime/context.js';
import { evaluateItems } from '../runtime/formulas.js';

export interface ChildWriteSpec {
  relationship: Relationship;
  /** Key of the source collection in Item.results. */
  collection: string;
  bindAs: string;
  formulas: CompiledFormulas;
  targetFields: readonly string[];
}

export interface WriteWithSpec {
  block: Block;
  parentAction: 'Create' | 'Update';
  childAction: 'Create' | 'Upsert';
  /** Mapping formulas first, then one per key field. */
  formulas: CompiledFormulas;
  targetFields: readonly string[];
  keyFields: readonly string[];
  children: readonly ChildWriteSpec[];
}

type Outcome = { ok: true; key?: Readonly<ConnectorRecord> | undefined } | { ok: false; error: ErrorData };

/** Writes records in calls of at most `size`; one outcome per record, in order. */
async function writeAll(block: Block, conn: HostConnection | undefined, action: WriteAction, entity: string, records: readonly ConnectorRecord[], keyFields: readonly string[], env: RunEnv): Promise<Outcome[]> {
  const out: Outcome[] = [];
  const size = conn ? clampBatch(block.bulkCountPerOperation ?? env.batchSize, conn.bulkLimit) : 1;
  const opts = keyFields.length ? { keyFields: [...keyFields], signal: env.signal } : { signal: env.signal };
  for (let s = 0; s < records.length; s += size) {
    const part = records.slice(s, s + size);
    try {
      if (!conn) throw new Error(`connection ${block.connectionId ?? ''} is not open`);
      for (const r of await conn.write(action, entity, part, opts)) {
        out.push(
          r.ok
            ? { ok: true, key: r.key }
            : { ok: false, error: { code: 'RUN_WRITE_FAILED', kind: 'config', message: block.onErrorMessage ?? `${block.name}: ${entity} refused the record: ${r.error.message}`, details: { blockId: block.blockId, entity, recordError: r.error } } },
        );
      }
    } catch (e) {
      // Cancelled while writing: the batch is not checkpointed and is read again next run, so its records did not fail.
      if (env.signal.aborted) throw e;
      const cause = isFerryError(e) ? toErrorData(e) : { message: e instanceof Error ? e.message : String(e) };
      const error: ErrorData = { code: 'RUN_BATCH_FAILED', kind: 'transient', message: block.onErrorMessage ?? `${block.name}: the ${action} of ${part.length} records in ${entity} failed: ${cause.message}`, details: { blockId: block.blockId, entity, cause } };
      for (let k = 0; k < part.length; k++) out.push({ ok: false, error });
    }
  }
  return out;
}

export function writeWithStep(spec: WriteWithSpec): Step {
  const { block, formulas, targetFields, keyFields } = spec;
  return {
    block,
    async run(items, env) {
      const conn = env.connections.get(block.connectionId ?? '');
      const { values, errors } = await evaluateItems(formulas, items, env);
      const ready: Item[] = [];
      const records: ConnectorRecord[] = [];
      items.forEach((item, i) => {
        const err = errors.get(i);
        if (err) return env.fail(item, block, err);
        const v = values[i] ?? [];
        const rec: ConnectorRecord = {};
        targetFields.forEach((f, j) => (rec[f] = v[j] ?? null));
        keyFields.forEach((f, k) => (rec[f] = v[targetFields.length + k] ?? null));
        ready.push(item);
        records.push(rec);
      });
      const outcomes = await writeAll(block, conn, spec.parentAction, block.entity ?? '', records, keyFields, env);
      const parents: Item[] = [];
      outcomes.forEach((o, k) => {
        const item = ready[k] as Item;
        if (!o.ok) return env.fail(item, block, o.error);
        item.ctx[block.name] = { ...(records[k] as ConnectorRecord), ...(o.key ?? {}) };
        parents.push(item);
      });
      for (const child of spec.children) await writeChildren(spec, child, parents, conn, env);
      return items.filter((i) => !i.state.failed);
    },
  };
}

async function writeChildren(spec: WriteWithSpec, child: ChildWriteSpec, parents: readonly Item[], conn: HostConnection | undefined, env: RunEnv): Promise<void> {
  const { block } = spec;
  const rel = child.relationship;
  const forks: Item[] = [];
  for (const p of parents) {
    if (p.state.failed) continue;
    for (const r of p.results.get(child.collection) ?? []) {
      const f = forkItem(p);
      f.ctx[child.bindAs] = r;
      forks.push(f);
    }
  }
  for (let s = 0; s < forks.length; s += env.batchSize) {
    const part = forks.slice(s, s + env.batchSize);
    const { values, errors } = await evaluateItems(child.formulas, part, env);
    const ready: Item[] = [];
    const records: ConnectorRecord[] = [];
    part.forEach((f, i) => {
      const err = errors.get(i);
      if (err) return env.fail(f, block, err);
      const parent = f.ctx[block.name] ?? {};
      const rec: ConnectorRecord = {};
      child.targetFields.forEach((t, j) => (rec[t] = values[i]?.[j] ?? null));
      for (let k = 0; k < rel.relatedProperties.length; k++) {
        const v = parent[rel.thisProperties[k] as string] ?? null;
        if (v === null) {
          return env.fail(f, block, {
            code: 'RUN_PARENT_KEY_MISSING',
            kind: 'config',
            message: `${block.name}: the written ${block.entity ?? ''} record has no value for ${rel.thisProperties[k] ?? ''}, which the children of ${rel.fullName} refer to; map it.`,
            details: { blockId: block.blockId, relationship: rel.fullName, field: rel.thisProperties[k] },
          });
        }
        rec[rel.relatedProperties[k] as string] = v;
      }
      ready.push(f);
      records.push(rec);
    });
    const outcomes = await writeAll(block, conn, spec.childAction, rel.relatedEntityFullName, records, [], env);
    outcomes.forEach((o, k) => {
      if (!o.ok) env.fail(ready[k] as Item, block, o.error);
    });
  }
}
