/** Map Exit: the record leaves the Map here; nothing after it runs for the record (inside a loop, nor after the loop). */
import type { Block } from '../../protocol/map.js';
import type { Step } from '../runtime/context.js';
import type { BlockKind } from './registry.js';

export function mapExitStep(block: Block): Step {
  return {
    block,
    run(items) {
      for (const i of items) i.exit = 'map';
      return Promise.resolve([]);
    },
  };
}

export const mapExitKind: BlockKind = {
  type: 'MapExit',
  bind: (block) => mapExitStep(block),
};
