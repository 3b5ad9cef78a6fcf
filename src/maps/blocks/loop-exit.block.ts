/** Loop Exit: the record leaves the innermost Loop or For Each here and goes on after it. */
import type { Block } from '../../protocol/map.js';
import type { Step } from '../runtime/context.js';

export function loopExitStep(block: Block): Step {
  return {
    block,
    run(items) {
      for (const i of items) i.exit = 'loop';
      return Promise.resolve([]);
    },
  };
}
