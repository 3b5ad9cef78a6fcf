import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import type { EntityMetadata, Relationship } from '../../src/connectors/sdk.js';
import { FerryError } from '../../src/errors/ferry-error.js';
import { findEntity, findRelationship } from '../../src/maps/metadata.js';
import { MESSAGE_STARTERS, walkBlocks, type Block, type MapModel } from '../../src/protocol/map.js';
import type { ConnectionMetadata } from '../connections/metadata.js';
import { getConnection } from '../store/repos/connections.repo.js';
import { messageEndpointsRepo, type EndpointKind } from '../store/repos/message-endpoints.repo.js';
import { getSolution } from '../store/repos/solutions.repo.js';
import type { Database, OrgRow } from '../store/schema.js';
import type { MapView } from './maps.js';
import { solutionNotFound } from './solutions.js';

/** The event information of a Map that begins with Wait For Message or Wait For Request. */
export interface MapEventInfo {
  readonly mapId: number;
  readonly entityName: string;
  readonly mapName: string;
  readonly mapDescription: string;
  /** Where callers POST their messages (requests), with `?accesstoken=` the Organization's event token. */
  readonly eventUrl: string;
  readonly messageCount: number;
  readonly createDateTime: string;
  readonly lastModificationDate: string;
}

/**
 * The URL callers POST a Map's messages (requests) to: the endpoint's `urlMapId`, which stays when
 * the Map is deleted and a new Map of its name takes the endpoint over (DESIGN.md "Events").
 */
export function endpointUrl(
  baseUrl: string,
  orgId: number,
  endpoint: { readonly kind: EndpointKind; readonly urlMapId: number },
): string {
  return `${baseUrl}/v1/orgs/${orgId}/${endpoint.kind === 'request' ? 'requests' : 'messages'}/${endpoint.urlMapId}`;
}

export interface MapInfoOptions {
  readonly db: Kysely<Database>;
  readonly metadata: ConnectionMetadata;
}

/**
 * What a Map selects, read through its Connections' metadata: the relationships of its Query or
 * of one Block (SPEC.md `GET …/maps/{mapId}/relationships`), and the event information of a
 * message or request Map (`GET …/maps/{mapId}/eventinfo`).
 */
export class MapInfo {
  constructor(private readonly opts: MapInfoOptions) {}

  /**
   * The relationships the Block (default: the Map's starter) selects, as its entity's metadata
   * describes them, in the Block's order; POLL like every metadata read (404 while it loads).
   * A selected name the metadata lacks is left out (validate reports it). Answered as the Block's
   * entity with only those relationships; undefined when it selects none.
   */
  async relationships(
    log: FastifyBaseLogger,
    org: OrgRow,
    view: MapView,
    blockId: string | undefined,
    agentId: string | undefined,
  ): Promise<EntityMetadata | undefined> {
    const { model } = view;
    const block =
      blockId === undefined
        ? model.blocks[0]
        : [...walkBlocks(model.blocks)].find((b) => b.blockId.toLowerCase() === blockId.toLowerCase());
    if (!block)
      throw new FerryError('API_NOT_FOUND', `Map ${view.row.id} has no Block ${blockId ?? ''}.`, {
        details: { mapId: view.row.id, blockId },
      });
    const { names, owner } = selection(model, block);
    if (names.length === 0 || !owner?.connectionId) return undefined;
    const conn = await getConnection(this.opts.db, org.id, owner.connectionId);
    if (!conn)
      throw new FerryError(
        'API_NOT_FOUND',
        `Connection ${owner.connectionId} of Block ${owner.name} was not found in Organization ${org.id}.`,
      );
    const solution = await getSolution(this.opts.db, org.id, view.row.solutionId);
    if (!solution) throw solutionNotFound(org.id, view.row.solutionId);
    const entity = findEntity(await this.opts.metadata.of(log, org, conn, agentId ?? solution.agentId), owner.entity);
    if (!entity) return undefined;
    return {
      ...entity,
      relationships: names.map((n) => findRelationship(entity, n)).filter((r): r is Relationship => r !== undefined),
    };
  }

  /**
   * The event information of a Map that waits for messages (or requests); 400 for any other Map.
   * Once prepared the Map has its endpoint, whose URL, count and dates are answered; before, the
   * URL its endpoint will get and no message.
   */
  async eventInfo(org: OrgRow, view: MapView, baseUrl: string): Promise<MapEventInfo> {
    const { row, model } = view;
    const [starter] = model.blocks;
    if (!starter || !MESSAGE_STARTERS.includes(starter.blockType)) {
      throw new FerryError(
        'API_UNSUPPORTED',
        `Map ${row.name} (${row.id}) is not a message Map: it begins with a ${starter?.blockType ?? 'missing'} Block. Event information exists for Maps that begin with Wait For Message (or Wait For Request).`,
        { details: { mapId: row.id } },
      );
    }
    const kind: EndpointKind = starter.blockType === 'WaitForRequest' ? 'request' : 'message';
    const found = await messageEndpointsRepo(this.opts.db).forMap(org.id, row.id);
    // An endpoint of the other kind is the Map's before its first Block changed: prepare replaces it.
    const endpoint = found?.kind === kind ? found : undefined;
    return {
      mapId: row.id,
      entityName: starter.entity ?? starter.name,
      mapName: row.name,
      mapDescription: row.description,
      eventUrl: endpointUrl(baseUrl, org.id, endpoint ?? { kind, urlMapId: row.id }),
      messageCount: endpoint?.messageCount ?? 0,
      createDateTime: endpoint?.createdAt ?? row.creationDate,
      lastModificationDate: endpoint?.modifiedAt ?? row.lastModificationDate,
    };
  }
}

/** The relationship names a Block selects and the Block whose entity they belong to. */
function selection(model: MapModel, block: Block): { names: string[]; owner: Block | undefined } {
  if (block.relationships?.length) return { names: block.relationships, owner: block };
  if (block.blockType === 'ForEachChild' && block.relationship) {
    const source = block.source ?? model.blocks[0]?.name;
    const owner = [...walkBlocks(model.blocks)].find((b) => b.name.toLowerCase() === source?.toLowerCase());
    return { names: [block.relationship], owner };
  }
  if (block.children?.length) return { names: block.children.map((c) => c.relationship), owner: block };
  return { names: [], owner: undefined };
}
