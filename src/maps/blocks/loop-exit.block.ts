/** Loop Exit: the record leaves the innermost Loop or For Each here and goes on after it. */
import type { Block } from '../../protocol/map.js';
import type { Step } from '../runtime/context.js';
import type { BlockKind } from './registry.js';

export function loopExitStep(block: Block): Step {
  return {
    block,
    run(items) {
      for (const i of items) i.exit = 'loop';
      return Promise.resolve([]);
    },
  };
}

export const loopExitKind: BlockKind = {
  type: 'LoopExit',
  inLoop: true,
  bind: (block) => loopExitStep(block),
};
