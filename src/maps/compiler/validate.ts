/**
 * Validates a Map against its Connections' metadata and returns per-Block results: what the
 * Service's validate endpoint returns, and what `ferry map validate` prints.
 *
 * Walks the Block tree in flow order keeping the scope — which Block names (and their fields) a
 * formula at this point may read — so a formula that reads a later Block, an unknown field or the
 * output of a batched write is reported at the formula's position.
 */
import type { ConnectionMetadata, EntityMetadata, Relationship } from '../../connectors/sdk.js';
import type { ErrorCode } from '../../errors/codes.js';
import { isFerryError } from '../../errors/ferry-error.js';
import { filterFields } from '../../protocol/filter.js';
import { BLOCK_TYPES, LOOP_TYPES, MESSAGE_STARTERS, MapModel, STARTER_TYPES, isWriteType, type Block, type BlockType } from '../../protocol/map.js';
import { childrenKey } from '../runtime/context.js';
import { compileFormulas } from '../formula/evaluator.js';
import type { FormulaPosition } from '../formula/positions.js';

/** One finding about one Block (blockId null: about the Map as a whole). */
export interface ValidationResult {
  blockId: string | null;
  blockName?: string;
  severity: 'error' | 'warning';
  code: ErrorCode;
  message: string;
  /** Which formula of the Block (`fieldMappings.Name.targetFormula`, `condition`, …). */
  formula?: string;
  position?: FormulaPosition;
}

export interface MapValidation {
  valid: boolean;
  results: ValidationResult[];
}

/** Connection metadata by connectionId. */
export type MetadataByConnection = Readonly<Record<string, ConnectionMetadata>>;

/** The Block kinds this Agent version runs; the others are validation errors. */
export const SUPPORTED_TYPES: ReadonlySet<BlockType> = new Set(BLOCK_TYPES);

interface ScopeEntry {
  fields: readonly string[];
  /** A write in bulk: its output cannot be read per record. */
  batched: boolean;
  blockType: BlockType;
}

/** Finds an entity by fullName (exact, then ignoring case). */
export function findEntity(md: ConnectionMetadata | undefined, fullName: string | undefined): EntityMetadata | undefined {
  if (!md || !fullName) return undefined;
  return md.entities.find((e) => e.fullName === fullName) ?? md.entities.find((e) => e.fullName.toLowerCase() === fullName.toLowerCase());
}

/** The relationship of an entity by fullName (exact, then ignoring case). */
export function findRelationship(entity: EntityMetadata | undefined, fullName: string | undefined): Relationship | undefined {
  if (!entity || !fullName) return undefined;
  return entity.relationships.find((r) => r.fullName === fullName) ?? entity.relationships.find((r) => r.fullName.toLowerCase() === fullName.toLowerCase());
}

/** The entity action a Block runs: Query for the readers, Create / Update for CreateWith / UpdateWith. */
export function entityActionOf(t: BlockType): string {
  if (t === 'Lookup' || t === 'Query' || t === 'Fetch') return 'Query';
  if (t === 'CreateWith') return 'Create';
  if (t === 'UpdateWith') return 'Update';
  return t;
}

/** Whether a write Block writes in bulk: the Block allows it and the entity's Action supports it. */
export function writesInBulk(block: Block, entity: EntityMetadata | undefined): boolean {
  if (block.useBulk === false || !isWriteType(block.blockType)) return false;
  return entity?.actions.find((a) => a.action === block.blockType)?.supportsBulk ?? false;
}

/** Validates a Map model (any object; schema problems become MAP_MODEL_INVALID results). */
export function validateMap(input: unknown, metadata: MetadataByConnection): MapValidation {
  const parsed = MapModel.safeParse(input);
  if (!parsed.success) {
    return {
      valid: false,
      results: parsed.error.issues.map((i) => ({ blockId: null, severity: 'error', code: 'MAP_MODEL_INVALID', message: `${i.path.join('.') || '(root)'}: ${i.message}` })),
    };
  }
  return validateModel(parsed.data, metadata);
}

/** Validates a parsed model. */
export function validateModel(model: MapModel, metadata: MetadataByConnection): MapValidation {
  const results: ValidationResult[] = [];
  const scope = new Map<string, ScopeEntry>();
  const first = model.blocks[0];
  if (!first || !STARTER_TYPES.includes(first.blockType)) {
    results.push({ blockId: first?.blockId ?? null, ...(first ? { blockName: first.name } : {}), severity: 'error', code: 'MAP_BLOCK_MISPLACED', message: 'A Map begins with a starter Block (Query, Fetch, Native Query, Wait For Message, Wait For Request).' });
  }
  walk(model.blocks, true, { results, scope, metadata, loopDepth: 0, children: new Map(), starter: first });
  return { valid: !results.some((r) => r.severity === 'error'), results };
}

interface WalkState {
  results: ValidationResult[];
  scope: Map<string, ScopeEntry>;
  metadata: MetadataByConnection;
  loopDepth: number;
  /** The starter's relationships, by `Query.relationship`: the related entity. */
  children: Map<string, EntityMetadata>;
  starter: Block | undefined;
}

function walk(blocks: readonly Block[], top: boolean, st: WalkState): void {
  blocks.forEach((b, i) => {
    const add: Add = (code, message, extra = {}) => {
      st.results.push({ blockId: b.blockId, blockName: b.name, severity: 'error', code, message, ...extra });
    };
    if (STARTER_TYPES.includes(b.blockType) && !(top && i === 0)) add('MAP_BLOCK_MISPLACED', `${b.name}: a starter Block must be the first Block of the Map.`);
    if (!SUPPORTED_TYPES.has(b.blockType)) add('MAP_BLOCK_UNSUPPORTED', `${b.name}: the ${b.blockType} Block is not supported by this Agent version yet.`);
    if ((b.blockType === 'LoopExit' || b.blockType === 'Continue') && st.loopDepth === 0) add('MAP_BLOCK_MISPLACED', `${b.name}: ${b.blockType} belongs inside a Loop or For Each.`);
    checkBlock(b, st, add);
    if (b.blockType === 'IfElse') {
      // Each branch sees what was in scope before it; afterwards only what both branches could add is uncertain, so keep both (reads of a skipped branch give null).
      walk(b.then ?? [], false, st);
      walk(b.else ?? [], false, st);
    }
    if (b.body) walk(b.body, false, { ...st, loopDepth: st.loopDepth + (LOOP_TYPES.includes(b.blockType) ? 1 : 0) });
  });
}

type Add = (code: ErrorCode, message: string, extra?: Partial<ValidationResult>) => void;

function checkBlock(b: Block, st: WalkState, add: Add): void {
  const t = b.blockType;
  const withChildren = t === 'CreateWith' || t === 'UpdateWith';
  const isMessage = MESSAGE_STARTERS.includes(t);
  const needsEntity = t === 'Query' || t === 'Fetch' || t === 'Lookup' || isWriteType(t) || withChildren || (isMessage && b.connectionId !== undefined);
  let entity: EntityMetadata | undefined;
  if (needsEntity || t === 'NativeQuery') {
    const md = b.connectionId ? st.metadata[b.connectionId] : undefined;
    if (!md) add('MAP_CONNECTION_NOT_FOUND', `${b.name}: ${b.connectionId ? `the Connection ${b.connectionId} is not among the Map's Connections` : 'the Block names no connectionId'}.`);
    else if (needsEntity) {
      entity = findEntity(md, b.entity);
      if (!entity) add('MAP_ENTITY_NOT_FOUND', `${b.name}: the Connection ${b.connectionId ?? ''} has no entity ${b.entity ?? '(none given)'}.`);
    } else if (!md.actions.some((a) => a.action === 'NativeQuery')) {
      add('MAP_ACTION_UNSUPPORTED', `${b.name}: the Connector of ${b.connectionId ?? ''} has no native query.`);
    }
  }
  const fieldSet = new Set(entity?.fields.map((f) => f.fullName) ?? []);
  const hasField = (f: string): boolean => fieldSet.has(f);

  if (entity && !isMessage) {
    const action = entityActionOf(t);
    if (!entity.actions.some((a) => a.action === action)) add('MAP_ACTION_UNSUPPORTED', `${b.name}: the entity ${entity.fullName} does not support ${action}.`);
    for (const f of filterFields(b.filter)) if (!hasField(f)) add('MAP_FIELD_NOT_FOUND', `${b.name}: the filter reads ${f}, which ${entity.fullName} does not have.`);
    if (b.netChange) {
      const f = entity.fields.find((x) => x.fullName === b.netChange?.fieldName);
      if (!f) add('MAP_FIELD_NOT_FOUND', `${b.name}: the net change field ${b.netChange.fieldName} is not a field of ${entity.fullName}.`);
      else if (f.propertyType !== 'date' && f.propertyType !== 'datetime') add('MAP_NET_CHANGE_FIELD', `${b.name}: the net change field ${f.fullName} is ${f.propertyType}, not a date or datetime.`);
    }
    for (const m of b.fieldMappings ?? []) if (!hasField(m.targetField)) add('MAP_FIELD_NOT_FOUND', `${b.name}: ${entity.fullName} has no field ${m.targetField}.`);
    for (const c of b.lookupConditions ?? []) if (!hasField(c.fieldName)) add('MAP_FIELD_NOT_FOUND', `${b.name}: the condition field ${c.fieldName} is not a field of ${entity.fullName}.`);
    if (t === 'Create' || t === 'CreateWith') {
      const mapped = new Set((b.fieldMappings ?? []).map((m) => m.targetField));
      for (const f of entity.fields) {
        if (f.requiredInActionInput && !f.hasDefault && !mapped.has(f.fullName)) {
          st.results.push({ blockId: b.blockId, blockName: b.name, severity: 'warning', code: 'MAP_REQUIRED_FIELD_MISSING', message: `${b.name}: ${entity.fullName}.${f.fullName} is required and has no mapping.` });
        }
      }
    }
    if (t === 'Query' || t === 'Fetch') {
      for (const r of b.relationships ?? []) {
        const rel = findRelationship(entity, r);
        const related = rel ? findEntity(b.connectionId ? st.metadata[b.connectionId] : undefined, rel.relatedEntityFullName) : undefined;
        if (!rel || !related) add('MAP_RELATIONSHIP_NOT_FOUND', `${b.name}: ${entity.fullName} has no relationship ${r}.`);
        else st.children.set(childrenKey(b.name, rel.fullName), related);
      }
    }
  }
  if (b.netChange && t !== 'Query') add('MAP_MODEL_INVALID', `${b.name}: only a Query reads net change.`);
  if (b.relationships?.length && t !== 'Query' && t !== 'Fetch') add('MAP_MODEL_INVALID', `${b.name}: only a Query or a Fetch reads relationships.`);
  if (t === 'Fetch' && !b.filter) add('MAP_MODEL_INVALID', `${b.name}: a Fetch needs a filter (use a Query to read a whole entity).`);
  if (t === 'NativeQuery' && !b.statement?.trim()) add('MAP_MODEL_INVALID', `${b.name}: a Native Query needs a statement.`);
  if ((t === 'Update' || t === 'UpdateInsert' || t === 'Delete' || t === 'UpdateWith') && entity && !b.lookupConditions?.length && !entity.fields.some((f) => f.isPrimaryKey)) {
    add('MAP_FIELD_NOT_FOUND', `${b.name}: ${t} needs lookup conditions or a primary key on ${entity.fullName}.`);
  }
  if (t === 'ForEachResult') {
    const src = b.source ? st.scope.get(b.source) : undefined;
    if (!src || src.blockType !== 'Lookup') add('MAP_BLOCK_MISPLACED', `${b.name}: For Each Result iterates the results of an earlier Lookup Block; ${b.source ?? '(no source)'} is not one.`);
  }
  if (t === 'ForEachChild') {
    const source = b.source ?? st.starter?.name ?? '';
    const related = st.children.get(childrenKey(source, b.relationship ?? ''));
    if (!related) add('MAP_RELATIONSHIP_NOT_FOUND', `${b.name}: For Each Child iterates one of the relationships its Query reads; ${source} reads no relationship ${b.relationship ?? '(none given)'}.`);
    else st.scope.set(b.name, { fields: related.fields.map((f) => f.fullName), batched: false, blockType: t });
  }
  if ((t === 'IfElse' || t === 'Loop') && !b.condition) add('MAP_MODEL_INVALID', `${b.name}: ${t === 'Loop' ? 'a Loop' : 'an If/Else Block'} needs a condition.`);
  if (t === 'Loop') st.scope.set(b.name, { fields: ['index'], batched: false, blockType: t });
  if (t === 'SendReply') {
    if (st.starter?.blockType !== 'WaitForRequest') add('MAP_BLOCK_MISPLACED', `${b.name}: Send Reply answers a request; the Map must begin with Wait For Request.`);
    const src = b.source ? st.scope.get(b.source) : undefined;
    if (src?.blockType !== 'BuildReply') add('MAP_BLOCK_MISPLACED', `${b.name}: Send Reply sends the reply of an earlier Build Reply Block; ${b.source ?? '(no source)'} is not one.`);
  }

  // Formulas see the Blocks before this one (a Lookup's compare values do not see its own output).
  for (const [key, formula] of formulasOf(b)) checkFormula(b, key, formula, st, add);
  if (withChildren && entity) checkChildren(b, entity, st, add);

  if (entity && (t === 'Query' || t === 'Fetch' || t === 'Lookup' || isWriteType(t) || withChildren || isMessage)) {
    st.scope.set(b.name, { fields: entity.fields.map((f) => f.fullName), batched: writesInBulk(b, entity), blockType: t });
  } else if (t === 'NativeQuery' || (isMessage && !b.connectionId)) {
    st.scope.set(b.name, { fields: b.fields ?? [], batched: false, blockType: t });
  } else if (t === 'BuildReply') {
    st.scope.set(b.name, { fields: (b.fieldMappings ?? []).map((m) => m.targetField), batched: false, blockType: t });
  }
}

/** CreateWith / UpdateWith child writes: the relationship, its entity's fields, the source, the child formulas. */
function checkChildren(b: Block, entity: EntityMetadata, st: WalkState, add: Add): void {
  const md = b.connectionId ? st.metadata[b.connectionId] : undefined;
  const childAction = b.blockType === 'CreateWith' ? 'Create' : 'Upsert';
  for (const c of b.children ?? []) {
    const rel = findRelationship(entity, c.relationship);
    const related = rel ? findEntity(md, rel.relatedEntityFullName) : undefined;
    if (!rel || !related || rel.relationshipType !== 'OneToMany') {
      add('MAP_RELATIONSHIP_NOT_FOUND', `${b.name}: ${entity.fullName} has no one-to-many relationship ${c.relationship}.`);
      continue;
    }
    if (!related.actions.some((a) => a.action === childAction)) add('MAP_ACTION_UNSUPPORTED', `${b.name}: the entity ${related.fullName} does not support ${childAction}.`);
    for (const m of c.fieldMappings) if (!related.fields.some((f) => f.fullName === m.targetField)) add('MAP_FIELD_NOT_FOUND', `${b.name}: ${related.fullName} has no field ${m.targetField}.`);
    const lookup = st.scope.get(c.source);
    const sourceFields = lookup?.blockType === 'Lookup' ? lookup.fields : st.children.get(c.source)?.fields.map((f) => f.fullName);
    if (!sourceFields) {
      add('MAP_BLOCK_MISPLACED', `${b.name}: the children of ${c.relationship} come from an earlier Lookup or a relationship its Query reads (Query.relationship); ${c.source} is neither.`);
      continue;
    }
    const bindAs = c.name ?? c.source;
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(bindAs)) {
      add('MAP_MODEL_INVALID', `${b.name}: give the child write of ${c.relationship} a name to read ${c.source} by.`);
      continue;
    }
    const inner: WalkState = { ...st, scope: new Map(st.scope).set(bindAs, { fields: sourceFields, batched: false, blockType: 'Lookup' }) };
    for (const m of c.fieldMappings) checkFormula(b, `children.${c.relationship}.fieldMappings.${m.targetField}.targetFormula`, m.targetFormula, inner, add);
  }
}

/** The formulas of a Block, keyed by where they sit in it. */
export function formulasOf(b: Block): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  if (b.condition !== undefined) out.push(['condition', b.condition]);
  for (const c of b.lookupConditions ?? []) out.push([`lookupConditions.${c.fieldName}.compareValue`, c.compareValue]);
  for (const m of b.fieldMappings ?? []) out.push([`fieldMappings.${m.targetField}.targetFormula`, m.targetFormula]);
  return out;
}

function checkFormula(b: Block, key: string, formula: string, st: WalkState, add: Add): void {
  const known: string[] = [];
  for (const [name, e] of st.scope) for (const f of e.fields) known.push(`${name}.${f}`);
  try {
    const compiled = compileFormulas([{ key, formula, blockId: b.blockId }], { fields: known });
    for (const ref of compiled.fields) {
      if (st.scope.get(ref.block)?.batched) {
        add('MAP_BATCHED_OUTPUT_READ', `${b.name}: ${key} reads ${ref.block}.${ref.field}, the output of a write in bulk; set useBulk false on ${ref.block} to read it.`, { formula: key });
      }
    }
  } catch (err) {
    if (!isFerryError(err)) throw err;
    const position = err.details?.['position'] as FormulaPosition | undefined;
    add(err.code, `${b.name}: ${key}: ${err.message}`, { formula: key, ...(position ? { position } : {}) });
  }
}
