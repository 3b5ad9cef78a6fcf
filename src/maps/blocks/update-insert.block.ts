/** UpdateInsert: writes each record to the entity (keys from the lookup conditions, else the primary key); bulk when the Action supports it. */
import type { Step } from '../runtime/context.js';
import type { BlockKind } from './registry.js';
import { checkKeyed, writeSpec, writeStep, type WriteStepSpec } from './write.js';

export function updateInsertStep(spec: Omit<WriteStepSpec, 'action'>): Step {
  return writeStep({ ...spec, action: 'UpdateInsert' });
}

export const updateInsertKind: BlockKind = {
  type: 'UpdateInsert',
  connection: 'entity',
  entityAction: 'UpdateInsert',
  check: checkKeyed,
  bind: (block, cx) => updateInsertStep(writeSpec(block, cx)),
};
