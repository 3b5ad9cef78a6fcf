import type { Kysely } from 'kysely';
import { endpointUrl } from '../../solutions/map-info.js';
import { connectionsOf, idsOf, type MapView } from '../../solutions/maps.js';
import { messageEndpointsRepo } from '../../store/repos/message-endpoints.repo.js';
import type { Database, MapRevisionRow, MapRow } from '../../store/schema.js';
import { fromFlag } from '../../util/values.js';
import type { MapAnswer, MapLink, MapRevision } from '../schemas/map.schema.js';

/** The event URLs of Maps by Map ID, for their links (`eventUrl`); a Map without an endpoint has none. */
export type EventUrls = ReadonlyMap<number, string>;

/**
 * The event URLs of those of the Maps that have a Message Endpoint (made when their Solution is
 * prepared). `baseUrl` is asked only when one has (it reads the request's Host).
 */
export async function eventUrlsOf(
  db: Kysely<Database>,
  orgId: number,
  mapIds: readonly number[],
  baseUrl: () => string,
): Promise<EventUrls> {
  const endpoints = await messageEndpointsRepo(db).forMaps(orgId, mapIds);
  if (endpoints.size === 0) return new Map();
  const base = baseUrl();
  return new Map([...endpoints].map(([mapId, e]) => [mapId, endpointUrl(base, orgId, e)]));
}

/** A Map's link: the Solution's mapLinks entries and GET …/maplinks/{mapId}; `eventUrl` that of its endpoint. */
export function toMapLink(row: MapRow, eventUrl: string | null = null): MapLink {
  return {
    id: row.id,
    index: row.linkIndex,
    name: row.name,
    enabled: fromFlag(row.enabled),
    valid: fromFlag(row.valid),
    mapType: row.mapType,
    sources: idsOf(row.sources),
    targets: idsOf(row.targets),
    lockedBy: row.lockedBy,
    lockDate: row.lockDate,
    eventUrl,
    lastModified: row.lastModificationDate,
    modifiedBy: row.modifiedBy,
    description: row.description,
  };
}

/** The API model of a Map at the revision read; the Connections' names and types are not filled yet. */
export function toMap({ row, revision, model }: MapView): MapAnswer {
  const [starter] = model.blocks;
  const { targets } = connectionsOf(model);
  return {
    id: row.id,
    name: model.name,
    description: model.description ?? '',
    mapType: model.mapType ?? row.mapType,
    version: model.version,
    revision: revision.revision,
    revisionDate: revision.revisionDate,
    revisionComment: revision.comment,
    valid: fromFlag(row.valid),
    lastModificationDate: row.lastModificationDate,
    lastRunDate: model.lastRunDate ?? null,
    lockedBy: row.lockedBy,
    lockDate: row.lockDate,
    netChange: starter?.netChange !== undefined,
    netChangeFieldName: starter?.netChange?.fieldName ?? null,
    startingBlockId: starter?.blockId ?? null,
    targetConnections: targets.map((connectionId) => ({
      connectionId,
      connectionAlias: null,
      connectionName: null,
      connectionType: null,
    })),
    sourceConnectionId: starter?.connectionId ?? null,
    sourceConnectionName: null,
    sourceConnectionAlias: null,
    sourceConnectionType: null,
    batchSize: model.batchSize ?? null,
    blocks: model.blocks.map((b) => ({ ...b })),
  };
}

/** One entry of a Map's revision list. */
export function toMapRevision(rev: MapRevisionRow): MapRevision {
  return {
    id: rev.mapId,
    revision: rev.revision,
    revisionDate: rev.revisionDate,
    revisionComment: rev.comment,
    comment: rev.comment,
    modifiedBy: rev.modifiedBy,
  };
}
