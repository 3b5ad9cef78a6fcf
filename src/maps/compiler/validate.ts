/**
 * Validates a Map against its Connections' metadata and returns per-Block results: what the
 * Service's validate endpoint returns, and what `ferry map validate` prints.
 *
 * Walks the Block tree in flow order keeping the scope — which Block names (and their fields) a
 * formula at this point may read — so a formula that reads a later Block, an unknown field or the
 * output of a batched write is reported at the formula's position. The checks every Block gets are
 * here; what is particular to a kind comes from its entry in the Block registry (blocks/index.ts).
 */
import type { EntityMetadata } from '../../connectors/sdk.js';
import type { ErrorCode } from '../../errors/codes.js';
import { isFerryError } from '../../errors/ferry-error.js';
import { filterFields } from '../../protocol/filter.js';
import { LOOP_TYPES, MapModel, STARTER_TYPES, type Block, type BlockType } from '../../protocol/map.js';
import { BLOCK_KINDS, kindOf, writesInBulk, type CheckContext, type ScopeEntry } from '../blocks/index.js';
import { compileFormulas } from '../formula/evaluator.js';
import type { FormulaPosition } from '../formula/positions.js';
import { connectionOf, findEntity, type MetadataByConnection } from '../metadata.js';
import { didYouMean } from '../../util/closest-name.js';

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

/** The Block kinds this Agent version runs (the registry's); the others are validation errors. */
export const SUPPORTED_TYPES: ReadonlySet<BlockType> = new Set(Object.keys(BLOCK_KINDS) as BlockType[]);

/** Validates a Map model (any object; schema problems become MAP_MODEL_INVALID results). */
export function validateMap(input: unknown, metadata: MetadataByConnection): MapValidation {
  const parsed = MapModel.safeParse(input);
  if (!parsed.success) {
    return {
      valid: false,
      results: parsed.error.issues.map((i) => ({
        blockId: null,
        severity: 'error',
        code: 'MAP_MODEL_INVALID',
        message: `${i.path.join('.') || '(root)'}: ${i.message}`,
      })),
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
    results.push({
      blockId: first?.blockId ?? null,
      ...(first ? { blockName: first.name } : {}),
      severity: 'error',
      code: 'MAP_BLOCK_MISPLACED',
      message: 'A Map begins with a starter Block (Query, Fetch, Native Query, Wait For Message, Wait For Request).',
    });
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
    if (STARTER_TYPES.includes(b.blockType) && !(top && i === 0))
      add('MAP_BLOCK_MISPLACED', `${b.name}: a starter Block must be the first Block of the Map.`);
    if (!SUPPORTED_TYPES.has(b.blockType))
      add('MAP_BLOCK_UNSUPPORTED', `${b.name}: the ${b.blockType} Block is not supported by this Agent version yet.`);
    else {
      if (kindOf(b.blockType).inLoop && st.loopDepth === 0)
        add('MAP_BLOCK_MISPLACED', `${b.name}: ${b.blockType} belongs inside a Loop or For Each.`);
      checkBlock(b, st, add);
    }
    if (b.blockType === 'IfElse') {
      // Each branch sees what was in scope before it; afterwards only what both branches could add is uncertain, so keep both (reads of a skipped branch give null).
      walk(b.then ?? [], false, st);
      walk(b.else ?? [], false, st);
    }
    if (b.body) walk(b.body, false, { ...st, loopDepth: st.loopDepth + (LOOP_TYPES.includes(b.blockType) ? 1 : 0) });
  });
}

type Add = (code: ErrorCode, message: string, extra?: Partial<ValidationResult>) => void;

/**
 * The checks every Block gets, with its kind's (blocks/registry.ts) at their places: the
 * Connection and entity, the fields it names, the kind's rules, its formulas, then its name enters
 * the scope.
 */
function checkBlock(b: Block, st: WalkState, add: Add): void {
  const t = b.blockType;
  const kind = kindOf(t);
  const cx: CheckContext = {
    metadata: st.metadata,
    starter: st.starter,
    scope: st.scope,
    children: st.children,
    error: (code, message) => add(code, message),
    warning: (code, message) =>
      st.results.push({ blockId: b.blockId, blockName: b.name, severity: 'warning', code, message }),
    formula: (key, formula, scope) => checkFormula(b, key, formula, scope ?? st.scope, add),
  };
  const needsEntity =
    kind.connection === 'entity' || (kind.connection === 'entity-if-named' && b.connectionId !== undefined);
  let entity: EntityMetadata | undefined;
  if (needsEntity || kind.connection === 'native-query') {
    const md = connectionOf(b, st.metadata);
    if (!md)
      add(
        'MAP_CONNECTION_NOT_FOUND',
        `${b.name}: ${b.connectionId ? `the Connection ${b.connectionId} is not among the Map's Connections` : 'the Block names no connectionId'}.`,
      );
    else if (needsEntity) {
      entity = findEntity(md, b.entity);
      if (!entity)
        add(
          'MAP_ENTITY_NOT_FOUND',
          `${b.name}: the Connection ${b.connectionId ?? ''} has no entity ${b.entity ?? '(none given)'}${didYouMean(
            b.entity,
            md.entities.map((e) => e.fullName),
          )}.`,
        );
    } else if (!md.actions.some((a) => a.action === 'NativeQuery')) {
      add('MAP_ACTION_UNSUPPORTED', `${b.name}: the Connector of ${b.connectionId ?? ''} has no native query.`);
    }
  }
  const fieldSet = new Set(entity?.fields.map((f) => f.fullName) ?? []);
  const hasField = (f: string): boolean => fieldSet.has(f);
  const near = (f: string): string => didYouMean(f, fieldSet);

  if (entity && kind.connection === 'entity') {
    const action = kind.entityAction ?? t;
    if (!entity.actions.some((a) => a.action === action))
      add('MAP_ACTION_UNSUPPORTED', `${b.name}: the entity ${entity.fullName} does not support ${action}.`);
    for (const f of filterFields(b.filter))
      if (!hasField(f))
        add(
          'MAP_FIELD_NOT_FOUND',
          `${b.name}: the filter reads ${f}, which ${entity.fullName} does not have${near(f)}.`,
        );
    if (b.netChange) {
      const f = entity.fields.find((x) => x.fullName === b.netChange?.fieldName);
      if (!f)
        add(
          'MAP_FIELD_NOT_FOUND',
          `${b.name}: the net change field ${b.netChange.fieldName} is not a field of ${entity.fullName}${near(b.netChange.fieldName)}.`,
        );
      else if (f.propertyType !== 'date' && f.propertyType !== 'datetime')
        add(
          'MAP_NET_CHANGE_FIELD',
          `${b.name}: the net change field ${f.fullName} is ${f.propertyType}, not a date or datetime.`,
        );
    }
    for (const m of b.fieldMappings ?? [])
      if (!hasField(m.targetField))
        add(
          'MAP_FIELD_NOT_FOUND',
          `${b.name}: ${entity.fullName} has no field ${m.targetField}${near(m.targetField)}.`,
        );
    for (const c of b.lookupConditions ?? [])
      if (!hasField(c.fieldName))
        add(
          'MAP_FIELD_NOT_FOUND',
          `${b.name}: the condition field ${c.fieldName} is not a field of ${entity.fullName}${near(c.fieldName)}.`,
        );
    kind.checkEntity?.(b, entity, cx);
  }
  if (b.netChange && !kind.readsNetChange) add('MAP_MODEL_INVALID', `${b.name}: only a Query reads net change.`);
  if (b.relationships?.length && !kind.readsRelationships)
    add('MAP_MODEL_INVALID', `${b.name}: only a Query or a Fetch reads relationships.`);
  kind.check?.(b, cx, entity);

  // Formulas see the Blocks before this one (a Lookup's compare values do not see its own output).
  for (const [key, formula] of formulasOf(b)) checkFormula(b, key, formula, st.scope, add);
  if (entity) kind.checkChildren?.(b, entity, cx);

  if (entity) {
    st.scope.set(b.name, {
      fields: entity.fields.map((f) => f.fullName),
      batched: writesInBulk(b, entity),
      blockType: t,
    });
  } else {
    const fields = kind.fields?.(b);
    if (fields) st.scope.set(b.name, { fields, batched: false, blockType: t });
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

function checkFormula(b: Block, key: string, formula: string, scope: ReadonlyMap<string, ScopeEntry>, add: Add): void {
  const known: string[] = [];
  for (const [name, e] of scope) for (const f of e.fields) known.push(`${name}.${f}`);
  try {
    const compiled = compileFormulas([{ key, formula, blockId: b.blockId }], { fields: known });
    for (const ref of compiled.fields) {
      if (scope.get(ref.block)?.batched) {
        add(
          'MAP_BATCHED_OUTPUT_READ',
          `${b.name}: ${key} reads ${ref.block}.${ref.field}, the output of a write in bulk; set useBulk false on ${ref.block} to read it.`,
          { formula: key },
        );
      }
    }
  } catch (err) {
    if (!isFerryError(err)) throw err;
    const position = err.details?.['position'] as FormulaPosition | undefined;
    add(err.code, `${b.name}: ${key}: ${err.message}`, { formula: key, ...(position ? { position } : {}) });
  }
}
