/**
 * For Each Result: runs its body once per result of an earlier Lookup (`source`), with the
 * Lookup's name bound to that result. The record goes on after the Block unchanged.
 */
import type { Block } from '../../protocol/map.js';
import { slices } from '../runtime/batching.js';
import { forkItem, runSequence, type Item, type Step } from '../runtime/context.js';

export function forEachResultStep(block: Block, source: string, body: readonly Step[]): Step {
  return {
    block,
    async run(items, env) {
      // Expanded lazily in slices so a Lookup with many results never builds one huge array.
      let pending: Item[] = [];
      for (const item of items) {
        for (const r of item.results.get(source) ?? []) {
          const child = forkItem(item);
          child.ctx[source] = r;
          pending.push(child);
          if (pending.length >= env.batchSize) {
            await runSequence(body, pending, env);
            pending = [];
          }
        }
      }
      for (const part of slices(pending, env.batchSize)) await runSequence(body, part, env);
      return items.filter((i) => !i.state.failed);
    },
  };
}
