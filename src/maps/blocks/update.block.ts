/** Update: writes each record to the entity (keys from the lookup conditions, else the primary key); bulk when the Action supports it. */
import type { Step } from '../runtime/context.js';
import type { BlockKind } from './registry.js';
import { checkKeyed, writeSpec, writeStep, type WriteStepSpec } from './write.js';

export function updateStep(spec: Omit<WriteStepSpec, 'action'>): Step {
  return writeStep({ ...spec, action: 'Update' });
}

export const updateKind: BlockKind = {
  type: 'Update',
  connection: 'entity',
  entityAction: 'Update',
  check: checkKeyed,
  bind: (block, cx) => updateStep(writeSpec(block, cx)),
};
