/** Upsert: writes each record to the entity (keys from the lookup conditions, else the primary key); bulk when the Action supports it. */
import type { Step } from '../runtime/context.js';
import type { BlockKind } from './registry.js';
import { writeSpec, writeStep, type WriteStepSpec } from './write.js';

export function upsertStep(spec: Omit<WriteStepSpec, 'action'>): Step {
  return writeStep({ ...spec, action: 'Upsert' });
}

export const upsertKind: BlockKind = {
  type: 'Upsert',
  connection: 'entity',
  entityAction: 'Upsert',
  bind: (block, cx) => upsertStep(writeSpec(block, cx)),
};
