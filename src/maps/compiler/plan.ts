/**
 * Turns a valid Map into an executable plan: each Block's formulas compiled once (one program per
 * Block), each Block bound to its step function (src/maps/blocks/, one file per kind).
 */
import type { Relationship } from '../../connectors/sdk.js';
import { FerryError } from '../../errors/ferry-error.js';
import { MapModel, isWriteType, walkBlocks, type Block } from '../../protocol/map.js';
import { buildReplyStep } from '../blocks/build-reply.block.js';
import { continueStep } from '../blocks/continue.block.js';
import { createWithStep } from '../blocks/create-with.block.js';
import { createStep } from '../blocks/create.block.js';
import { deleteStep } from '../blocks/delete.block.js';
import { forEachChildStep } from '../blocks/for-each-child.block.js';
import { forEachResultStep } from '../blocks/for-each-result.block.js';
import { ifElseStep } from '../blocks/if-else.block.js';
import { lookupStep } from '../blocks/lookup.block.js';
import { loopExitStep } from '../blocks/loop-exit.block.js';
import { loopStep } from '../blocks/loop.block.js';
import { mapExitStep } from '../blocks/map-exit.block.js';
import { sendReplyStep } from '../blocks/send-reply.block.js';
import { updateInsertStep } from '../blocks/update-insert.block.js';
import { updateWithStep } from '../blocks/update-with.block.js';
import { updateStep } from '../blocks/update.block.js';
import { upsertStep } from '../blocks/upsert.block.js';
import type { ChildWriteSpec } from '../blocks/write-with.js';
import type { WriteStepSpec } from '../blocks/write.js';
import { compileFormulas, type CompiledFormulas } from '../formula/evaluator.js';
import { childrenKey, type Step } from '../runtime/context.js';
import { findEntity, findRelationship, validateModel, writesInBulk, type MetadataByConnection, type ValidationResult } from './validate.js';

export interface MapPlan {
  readonly model: MapModel;
  readonly starter: Block;
  readonly steps: readonly Step[];
  /** The relationships the starter reads children through (Query, Fetch). */
  readonly starterRelationships: readonly Relationship[];
  readonly blocks: readonly Block[];
  /** Fields of the starter's records that the Map reads: what a failed-record copy keeps. */
  readonly sourceFields: readonly string[];
  /** The starter entity's primary-key fields (Connection metadata): a source record's identity; empty = none. */
  readonly sourceKeyFields: readonly string[];
  /** Lookup Tables the formulas name; `dynamic` when some name is computed. */
  readonly lookupTables: { names: string[]; dynamic: boolean };
  readonly warnings: readonly ValidationResult[];
}

/** Validates and compiles; throws MAP_INVALID (details.results) when the Map has errors. */
export function compilePlan(input: unknown, metadata: MetadataByConnection): MapPlan {
  const parsed = MapModel.safeParse(input);
  if (!parsed.success) {
    const errors = parsed.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
    throw new FerryError('MAP_MODEL_INVALID', `The Map model is not valid: ${errors.map((e) => `${e.path || '(root)'}: ${e.message}`).join('; ')}`, { errors });
  }
  const model = parsed.data;
  const v = validateModel(model, metadata);
  if (!v.valid) {
    const errs = v.results.filter((r) => r.severity === 'error');
    throw new FerryError('MAP_INVALID', `The Map ${model.name} has ${errs.length} validation error(s): ${errs.map((r) => r.message).join('; ')}`, { details: { results: v.results } });
  }
  const [starter, ...rest] = model.blocks as [Block, ...Block[]];
  const starterEntity = findEntity(starter.connectionId ? metadata[starter.connectionId] : undefined, starter.entity);
  const all: CompiledFormulas[] = [];
  const compile = (b: Block, formulas: Array<[string, string]>): CompiledFormulas => {
    const c = compileFormulas(formulas.map(([key, formula]) => ({ key, formula, blockId: b.blockId })));
    all.push(c);
    return c;
  };
  const build = (blocks: readonly Block[]): Step[] =>
    blocks.map((b): Step => {
      switch (b.blockType) {
        case 'IfElse':
          return ifElseStep(b, compile(b, [['condition', b.condition ?? 'false']]), build(b.then ?? []), build(b.else ?? []));
        case 'ForEachResult':
          return forEachResultStep(b, b.source ?? '', build(b.body ?? []));
        case 'MapExit':
          return mapExitStep(b);
        case 'Lookup': {
          const conds = b.lookupConditions ?? [];
          return lookupStep(b, conds, compile(b, conds.map((c) => [c.fieldName, c.compareValue])));
        }
        case 'ForEachChild':
          return forEachChildStep(b, b.source ?? starter.name, b.relationship ?? '', build(b.body ?? []));
        case 'Loop':
          return loopStep(b, compile(b, [['condition', b.condition ?? 'false']]), build(b.body ?? []));
        case 'LoopExit':
          return loopExitStep(b);
        case 'Continue':
          return continueStep(b);
        case 'BuildReply': {
          const maps = b.fieldMappings ?? [];
          return buildReplyStep(b, compile(b, maps.map((m) => [m.targetField, m.targetFormula])), maps.map((m) => m.targetField));
        }
        case 'SendReply':
          return sendReplyStep(b, b.source ?? '');
        case 'CreateWith':
        case 'UpdateWith': {
          const entity = findEntity(b.connectionId ? metadata[b.connectionId] : undefined, b.entity);
          const maps = b.fieldMappings ?? [];
          const conds = b.blockType === 'UpdateWith' ? (b.lookupConditions ?? []).filter((c) => c.comparisonOperator === '=') : [];
          const children = (b.children ?? []).map((c): ChildWriteSpec => {
            const dot = c.source.indexOf('.');
            return {
              relationship: findRelationship(entity, c.relationship) as Relationship,
              collection: dot < 0 ? c.source : childrenKey(c.source.slice(0, dot), findRelationship(starterEntity, c.source.slice(dot + 1))?.fullName ?? c.source.slice(dot + 1)),
              bindAs: c.name ?? c.source,
              formulas: compile(b, c.fieldMappings.map((m) => [m.targetField, m.targetFormula])),
              targetFields: c.fieldMappings.map((m) => m.targetField),
            };
          });
          const spec = {
            block: b,
            formulas: compile(b, [...maps.map((m): [string, string] => [m.targetField, m.targetFormula]), ...conds.map((c): [string, string] => [`key.${c.fieldName}`, c.compareValue])]),
            targetFields: maps.map((m) => m.targetField),
            keyFields: conds.map((c) => c.fieldName),
            children,
          };
          return b.blockType === 'CreateWith' ? createWithStep(spec) : updateWithStep(spec);
        }
        default: {
          if (!isWriteType(b.blockType)) throw new FerryError('MAP_BLOCK_UNSUPPORTED', `${b.name}: the ${b.blockType} Block is not supported by this Agent version yet.`, { details: { blockId: b.blockId } });
          const entity = findEntity(b.connectionId ? metadata[b.connectionId] : undefined, b.entity);
          const maps = b.fieldMappings ?? [];
          const conds = (b.lookupConditions ?? []).filter((c) => c.comparisonOperator === '=');
          const spec: Omit<WriteStepSpec, 'action'> = {
            block: b,
            formulas: compile(b, [...maps.map((m): [string, string] => [m.targetField, m.targetFormula]), ...conds.map((c): [string, string] => [`key.${c.fieldName}`, c.compareValue])]),
            targetFields: maps.map((m) => m.targetField),
            keyFields: conds.map((c) => c.fieldName),
            bulk: writesInBulk(b, entity),
          };
          const byType = { Create: createStep, Update: updateStep, UpdateInsert: updateInsertStep, Upsert: upsertStep, Delete: deleteStep } as const;
          return byType[b.blockType](spec);
        }
      }
    });
  const steps = build(rest);
  const starterRelationships = (starter.relationships ?? []).map((r) => findRelationship(starterEntity, r) as Relationship);
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
  return { model, starter, steps, starterRelationships, blocks: [...walkBlocks(model.blocks)], sourceFields: [...sourceFields], sourceKeyFields, lookupTables: { names: [...names], dynamic }, warnings: v.results };
}
