import { action, type Action, type EntityMetadata, type Field } from '../../src/connectors/sdk.js';
import type { CsvEntity } from './entity.js';

/** What every csv entity supports: Query, Create, and the keyed actions. */
export const CSV_ACTIONS: Action[] = [
  action('Query'),
  action('Create'),
  action('Update'),
  action('UpdateInsert'),
  action('Upsert'),
  action('Delete'),
];

/** The SDK metadata of a described file. */
export function entityMetadata(e: CsvEntity): EntityMetadata {
  const fields: Field[] = e.columns.map((c, i) => ({
    name: c.name,
    fullName: c.fullName,
    originalName: c.name,
    description: c.description,
    isPrimaryKey: c.isPrimaryKey,
    nullable: !c.isPrimaryKey,
    size: c.size,
    ordinal: i + 1,
    propertyType: c.type,
    nativeType: e.inferred ? `${c.type} (inferred)` : c.type,
    hasDefault: false,
    requiredInActionInput: c.isPrimaryKey,
    usedInLookupCondition: true,
    usedInActionInput: true,
    usedInQueryConstraint: true,
    usedInQuerySelect: true,
  }));
  return {
    id: e.fullName,
    name: e.name,
    fullName: e.fullName,
    originalName: e.fileName,
    description: e.description,
    isHidden: false,
    actions: CSV_ACTIONS,
    fields,
    relationships: [],
  };
}
