/**
 * For Each Child: runs its body once per child record that a Query read through one of its
 * `relationships` (`source` is the Query, `relationship` the relationship's fullName), with the
 * child bound to this Block's name. The record goes on after the Block unchanged.
 */
import type { Block } from '../../protocol/map.js';
import { childrenKey, type Step } from '../runtime/context.js';
import { hasLoopExit, iterate } from './iterate.js';
import type { BlockKind } from './registry.js';

export function forEachChildStep(block: Block, source: string, relationship: string, body: readonly Step[]): Step {
  const key = childrenKey(source, relationship);
  const ordered = hasLoopExit(block.body ?? []);
  return {
    block,
    run: (items, env) =>
      iterate(items, { records: (item) => item.results?.get(key) ?? [], bindAs: block.name, body, ordered }, env),
  };
}

export const forEachChildKind: BlockKind = {
  type: 'ForEachChild',
  check(block, cx) {
    const source = block.source ?? cx.starter?.name ?? '';
    const related = cx.children.get(childrenKey(source, block.relationship ?? ''));
    if (!related)
      cx.error(
        'MAP_RELATIONSHIP_NOT_FOUND',
        `${block.name}: For Each Child iterates one of the relationships its Query reads; ${source} reads no relationship ${block.relationship ?? '(none given)'}.`,
      );
    else
      cx.scope.set(block.name, {
        fields: related.fields.map((f) => f.fullName),
        batched: false,
        blockType: 'ForEachChild',
      });
  },
  bind: (block, cx) =>
    forEachChildStep(block, block.source ?? cx.starter.name, block.relationship ?? '', cx.steps(block.body)),
};
