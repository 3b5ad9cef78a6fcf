/**
 * Pieces of a Connector's metadata document (src/protocol/metadata.ts) for tests whose played
 * Agents answer `loadMetadata`: an action, and a field (an integer primary key, or text).
 */
export const metadataAction = (name: string, blockType: string) => ({
  action: name,
  operationName: name,
  blockType,
  supportsBulk: true,
  supportsConstraints: name === 'Query',
  supportsInput: name !== 'Query',
  supportsLookupConditions: false,
  supportsRelations: false,
  supportsMultipleRecordOperations: false,
  supportsSequences: false,
});

export const metadataField = (fullName: string, ordinal: number, pk: boolean) => ({
  name: fullName,
  fullName,
  originalName: fullName,
  description: '',
  isPrimaryKey: pk,
  nullable: !pk,
  size: pk ? 8 : 0,
  ordinal,
  propertyType: pk ? 'integer' : 'string',
  nativeType: pk ? 'INTEGER' : 'TEXT',
  hasDefault: false,
  requiredInActionInput: false,
  usedInLookupCondition: true,
  usedInActionInput: true,
  usedInQueryConstraint: true,
  usedInQuerySelect: true,
});
