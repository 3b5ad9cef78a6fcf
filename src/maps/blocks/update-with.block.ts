/**
 * UpdateWith: updates the record (found by its `=` lookup conditions, else the primary key) and
 * upserts its child records through the entity's one-to-many relationships (see write-with.ts):
 * children with an existing primary key are updated, the others inserted, none deleted.
 */
import type { Step } from '../runtime/context.js';
import type { BlockKind } from './registry.js';
import { checkChildWrites, writeWithSpec, writeWithStep, type WriteWithSpec } from './write-with.js';
import { checkKeyed, keyConditions } from './write.js';

export function updateWithStep(spec: Omit<WriteWithSpec, 'parentAction' | 'childAction'>): Step {
  return writeWithStep({ ...spec, parentAction: 'Update', childAction: 'Upsert' });
}

export const updateWithKind: BlockKind = {
  type: 'UpdateWith',
  connection: 'entity',
  entityAction: 'Update',
  check: checkKeyed,
  checkChildren: (block, entity, cx) => checkChildWrites(block, entity, cx, 'Upsert'),
  bind: (block, cx) => updateWithStep(writeWithSpec(block, cx, keyConditions(block))),
};
