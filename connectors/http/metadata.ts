import { action, type Action, type ConnectionMetadata, type EntityMetadata } from '../../src/connectors/sdk.js';
import type { Definition, EntityDef } from './definition.js';
import { supports } from './write.js';

/**
 * The entities of the definition as SDK metadata: fields typed as declared, the key as the primary
 * key, and the actions the definition gives each entity: Query where it has a read path, a write
 * action where its request is declared (Update/Insert where both update, per record, and create are).
 * Filters are evaluated by the connector, so every field can be a query constraint.
 */
export function connectionMetadata(def: Definition): ConnectionMetadata {
  const entities = def.entities.map(entityMetadata);
  const seen = new Set<string>();
  const actions: Action[] = [];
  for (const e of entities)
    for (const a of e.actions)
      if (!seen.has(a.action)) {
        seen.add(a.action);
        actions.push(a);
      }
  return { entities, actions };
}

function entityActions(e: EntityDef): Action[] {
  const out: Action[] = [];
  if (e.readPath) out.push(action('Query'));
  if (supports(e, 'Create')) out.push(action('Create'));
  if (supports(e, 'Update')) out.push(action('Update'));
  if (supports(e, 'UpdateInsert')) out.push(action('UpdateInsert'));
  if (supports(e, 'Upsert')) out.push(action('Upsert'));
  if (supports(e, 'Delete')) out.push(action('Delete'));
  return out;
}

function entityMetadata(e: EntityDef): EntityMetadata {
  const writable = Boolean(e.create ?? e.update ?? e.upsert);
  return {
    id: e.fullName,
    name: e.name,
    fullName: e.fullName,
    originalName: e.readPath ?? e.name,
    description: e.description,
    isHidden: false,
    actions: entityActions(e),
    fields: e.fields.map((f, i) => ({
      name: f.name,
      fullName: f.fullName,
      originalName: f.path.join('.'),
      description: f.description,
      isPrimaryKey: f.pk > 0,
      nullable: f.pk === 0,
      size: 0,
      ordinal: i + 1,
      propertyType: f.type,
      nativeType: '',
      hasDefault: f.readOnly,
      requiredInActionInput: false,
      usedInLookupCondition: f.pk > 0,
      usedInActionInput: writable && !f.readOnly,
      usedInQueryConstraint: true,
      usedInQuerySelect: true,
    })),
    relationships: [],
  };
}
