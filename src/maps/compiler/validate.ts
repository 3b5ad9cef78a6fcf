/**
 * Validates a Map against its Connections' metadata and returns per-Block results: what the
 * Service's validate endpoint returns, and what `ferry map validate` prints.
 *
 * Walks the Block tree in flow order keeping the scope — which Block names (and their fields) a
 * formula at this point may read — so a formula that reads a later Block, an unknown field or the
 * output of a batched write is reported at the formula's position.
 */
import type { ConnectionMetadata, EntityMetadata } from '../../connectors/sdk.js';
import type { ErrorCode } from '../../errors/codes.js';
import { isFerryError } from '../../errors/ferry-error.js';
import { filterFields } from '../../protocol/filter.js';
import { MapModel, STARTER_TYPES, isWriteType, type Block, type BlockType } from '../../protocol/map.js';
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
export const SUPPORTED_TYPES: ReadonlySet<BlockType> = new Set(['Query', 'IfElse', 'ForEachResult', 'MapExit', 'Lookup', 'Create', 'Update', 'UpdateInsert', 'Upsert', 'Delete']);

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
    results.push({ blockId: first?.blockId ?? null, ...(first ? { blockName: first.name } : {}), severity: 'error', code: 'MAP_BLOCK_MISPLACED', message: 'A Map begins with a starter Block (Query, Fetch, Native Query, Wait For Message).' });
  }
  walk(model.blocks, true, { results, scope, metadata, loopDepth: 0 });
  return { valid: !results.some((r) => r.severity === 'error'), results };
}

interface WalkState {
  results: ValidationResult[];
  scope: Map<string, ScopeEntry>;
  metadata: MetadataByConnection;
  loopDepth: number;
}

function walk(blocks: readonly Block[], top: boolean, st: WalkState): void {
  blocks.forEach((b, i) => {
    const add = (code: ErrorCode, message: string, extra: Partial<ValidationResult> = {}): void => {
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
    if (b.body) walk(b.body, false, { ...st, loopDepth: st.loopDepth + (b.blockType === 'ForEachResult' || b.blockType === 'ForEachChild' || b.blockType === 'Loop' ? 1 : 0) });
  });
}

function checkBlock(b: Block, st: WalkState, add: (code: ErrorCode, message: string, extra?: Partial<ValidationResult>) => void): void {
  const needsEntity = b.blockType === 'Query' || b.blockType === 'Fetch' || b.blockType === 'Lookup' || isWriteType(b.blockType) || b.blockType === 'CreateWith' || b.blockType === 'UpdateWith';
  let entity: EntityMetadata | undefined;
  if (needsEntity || b.blockType === 'NativeQuery') {
    const md = b.connectionId ? st.metadata[b.connectionId] : undefined;
    if (!md) add('MAP_CONNECTION_NOT_FOUND', `${b.name}: ${b.connectionId ? `the Connection ${b.connectionId} is not among the Map's Connections` : 'the Block names no connectionId'}.`);
    else if (needsEntity) {
      entity = findEntity(md, b.entity);
      if (!entity) add('MAP_ENTITY_NOT_FOUND', `${b.name}: the Connection ${b.connectionId ?? ''} has no entity ${b.entity ?? '(none given)'}.`);
    }
  }
  const fieldSet = new Set(entity?.fields.map((f) => f.fullName) ?? []);
  const hasField = (f: string): boolean => fieldSet.has(f);

  if (entity) {
    const action = b.blockType === 'Lookup' || b.blockType === 'Query' || b.blockType === 'Fetch' ? 'Query' : b.blockType;
    if (!entity.actions.some((a) => a.action === action)) add('MAP_ACTION_UNSUPPORTED', `${b.name}: the entity ${entity.fullName} does not support ${action}.`);
    for (const f of filterFields(b.filter)) if (!hasField(f)) add('MAP_FIELD_NOT_FOUND', `${b.name}: the filter reads ${f}, which ${entity.fullName} does not have.`);
    if (b.netChange) {
      const f = entity.fields.find((x) => x.fullName === b.netChange?.fieldName);
      if (!f) add('MAP_FIELD_NOT_FOUND', `${b.name}: the net change field ${b.netChange.fieldName} is not a field of ${entity.fullName}.`);
      else if (f.propertyType !== 'date' && f.propertyType !== 'datetime') add('MAP_NET_CHANGE_FIELD', `${b.name}: the net change field ${f.fullName} is ${f.propertyType}, not a date or datetime.`);
    }
    for (const m of b.fieldMappings ?? []) if (!hasField(m.targetField)) add('MAP_FIELD_NOT_FOUND', `${b.name}: ${entity.fullName} has no field ${m.targetField}.`);
    for (const c of b.lookupConditions ?? []) if (!hasField(c.fieldName)) add('MAP_FIELD_NOT_FOUND', `${b.name}: the condition field ${c.fieldName} is not a field of ${entity.fullName}.`);
    if (b.blockType === 'Create') {
      const mapped = new Set((b.fieldMappings ?? []).map((m) => m.targetField));
      for (const f of entity.fields) {
        if (f.requiredInActionInput && !f.hasDefault && !mapped.has(f.fullName)) {
          st.results.push({ blockId: b.blockId, blockName: b.name, severity: 'warning', code: 'MAP_REQUIRED_FIELD_MISSING', message: `${b.name}: ${entity.fullName}.${f.fullName} is required and has no mapping.` });
        }
      }
    }
  }
  if ((b.blockType === 'Update' || b.blockType === 'UpdateInsert' || b.blockType === 'Delete') && entity && !(b.lookupConditions?.length) && !entity.fields.some((f) => f.isPrimaryKey)) {
    add('MAP_FIELD_NOT_FOUND', `${b.name}: ${b.blockType} needs lookup conditions or a primary key on ${entity.fullName}.`);
  }
  if (b.blockType === 'ForEachResult') {
    const src = b.source ? st.scope.get(b.source) : undefined;
    if (!src || src.blockType !== 'Lookup') add('MAP_BLOCK_MISPLACED', `${b.name}: For Each Result iterates the results of an earlier Lookup Block; ${b.source ?? '(no source)'} is not one.`);
  }
  if (b.blockType === 'IfElse' && !b.condition) add('MAP_MODEL_INVALID', `${b.name}: an If/Else Block needs a condition.`);

  // Formulas see the Blocks before this one (a Lookup's compare values do not see its own output).
  for (const [key, formula] of formulasOf(b)) checkFormula(b, key, formula, st, add);

  if (entity && (b.blockType === 'Query' || b.blockType === 'Lookup' || isWriteType(b.blockType))) {
    st.scope.set(b.name, { fields: entity.fields.map((f) => f.fullName), batched: writesInBulk(b, entity), blockType: b.blockType });
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

function checkFormula(b: Block, key: string, formula: string, st: WalkState, add: (code: ErrorCode, message: string, extra?: Partial<ValidationResult>) => void): void {
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
