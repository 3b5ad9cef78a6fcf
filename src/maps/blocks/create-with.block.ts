/** CreateWith: creates the record and, through the entity's one-to-many relationships, its child records (see write-with.ts). */
import type { Step } from '../runtime/context.js';
import { writeWithStep, type WriteWithSpec } from './write-with.js';

export function createWithStep(spec: Omit<WriteWithSpec, 'parentAction' | 'childAction'>): Step {
  return writeWithStep({ ...spec, parentAction: 'Create', childAction: 'Create' });
}
