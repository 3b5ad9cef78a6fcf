/**
 * UpdateWith: updates the record (found by its `=` lookup conditions, else the primary key) and
 * upserts its child records through the entity's one-to-many relationships (see write-with.ts):
 * children with an existing primary key are updated, the others inserted, none deleted.
 */
import type { Step } from '../runtime/context.js';
import { writeWithStep, type WriteWithSpec } from './write-with.js';

export function updateWithStep(spec: Omit<WriteWithSpec, 'parentAction' | 'childAction'>): Step {
  return writeWithStep({ ...spec, parentAction: 'Update', childAction: 'Upsert' });
}
