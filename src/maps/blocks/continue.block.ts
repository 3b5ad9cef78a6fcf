/** Continue: ends the current iteration of the innermost Loop or For Each for the record; the next one begins. */
import type { Block } from '../../protocol/map.js';
import type { Step } from '../runtime/context.js';
import type { BlockKind } from './registry.js';

export function continueStep(block: Block): Step {
  return {
    block,
    run(items) {
      for (const i of items) i.exit = 'continue';
      return Promise.resolve([]);
    },
  };
}

export const continueKind: BlockKind = {
  type: 'Continue',
  inLoop: true,
  bind: (block) => continueStep(block),
};
