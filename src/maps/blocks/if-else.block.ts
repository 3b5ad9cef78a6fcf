/** If/Else: the condition (a formula) sends each record through `then` or `else`; both go on after the Block. */
import type { Block } from '../../protocol/map.js';
import type { CompiledFormulas } from '../formula/evaluator.js';
import { runSequence, type Item, type Step } from '../runtime/context.js';
import { evaluateItems } from '../runtime/formulas.js';
import type { BlockKind } from './registry.js';

export function ifElseStep(
  block: Block,
  condition: CompiledFormulas,
  thenSteps: readonly Step[],
  elseSteps: readonly Step[],
): Step {
  return {
    block,
    async run(items, env) {
      const { values, errors } = await evaluateItems(condition, items, env);
      const yes: Item[] = [];
      const no: Item[] = [];
      items.forEach((item, i) => {
        const err = errors.get(i);
        if (err) return env.fail(item, block, err);
        (values[i]?.[0] === true ? yes : no).push(item);
      });
      const a = await runSequence(thenSteps, yes, env);
      const b = await runSequence(elseSteps, no, env);
      return a.concat(b);
    },
  };
}

export const ifElseKind: BlockKind = {
  type: 'IfElse',
  check(block, cx) {
    if (!block.condition) cx.error('MAP_MODEL_INVALID', `${block.name}: an If/Else Block needs a condition.`);
  },
  bind: (block, cx) =>
    ifElseStep(
      block,
      cx.compile(block, [['condition', block.condition ?? 'false']]),
      cx.steps(block.then),
      cx.steps(block.else),
    ),
};
