/**
 * Connection metadata as the Maps engine reads it: entities and relationships by fullName (exact,
 * then ignoring case), for the validator, the plan and the Block kinds alike.
 */
import type { ConnectionMetadata, EntityMetadata, Relationship } from '../connectors/sdk.js';
import type { Block } from '../protocol/map.js';

/** Connection metadata by connectionId. */
export type MetadataByConnection = Readonly<Record<string, ConnectionMetadata>>;

/** Finds an entity by fullName (exact, then ignoring case). */
export function findEntity(
  md: ConnectionMetadata | undefined,
  fullName: string | undefined,
): EntityMetadata | undefined {
  if (!md || !fullName) return undefined;
  return (
    md.entities.find((e) => e.fullName === fullName) ??
    md.entities.find((e) => e.fullName.toLowerCase() === fullName.toLowerCase())
  );
}

/** The relationship of an entity by fullName (exact, then ignoring case). */
export function findRelationship(
  entity: EntityMetadata | undefined,
  fullName: string | undefined,
): Relationship | undefined {
  if (!entity || !fullName) return undefined;
  return (
    entity.relationships.find((r) => r.fullName === fullName) ??
    entity.relationships.find((r) => r.fullName.toLowerCase() === fullName.toLowerCase())
  );
}

/** The metadata of the Block's Connection; undefined when it names none or it is not among the Map's. */
export function connectionOf(block: Block, metadata: MetadataByConnection): ConnectionMetadata | undefined {
  return block.connectionId ? metadata[block.connectionId] : undefined;
}

/** The Block's entity in its Connection's metadata. */
export function entityOf(block: Block, metadata: MetadataByConnection): EntityMetadata | undefined {
  return findEntity(connectionOf(block, metadata), block.entity);
}
