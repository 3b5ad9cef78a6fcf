import { randomUUID } from 'node:crypto';
import type * as Contract from '../../../src/protocol/metadata.js';
import type { MetadataRequestRow, OrgRow } from '../../store/schema.js';
import type { Action, Entity, Field, MetadataRequest, Relationship } from '../schemas/metadata.schema.js';
import type { z } from 'zod';

/** The API models of Connection metadata (SPEC.md "Entity, Field, Relationship, Action") from what the Agent sent. */

export function toAction(a: Contract.Action): Action {
  return {
    action: a.action,
    operationName: a.operationName,
    blockType: a.blockType,
    supportsBulk: a.supportsBulk,
    supportsConstraints: a.supportsConstraints,
    supportsInput: a.supportsInput,
    supportsLookupConditions: a.supportsLookupConditions,
    supportsRelations: a.supportsRelations,
    supportsMultipleRecordOperations: a.supportsMultipleRecordOperations,
    supportsSequences: a.supportsSequences,
  };
}

export function toField(f: Contract.Field): Field {
  return {
    name: f.name,
    fullName: f.fullName,
    originalName: f.originalName,
    description: f.description,
    isPrimaryKey: f.isPrimaryKey,
    nullable: f.nullable,
    size: f.size,
    ordinal: f.ordinal,
    presentationType: '',
    propertyType: f.propertyType,
    minOccurs: 0,
    maxOccurs: 0,
    requiredInActionInput: f.requiredInActionInput,
    usedInLookupCondition: f.usedInLookupCondition,
    usedInActionInput: f.usedInActionInput,
    usedInQueryConstraint: f.usedInQueryConstraint,
    usedInQuerySelect: f.usedInQuerySelect,
    usedInActionOutput: false,
    usedInQuerySequence: false,
    nativeType: f.nativeType,
    hasDefault: f.hasDefault,
    ...(f.scale !== undefined ? { scale: f.scale } : {}),
  };
}

/** The entity's relationships with fresh grouping IDs: one parentId per call, one uniqueId each. */
export function toRelationships(e: Contract.EntityMetadata): Relationship[] {
  const parentId = randomUUID();
  return e.relationships.map((r) => ({
    name: r.name,
    fullName: r.fullName,
    description: r.description,
    path: r.path,
    thisEntityFullName: r.thisEntityFullName,
    relatedEntityFullName: r.relatedEntityFullName,
    thisProperties: r.thisProperties,
    relatedProperties: r.relatedProperties,
    relationshipType: r.relationshipType,
    parentId,
    uniqueId: randomUUID(),
  }));
}

export function toEntity(e: Contract.EntityMetadata, expand: boolean): Entity {
  const base: Entity = {
    id: e.id,
    name: e.name,
    fullName: e.fullName,
    originalName: e.originalName,
    description: e.description,
    isHidden: e.isHidden,
    actions: e.actions.map(toAction),
  };
  return expand ? { ...base, fields: e.fields.map(toField), relationships: toRelationships(e) } : base;
}

export function toMetadataRequest(
  org: Pick<OrgRow, 'tenantId'>,
  r: MetadataRequestRow,
): z.infer<typeof MetadataRequest> {
  return {
    id: r.id,
    agentId: r.agentId,
    tenantId: org.tenantId,
    objectDefinitionId: r.connectionId,
    objectName: r.objectName,
    startDate: r.startDate,
    endDate: r.endDate,
    state: r.state,
    errorMessage: r.errorMessage,
  };
}
