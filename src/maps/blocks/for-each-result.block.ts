/**
 * For Each Result: runs its body once per result of an earlier Lookup (`source`), with the
 * Lookup's name bound to that result. The record goes on after the Block unchanged.
 */
import type { Block } from '../../protocol/map.js';
import type { Step } from '../runtime/context.js';
import { hasLoopExit, iterate } from './iterate.js';
import type { BlockKind } from './registry.js';

export function forEachResultStep(block: Block, source: string, body: readonly Step[]): Step {
  const ordered = hasLoopExit(block.body ?? []);
  return {
    block,
    run: (items, env) =>
      iterate(items, { records: (item) => item.results?.get(source) ?? [], bindAs: source, body, ordered }, env),
  };
}

export const forEachResultKind: BlockKind = {
  type: 'ForEachResult',
  check(block, cx) {
    const src = block.source ? cx.scope.get(block.source) : undefined;
    if (!src || src.blockType !== 'Lookup')
      cx.error(
        'MAP_BLOCK_MISPLACED',
        `${block.name}: For Each Result iterates the results of an earlier Lookup Block; ${block.source ?? '(no source)'} is not one.`,
      );
  },
  bind: (block, cx) => forEachResultStep(block, block.source ?? '', cx.steps(block.body)),
};
