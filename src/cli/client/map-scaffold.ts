/**
 * The Map `ferry maps new` scaffolds: a Query of the source entity and one write Block into the
 * target entity, each target field filled from the source field of the same name, names compared
 * ignoring case and `_` (`First_Name` fills `firstname`). What could not be matched is answered
 * beside the model, so the person knows what is left to map by hand.
 *
 *   source fields ─┐
 *                  ├─ matchFields ─▶ pairs ─▶ Query ─▶ write Block (fieldMappings Query.Field)
 *   target fields ─┘                └──────▶ unused source fields, required target fields unmapped
 */
import { randomUUID } from 'node:crypto';
import { DEFAULT_ACTION, MAP_MODEL_VERSION, MAX_BLOCK_NAME, type Block, type MapModel } from '../../protocol/map.js';

/** The write Blocks a scaffold can end with. */
export const SCAFFOLD_ACTIONS = ['Create', 'Update', 'Upsert', 'UpdateInsert', 'Delete'] as const;
export type ScaffoldAction = (typeof SCAFFOLD_ACTIONS)[number];

/** What the matcher reads of a field (the API's Field model has more). */
export interface FieldInfo {
  fullName: string;
  isPrimaryKey: boolean;
  requiredInActionInput: boolean;
  hasDefault: boolean;
  usedInActionInput: boolean;
  usedInQuerySelect: boolean;
}

/** An entity as the scaffold needs it: its fullName and fields. */
export interface EntityInfo {
  fullName: string;
  fields: readonly FieldInfo[];
}

export interface FieldPair {
  source: string;
  target: string;
}

export interface FieldMatch {
  /** Target field ← source field, in the target entity's field order. */
  pairs: FieldPair[];
  /** Source fields no target field takes. */
  unusedSource: string[];
  /** Target fields the write needs that no source field fills. */
  unmappedRequired: string[];
}

/** The key two names match by: any case, underscores left out. */
export function matchKey(name: string): string {
  return name.replace(/_/g, '').toLowerCase();
}

/**
 * Each target field with the source field of the same {@link matchKey}; of several, the one spelt
 * exactly the same, then the same ignoring case, then the first. `candidates` are the target fields
 * the write may fill; `required` those it needs.
 */
export function matchFields(
  source: readonly FieldInfo[],
  candidates: readonly FieldInfo[],
  required: readonly FieldInfo[],
): FieldMatch {
  const readable = source.filter((f) => f.usedInQuerySelect);
  const byKey = new Map<string, FieldInfo[]>();
  for (const f of readable) byKey.set(matchKey(f.fullName), [...(byKey.get(matchKey(f.fullName)) ?? []), f]);
  const pairs: FieldPair[] = [];
  for (const t of candidates) {
    const same = byKey.get(matchKey(t.fullName)) ?? [];
    const pick =
      same.find((s) => s.fullName === t.fullName) ??
      same.find((s) => s.fullName.toLowerCase() === t.fullName.toLowerCase()) ??
      same[0];
    if (pick) pairs.push({ source: pick.fullName, target: t.fullName });
  }
  const used = new Set(pairs.map((p) => p.source));
  const filled = new Set(pairs.map((p) => p.target));
  return {
    pairs,
    unusedSource: readable.filter((f) => !used.has(f.fullName)).map((f) => f.fullName),
    unmappedRequired: required.filter((f) => !filled.has(f.fullName)).map((f) => f.fullName),
  };
}

/**
 * The target fields a write of `action` fills, and those it needs: a Create needs the fields the
 * datastore requires and does not default; Update and Delete find the record by its primary key,
 * so they need that; Upsert needs both; a Delete fills only the key.
 */
export function targetFieldsOf(
  action: ScaffoldAction,
  target: EntityInfo,
): { candidates: FieldInfo[]; required: FieldInfo[] } {
  const key = target.fields.filter((f) => f.isPrimaryKey);
  const createNeeds = target.fields.filter((f) => f.requiredInActionInput && !f.hasDefault);
  const writable = target.fields.filter((f) => f.usedInActionInput || f.isPrimaryKey);
  switch (action) {
    case 'Create':
      return { candidates: writable, required: createNeeds };
    case 'Update':
      return { candidates: writable, required: key };
    case 'Upsert':
    case 'UpdateInsert':
      return { candidates: writable, required: [...key, ...createNeeds.filter((f) => !f.isPrimaryKey)] };
    case 'Delete':
      return { candidates: key, required: key };
  }
}

/** A Block name made of `prefix` and `entity`: letters, digits and `_` only, at most the longest a name may be. */
export function blockName(prefix: string, entity: string): string {
  return `${prefix}_${entity.replace(/[^A-Za-z0-9_]+/g, '_')}`.slice(0, MAX_BLOCK_NAME);
}

/** `Block.Field` as a formula reads it; a field part with other characters goes in brackets. */
export function fieldRef(block: string, field: string): string {
  return `${block}.${/^[A-Za-z0-9_]+$/.test(field) ? field : `[${field.replace(/]/g, ']]')}]`}`;
}

export interface ScaffoldInput {
  name: string;
  description?: string | undefined;
  action: ScaffoldAction;
  /** The Connection's name for the action (its supportedactions), when it has one. */
  operationName?: string | undefined;
  source: { connectionId: string; entity: EntityInfo };
  target: { connectionId: string; entity: EntityInfo };
}

export interface Scaffold extends FieldMatch {
  model: MapModel;
  /** What the person must still do that no field list says (a keyed write on an entity without a primary key). */
  notes: string[];
}

/** The Map model of a Query of the source entity and one write of `action` into the target entity. */
export function scaffoldMap(input: ScaffoldInput): Scaffold {
  const { source, target, action } = input;
  const { candidates, required } = targetFieldsOf(action, target.entity);
  const match = matchFields(source.entity.fields, candidates, required);
  const query = blockName('Query', source.entity.fullName);
  const write = blockName(action, target.entity.fullName);
  const notes: string[] = [];
  if (action !== 'Create' && !target.entity.fields.some((f) => f.isPrimaryKey)) {
    const entity = target.entity.fullName;
    notes.push(`${entity} has no primary key: give the ${write} Block lookupConditions that find the record`);
  }
  const blocks: Block[] = [
    {
      blockId: randomUUID(),
      name: query,
      blockType: 'Query',
      action: 'Query',
      connectionId: source.connectionId,
      entity: source.entity.fullName,
    },
    {
      blockId: randomUUID(),
      name: write,
      blockType: action,
      action: DEFAULT_ACTION[action],
      ...(input.operationName ? { operationName: input.operationName } : {}),
      connectionId: target.connectionId,
      entity: target.entity.fullName,
      fieldMappings: match.pairs.map((p) => ({ targetField: p.target, targetFormula: fieldRef(query, p.source) })),
    },
  ];
  const model: MapModel = {
    version: MAP_MODEL_VERSION,
    name: input.name,
    ...(input.description ? { description: input.description } : {}),
    blocks,
  };
  return { model, notes, ...match };
}
