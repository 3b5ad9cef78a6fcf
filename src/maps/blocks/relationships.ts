/**
 * Query relationships: the child records of each starter record, read with its batch. For each
 * relationship the Query names, the related entity is read once per batch (in chunks of parent
 * keys) with the records whose `relatedProperties` equal a parent's `thisProperties`; each item
 * gets its children under `Query.relationship` (For Each Child, CreateWith / UpdateWith sources).
 * Keys are compared as text, so a csv "1" matches a database 1. A parent with a null key has none.
 */
import type { HostConnection } from '../../connectors/connection.js';
import type { ConnectorRecord, EntityMetadata, Relationship, Value } from '../../connectors/sdk.js';
import type { Filter } from '../../protocol/filter.js';
import type { Block } from '../../protocol/map.js';
import { connectionOf, findEntity, findRelationship } from '../metadata.js';
import { slices } from '../runtime/batching.js';
import { childrenKey, type Item, type Source } from '../runtime/context.js';
import type { CheckContext } from './registry.js';

/** Parent keys per query of the related entity. */
const KEYS_PER_QUERY = 500;

const keyOf = (
  rec: ConnectorRecord | null | undefined,
  fields: readonly string[],
): { text: string; values: Value[] } | null => {
  const values = fields.map((f) => rec?.[f] ?? null);
  return values.some((v) => v === null) ? null : { text: JSON.stringify(values.map(String)), values };
};

/** Reads the children of every item's starter record (bound to `block.name`) for each relationship; throws when a read fails. */
export async function readChildren(
  block: Block,
  conn: HostConnection,
  relationships: readonly Relationship[],
  items: readonly Item[],
  signal: AbortSignal,
): Promise<void> {
  for (const rel of relationships) {
    const key = childrenKey(block.name, rel.fullName);
    const parents = new Map<string, { values: Value[]; lists: ConnectorRecord[][] }>();
    for (const item of items) {
      const list: ConnectorRecord[] = [];
      (item.results ??= new Map()).set(key, list);
      const k = keyOf(item.ctx[block.name], rel.thisProperties);
      if (!k) continue;
      const p = parents.get(k.text);
      if (p) p.lists.push(list);
      else parents.set(k.text, { values: k.values, lists: [list] });
    }
    const fields = rel.relatedProperties;
    for (const part of slices([...parents.values()], KEYS_PER_QUERY)) {
      const filter: Filter =
        fields.length === 1
          ? { op: 'in', field: fields[0] as string, values: part.map((p) => p.values[0] ?? null) }
          : {
              op: 'or',
              args: part.map((p) => ({
                op: 'and' as const,
                args: fields.map((f, i): Filter => ({ op: '=', field: f, value: p.values[i] ?? null })),
              })),
            };
      for await (const batch of conn.query(rel.relatedEntityFullName, filter, { batchSize: conn.bulkLimit, signal })) {
        for (const r of batch) {
          const k = keyOf(r, fields);
          for (const list of (k && parents.get(k.text)?.lists) || []) list.push(r);
        }
      }
    }
  }
}

/** A starter's relationships as its Source reads them: nothing when it reads none. */
export function childrenOf(block: Block, relationships: readonly Relationship[]): Pick<Source, 'children'> {
  if (relationships.length === 0) return {};
  return { children: (conn, items, signal) => readChildren(block, conn, relationships, items, signal) };
}

/** Query, Fetch: each relationship the Block reads exists and leads to an entity of the Connection; For Each Child and child writes find it by `Query.relationship`. */
export function checkRelationships(block: Block, entity: EntityMetadata, cx: CheckContext): void {
  for (const r of block.relationships ?? []) {
    const rel = findRelationship(entity, r);
    const related = rel ? findEntity(connectionOf(block, cx.metadata), rel.relatedEntityFullName) : undefined;
    if (!rel || !related)
      cx.error('MAP_RELATIONSHIP_NOT_FOUND', `${block.name}: ${entity.fullName} has no relationship ${r}.`);
    else cx.children.set(childrenKey(block.name, rel.fullName), related);
  }
}
