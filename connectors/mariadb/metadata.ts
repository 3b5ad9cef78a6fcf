import {
  relationshipsByEntity,
  SQL_CONNECTION_ACTIONS,
  SQL_TABLE_ACTIONS,
  SQL_VIEW_ACTIONS,
  type ConnectionMetadata,
  type EntityMetadata,
} from '../../src/connectors/sdk.js';
import type { MariaTable } from './catalogue.js';

export function connectionMetadata(tables: MariaTable[], database: string): ConnectionMetadata {
  const rels = relationshipsByEntity(tables.flatMap((t) => t.foreignKeys));
  const entities: EntityMetadata[] = tables.map((t) => ({
    id: `${database}.${t.name}`,
    name: t.name,
    fullName: t.fullName,
    originalName: t.name,
    description: t.description,
    isHidden: false,
    actions: t.kind === 'view' ? [...SQL_VIEW_ACTIONS] : [...SQL_TABLE_ACTIONS],
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
      nativeType: c.columnType,
      hasDefault: c.hasDefault,
      requiredInActionInput: c.notNull && !c.hasDefault,
      usedInLookupCondition: true,
      usedInActionInput: !c.readOnly && t.kind === 'table',
      usedInQueryConstraint: true,
      usedInQuerySelect: true,
    })),
    relationships: rels.get(t.fullName) ?? [],
  }));
  return { entities, actions: [...SQL_CONNECTION_ACTIONS] };
}
