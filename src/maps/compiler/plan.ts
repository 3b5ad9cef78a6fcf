/**
 * Turns a valid Map into an executable plan: each Block's formulas compiled once (one program per
 * Block), the starter bound to its Source and every other Block to its Step by its kind in the
 * Block registry (src/maps/blocks/index.ts, one file per kind). The runtime runs what the plan
 * holds and looks no kind up.
 */
import type { Relationship } from '../../connectors/sdk.js';
import { FerryError } from '../../errors/ferry-error.js';
import { MapModel, walkBlocks, type Block } from '../../protocol/map.js';
import { kindOf, type BindContext } from '../blocks/index.js';
import { compileFormulas, type CompiledFormulas } from '../formula/evaluator.js';
import { entityOf, findRelationship, type MetadataByConnection } from '../metadata.js';
import type { Step } from '../runtime/context.js';
import type { RunPlan } from '../runtime/run-types.js';
import { validateModel, type ValidationResult } from './validate.js';

export interface MapPlan extends RunPlan {
  /** The relationships the starter reads children through (Query, Fetch). */
  readonly starterRelationships: readonly Relationship[];
  /** Lookup Tables the formulas name; `dynamic` when some name is computed. */
  readonly lookupTables: { names: string[]; dynamic: boolean };
  readonly warnings: readonly ValidationResult[];
}

/** Validates and compiles; throws MAP_INVALID (details.results) when the Map has errors. */
export function compilePlan(input: unknown, metadata: MetadataByConnection): MapPlan {
  const parsed = MapModel.safeParse(input);
  if (!parsed.success) {
    const errors = parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
    throw new FerryError(
      'MAP_MODEL_INVALID',
      `The Map model is not valid: ${errors.map((e) => `${e.path || '(root)'}: ${e.message}`).join('; ')}`,
      { errors },
    );
  }
  const model = parsed.data;
  const v = validateModel(model, metadata);
  if (!v.valid) {
    const errs = v.results.filter((r) => r.severity === 'error');
    throw new FerryError(
      'MAP_INVALID',
      `The Map ${model.name} has ${errs.length} validation error(s): ${errs.map((r) => r.message).join('; ')}`,
      { details: { results: v.results } },
    );
  }
  const [starter, ...rest] = model.blocks as [Block, ...Block[]];
  const starterEntity = entityOf(starter, metadata);
  const all: CompiledFormulas[] = [];
  const cx: BindContext = {
    metadata,
    starter,
    starterEntity,
    compile(b, formulas) {
      const c = compileFormulas(formulas.map(([key, formula]) => ({ key, formula, blockId: b.blockId })));
      all.push(c);
      return c;
    },
    steps: (blocks) => build(blocks ?? []),
  };
  const build = (blocks: readonly Block[]): Step[] =>
    blocks.map((b): Step => {
      const bind = kindOf(b.blockType).bind;
      if (!bind)
        throw new FerryError(
          'MAP_BLOCK_UNSUPPORTED',
          `${b.name}: the ${b.blockType} Block is not supported by this Agent version yet.`,
          { details: { blockId: b.blockId } },
        );
      return bind(b, cx);
    });
  const steps = build(rest);
  const starterRelationships = (starter.relationships ?? []).map(
    (r) => findRelationship(starterEntity, r) as Relationship,
  );
  const bindSource = kindOf(starter.blockType).source;
  if (!bindSource)
    throw new FerryError('MAP_BLOCK_MISPLACED', `${starter.name}: a Map begins with a starter Block.`, {
      details: { blockId: starter.blockId },
    });
  const source = bindSource(starter, starterRelationships);
  const sourceFields = new Set<string>();
  const names = new Set<string>();
  let dynamic = false;
  for (const c of all) {
    for (const f of c.fields) if (f.block === starter.name) sourceFields.add(f.field);
    c.lookupTables.forEach((n) => names.add(n));
    dynamic ||= c.dynamicLookupTables;
  }
  if (starter.netChange) sourceFields.add(starter.netChange.fieldName);
  // Reprocessing reads the children again from the stored copy's keys.
  for (const r of starterRelationships) r.thisProperties.forEach((f) => sourceFields.add(f));
  const sourceKeyFields = (starterEntity?.fields ?? []).filter((f) => f.isPrimaryKey).map((f) => f.fullName);
  return {
    model,
    starter,
    source,
    steps,
    starterRelationships,
    blocks: [...walkBlocks(model.blocks)],
    sourceFields: [...sourceFields],
    sourceKeyFields,
    lookupTables: { names: [...names], dynamic },
    warnings: v.results,
  };
}
