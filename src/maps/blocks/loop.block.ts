/**
 * Loop: runs its body on the record again and again while the `condition` formula is true. The
 * Block's name reads `index`, the number of iterations done so far (0 before the first), in the
 * condition and the body. Bindings made in the body last into the next iteration and after the
 * Loop. A record still looping after `maxIterations` iterations fails with RUN_LOOP_LIMIT.
 *
 *   condition? ──true──▶ body ──▶ (Continue, or the body's end) ──▶ condition? …
 *       │ false                └─ Loop Exit ─┐
 *       ▼                                    ▼
 *   after the Loop ◀─────────────────────────┘
 */
import { DEFAULT_LOOP_ITERATIONS, type Block } from '../../protocol/map.js';
import type { CompiledFormulas } from '../formula/evaluator.js';
import { runSequence, type Item, type Step } from '../runtime/context.js';
import { evaluateItems } from '../runtime/formulas.js';
import type { BlockKind } from './registry.js';

export function loopStep(block: Block, condition: CompiledFormulas, body: readonly Step[]): Step {
  const max = block.maxIterations ?? DEFAULT_LOOP_ITERATIONS;
  return {
    block,
    async run(items, env) {
      const done = new Set<Item>();
      let live = items;
      for (let n = 0; live.length > 0 && !env.signal.aborted; n++) {
        for (const item of live) item.ctx[block.name] = { index: n };
        const { values, errors } = await evaluateItems(condition, live, env);
        const again: Item[] = [];
        live.forEach((item, i) => {
          const err = errors.get(i);
          if (err) return env.fail(item, block, err);
          if (values[i]?.[0] !== true) return void done.add(item);
          if (n >= max) {
            return env.fail(item, block, {
              code: 'RUN_LOOP_LIMIT',
              kind: 'config',
              message: `${block.name}: the loop condition was still true after ${max} iterations; raise maxIterations or correct the condition.`,
              details: { blockId: block.blockId, maxIterations: max },
            });
          }
          again.push(item);
        });
        const through = new Set(await runSequence(body, again, env));
        live = [];
        for (const item of again) {
          if (item.state.failed) continue;
          if (through.has(item) || item.exit === 'continue') {
            item.exit = undefined;
            live.push(item);
          } else if (item.exit === 'loop') {
            item.exit = undefined;
            done.add(item);
          }
          // exit 'map': the record has left the Map
        }
      }
      return items.filter((i) => done.has(i) && !i.state.failed);
    },
  };
}

export const loopKind: BlockKind = {
  type: 'Loop',
  check(block, cx) {
    if (!block.condition) cx.error('MAP_MODEL_INVALID', `${block.name}: a Loop needs a condition.`);
    // The condition and the body read the Loop's index.
    cx.scope.set(block.name, { fields: ['index'], batched: false, blockType: 'Loop' });
  },
  bind: (block, cx) =>
    loopStep(block, cx.compile(block, [['condition', block.condition ?? 'false']]), cx.steps(block.body)),
};
