/** Map Exit: the record leaves the Map here; nothing after it runs for the record. */
import type { Block } from '../../protocol/map.js';
import type { Step } from '../runtime/context.js';

export function mapExitStep(block: Block): Step {
  return { block, run: () => Promise.resolve([]) };
}
