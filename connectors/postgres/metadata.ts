import { action, foreignKeyRelationships, type Action, type ConnectionMetadata, type EntityMetadata, type Relationship } from '../../src/connectors/sdk.js';
import type { PgTable } from './catalogue.js';

const TABLE_ACTIONS: Action[] = [action('Query', { supportsRelations: true }), action('Create'), action('Update'), action('UpdateInsert'), action('Upsert'), action('Delete')];
const VIEW_ACTIONS: Action[] = [action('Query')];
const CONNECTION_ACTIONS: Action[] = [...TABLE_ACTIONS, action('NativeQuery', { supportsBulk: false })];

export function connectionMetadata(tables: PgTable[]): ConnectionMetadata {
  const rels = new Map<string, Relationship[]>();
  const add = (entity: string, r: Relationship): void => void rels.set(entity, [...(rels.get(entity) ?? []), r]);
  for (const t of tables) {
    for (const fk of t.foreignKeys) {
      const { child, parent } = foreignKeyRelationships(fk);
      add(fk.entity, child);
      add(fk.relatedEntity, parent);
    }
  }
  const entities: EntityMetadata[] = tables.map((t) => ({
    id: String(t.oid),
    name: t.schema === 'public' ? t.name : `${t.schema}.${t.name}`,
    fullName: t.fullName,
    originalName: `${t.schema}.${t.name}`,
    description: t.description,
    isHidden: false,
    actions: t.kind === 'view' ? VIEW_ACTIONS : TABLE_ACTIONS,
    fields: t.columns.map((c, i) => ({
      name: c.name,
      fullName: c.fullName,
      originalName: c.name,
      description: c.description,
      isPrimaryKey: c.pk > 0,
      nullable: !c.notNull,
      size: c.size,
      ...(c.scale !== undefined ? { scale: c.scale } : {}),
      ordinal: i + 1,
      propertyType: c.type,
      nativeType: c.sqlType,
      hasDefault: c.hasDefault,
      requiredInActionInput: c.notNull && !c.hasDefault,
      usedInLookupCondition: true,
      usedInActionInput: !c.readOnly && t.kind === 'table',
      usedInQueryConstraint: true,
      usedInQuerySelect: true,
    })),
    relationships: rels.get(t.fullName) ?? [],
  }));
  return { entities, actions: CONNECTION_ACTIONS };
}
