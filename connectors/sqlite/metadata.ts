import { action, foreignKeyRelationships, type Action, type ConnectionMetadata, type EntityMetadata, type Relationship } from '../../src/connectors/sdk.js';
import type { SqliteTable } from './catalogue.js';

const TABLE_ACTIONS: Action[] = [action('Query', { supportsRelations: true }), action('Create'), action('Update'), action('UpdateInsert'), action('Upsert'), action('Delete')];
const VIEW_ACTIONS: Action[] = [action('Query')];
const CONNECTION_ACTIONS: Action[] = [...TABLE_ACTIONS, action('NativeQuery', { supportsBulk: false })];

/** The SDK metadata of the catalogue. */
export function connectionMetadata(tables: SqliteTable[]): ConnectionMetadata {
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
    id: t.fullName,
    name: t.name,
    fullName: t.fullName,
    originalName: t.name,
    description: t.isView ? 'view' : '',
    isHidden: false,
    actions: t.isView ? VIEW_ACTIONS : TABLE_ACTIONS,
    fields: t.columns.map((c, i) => ({
      name: c.name,
      fullName: c.fullName,
      originalName: c.name,
      description: '',
      isPrimaryKey: c.pk > 0,
      nullable: !c.notNull,
      size: c.size,
      ...(c.scale !== undefined ? { scale: c.scale } : {}),
      ordinal: i + 1,
      propertyType: c.type,
      nativeType: c.declared,
      hasDefault: c.hasDefault,
      requiredInActionInput: c.notNull && !c.hasDefault,
      usedInLookupCondition: true,
      usedInActionInput: !c.generated && !t.isView,
      usedInQueryConstraint: true,
      usedInQuerySelect: true,
    })),
    relationships: rels.get(t.fullName) ?? [],
  }));
  return { entities, actions: CONNECTION_ACTIONS };
}
