/** Create: writes each record to the entity (keys from the lookup conditions, else the primary key); bulk when the Action supports it. */
import type { Step } from '../runtime/context.js';
import type { BlockKind } from './registry.js';
import { checkRequiredMappings, writeSpec, writeStep, type WriteStepSpec } from './write.js';

export function createStep(spec: Omit<WriteStepSpec, 'action'>): Step {
  return writeStep({ ...spec, action: 'Create' });
}

export const createKind: BlockKind = {
  type: 'Create',
  connection: 'entity',
  entityAction: 'Create',
  checkEntity: checkRequiredMappings,
  bind: (block, cx) => createStep(writeSpec(block, cx)),
};
