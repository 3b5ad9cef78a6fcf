/** Delete: writes each record to the entity (keys from the lookup conditions, else the primary key); bulk when the Action supports it. */
import type { Step } from '../runtime/context.js';
import type { BlockKind } from './registry.js';
import { checkKeyed, writeSpec, writeStep, type WriteStepSpec } from './write.js';

export function deleteStep(spec: Omit<WriteStepSpec, 'action'>): Step {
  return writeStep({ ...spec, action: 'Delete' });
}

export const deleteKind: BlockKind = {
  type: 'Delete',
  connection: 'entity',
  entityAction: 'Delete',
  check: checkKeyed,
  bind: (block, cx) => deleteStep(writeSpec(block, cx)),
};
