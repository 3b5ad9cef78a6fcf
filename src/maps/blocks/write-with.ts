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
import type { ConnectorRecord, EntityMetadata, Relationship, WriteAction } from '../../connectors/sdk.js';
import { isFerryError, toErrorData, type ErrorData } from '../../errors/ferry-error.js';
import type { Block, LookupCondition } from '../../protocol/map.js';
import type { CompiledFormulas } from '../formula/evaluator.js';
import { didYouMean } from '../../util/closest-name.js';
import { connectionOf, entityOf, findEntity, findRelationship } from '../metadata.js';
import { childrenKey, forkItem, type Item, type RunEnv, type Step } from '../runtime/context.js';
import { evaluateItems } from '../runtime/formulas.js';
import type { BindContext, CheckContext } from './registry.js';
import { isRunFatal, writeFormulas } from './write.js';

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
async function writeAll(
  block: Block,
  conn: HostConnection | undefined,
  action: WriteAction,
  entity: string,
  records: readonly ConnectorRecord[],
  keyFields: readonly string[],
  env: RunEnv,
): Promise<Outcome[]> {
  const out: Outcome[] = [];
  const size = env.bulkSize(block);
  const opts = keyFields.length ? { keyFields: [...keyFields], signal: env.signal } : { signal: env.signal };
  for (let s = 0; s < records.length; s += size) {
    const part = records.slice(s, s + size);
    try {
      if (!conn) throw new Error(`connection ${block.connectionId ?? ''} is not open`);
      for (const r of await env.retrying(block, () => conn.write(action, entity, part, opts))) {
        out.push(
          r.ok
            ? { ok: true, key: r.key }
            : {
                ok: false,
                error: {
                  code: 'RUN_WRITE_FAILED',
                  kind: 'config',
                  message: block.onErrorMessage ?? `${block.name}: ${entity} refused the record: ${r.error.message}`,
                  details: { blockId: block.blockId, entity, recordError: r.error },
                },
              },
        );
      }
    } catch (e) {
      // Cancelled while writing: the batch is not checkpointed and is read again next run, so its records did not fail.
      if (env.signal.aborted || isRunFatal(e)) throw e;
      const cause = isFerryError(e) ? toErrorData(e) : { message: e instanceof Error ? e.message : String(e) };
      const error: ErrorData = {
        code: 'RUN_BATCH_FAILED',
        kind: 'transient',
        message:
          block.onErrorMessage ??
          `${block.name}: the ${action} of ${part.length} records in ${entity} failed: ${cause.message}`,
        details: { blockId: block.blockId, entity, cause },
      };
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

async function writeChildren(
  spec: WriteWithSpec,
  child: ChildWriteSpec,
  parents: readonly Item[],
  conn: HostConnection | undefined,
  env: RunEnv,
): Promise<void> {
  const { block } = spec;
  const rel = child.relationship;
  const forks: Item[] = [];
  for (const p of parents) {
    if (p.state.failed) continue;
    for (const r of p.results?.get(child.collection) ?? []) {
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

/** Binds CreateWith / UpdateWith (`keys`: the conditions that find the parent; none for CreateWith): the children's formulas, then the parent's. */
export function writeWithSpec(
  block: Block,
  cx: BindContext,
  keys: readonly LookupCondition[],
): Omit<WriteWithSpec, 'parentAction' | 'childAction'> {
  const entity = entityOf(block, cx.metadata);
  const maps = block.fieldMappings ?? [];
  const children = (block.children ?? []).map((c): ChildWriteSpec => {
    const dot = c.source.indexOf('.');
    return {
      relationship: findRelationship(entity, c.relationship) as Relationship,
      collection:
        dot < 0
          ? c.source
          : childrenKey(
              c.source.slice(0, dot),
              findRelationship(cx.starterEntity, c.source.slice(dot + 1))?.fullName ?? c.source.slice(dot + 1),
            ),
      bindAs: c.name ?? c.source,
      formulas: cx.compile(
        block,
        c.fieldMappings.map((m) => [m.targetField, m.targetFormula]),
      ),
      targetFields: c.fieldMappings.map((m) => m.targetField),
    };
  });
  return {
    block,
    formulas: cx.compile(block, writeFormulas(block, keys)),
    targetFields: maps.map((m) => m.targetField),
    keyFields: keys.map((c) => c.fieldName),
    children,
  };
}

/** The child writes: the relationship, its entity's fields and `childAction`, the source, the child formulas. */
export function checkChildWrites(
  block: Block,
  entity: EntityMetadata,
  cx: CheckContext,
  childAction: 'Create' | 'Upsert',
): void {
  const md = connectionOf(block, cx.metadata);
  for (const c of block.children ?? []) {
    const rel = findRelationship(entity, c.relationship);
    const related = rel ? findEntity(md, rel.relatedEntityFullName) : undefined;
    if (!rel || !related || rel.relationshipType !== 'OneToMany') {
      cx.error(
        'MAP_RELATIONSHIP_NOT_FOUND',
        `${block.name}: ${entity.fullName} has no one-to-many relationship ${c.relationship}.`,
      );
      continue;
    }
    if (!related.actions.some((a) => a.action === childAction))
      cx.error(
        'MAP_ACTION_UNSUPPORTED',
        `${block.name}: the entity ${related.fullName} does not support ${childAction}.`,
      );
    const relatedFields = related.fields.map((f) => f.fullName);
    for (const m of c.fieldMappings) {
      if (!relatedFields.includes(m.targetField))
        cx.error(
          'MAP_FIELD_NOT_FOUND',
          `${block.name}: ${related.fullName} has no field ${m.targetField}${didYouMean(m.targetField, relatedFields)}.`,
        );
    }
    const lookup = cx.scope.get(c.source);
    const sourceFields =
      lookup?.blockType === 'Lookup' ? lookup.fields : cx.children.get(c.source)?.fields.map((f) => f.fullName);
    if (!sourceFields) {
      cx.error(
        'MAP_BLOCK_MISPLACED',
        `${block.name}: the children of ${c.relationship} come from an earlier Lookup or a relationship its Query reads (Query.relationship); ${c.source} is neither.`,
      );
      continue;
    }
    const bindAs = c.name ?? c.source;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(bindAs)) {
      cx.error(
        'MAP_MODEL_INVALID',
        `${block.name}: give the child write of ${c.relationship} a name to read ${c.source} by.`,
      );
      continue;
    }
    const scope = new Map(cx.scope).set(bindAs, { fields: sourceFields, batched: false, blockType: 'Lookup' });
    for (const m of c.fieldMappings)
      cx.formula(`children.${c.relationship}.fieldMappings.${m.targetField}.targetFormula`, m.targetFormula, scope);
  }
}
