/** Update: writes each record to the entity (keys from the lookup conditions, else the primary key); bulk when the Action supports it. */
import { writeStep, type WriteStepSpec } from './write.js';
import type { Step } from '../runtime/context.js';

export function updateStep(spec: Omit<WriteStepSpec, 'action'>): Step {
  return writeStep({ ...spec, action: 'Update' });
}
