/**
 * For Each Child: runs its body once per child record that a Query read through one of its
 * `relationships` (`source` is the Query, `relationship` the relationship's fullName), with the
 * child bound to this Block's name. The record goes on after the Block unchanged.
 */
import type { Block } from '../../protocol/map.js';
import { childrenKey, type Step } from '../runtime/context.js';
import { hasLoopExit, iterate } from './iterate.js';

export function forEachChildStep(block: Block, source: string, relationship: string, body: readonly Step[]): Step {
  const key = childrenKey(source, relationship);
  const ordered = hasLoopExit(block.body ?? []);
  return {
    block,
    run: (items, env) => iterate(items, { records: (item) => item.results.get(key) ?? [], bindAs: block.name, body, ordered }, env),
  };
}
