/** CreateWith: creates the record and, through the entity's one-to-many relationships, its child records (see write-with.ts). */
import type { Step } from '../runtime/context.js';
import type { BlockKind } from './registry.js';
import { checkChildWrites, writeWithSpec, writeWithStep, type WriteWithSpec } from './write-with.js';
import { checkRequiredMappings } from './write.js';

export function createWithStep(spec: Omit<WriteWithSpec, 'parentAction' | 'childAction'>): Step {
  return writeWithStep({ ...spec, parentAction: 'Create', childAction: 'Create' });
}

export const createWithKind: BlockKind = {
  type: 'CreateWith',
  connection: 'entity',
  entityAction: 'Create',
  checkEntity: checkRequiredMappings,
  checkChildren: (block, entity, cx) => checkChildWrites(block, entity, cx, 'Create'),
  // The parent is created: its lookup conditions find nothing.
  bind: (block, cx) => createWithStep(writeWithSpec(block, cx, [])),
};
