import { sql, type Kysely, type Selectable } from 'kysely';
import type { Database, MessageEndpointsTable } from '../schema.js';
import type { Db } from '../sql.js';

/** A Message Endpoint as the API shows it (SPEC.md's model; timestamps ISO-8601 UTC). */
export interface MessageEndpoint {
  id: number;
  entityName: string;
  mapName: string;
  mapDescription: string | null;
  messageCount: number;
  createDateTime: string;
  lastModificationDate: string;
}

/** What a Map's first Block waits for: Wait For Message (`message`) or Wait For Request (`request`). */
export type EndpointKind = 'message' | 'request';

/** A stored endpoint, its counters as numbers (bigint columns come back as text on PostgreSQL). */
export interface MessageEndpointRow extends Omit<
  Selectable<MessageEndpointsTable>,
  'kind' | 'messageCount' | 'queued'
> {
  kind: EndpointKind;
  messageCount: number;
  queued: number;
}

/** A message or request Map of a Solution being prepared: what its endpoint is made from. */
export interface EndpointMap {
  readonly mapId: number;
  readonly kind: EndpointKind;
  readonly name: string;
  /** The entity of its Wait For Message (Request) Block, or the Block's name when it names none. */
  readonly entityName: string;
  readonly description: string | null;
  /** Its latest revision came in by import ("Map Imported: …"): its endpoint's URL names this Map. */
  readonly imported: boolean;
}

/** What a sync did; `skipped` are Maps left without an endpoint, each with the reason. */
export interface EndpointSync {
  readonly created: number;
  readonly updated: number;
  readonly detached: number;
  readonly skipped: ReadonlyArray<{ mapId: number; reason: string }>;
}

/** What the Message Endpoint routes, the event information and the intake need from the store. */
export interface MessageEndpointRepo {
  /** One page of the Organization's endpoints, ordered by id, and how many there are in all. */
  list(orgId: number, page: { limit: number; offset: number }): Promise<{ items: MessageEndpoint[]; total: number }>;
  /**
   * Empties the endpoint's message queue (also messages an Agent run holds: they are never
   * written) and takes them off its counts; the endpoint afterwards, or undefined when the
   * Organization has no such endpoint.
   */
  clear(orgId: number, endpointId: number): Promise<MessageEndpoint | undefined>;
  /** The endpoint a URL names: `/v1/orgs/{orgId}/messages/{urlMapId}` (`kind` message) or `…/requests/…`. */
  byUrl(orgId: number, urlMapId: number, kind: EndpointKind): Promise<MessageEndpointRow | undefined>;
  /** The endpoint that the Map receives on now, if it has one. */
  forMap(orgId: number, mapId: number): Promise<MessageEndpointRow | undefined>;
  /** The endpoints of those of the Maps that have one, by Map ID. */
  forMaps(orgId: number, mapIds: readonly number[]): Promise<Map<number, MessageEndpointRow>>;
}

/**
 * The Message Endpoints of Event Solutions (SPEC.md "Events"; migration 035). Endpoints are made
 * and kept by `syncEndpoints` when a Solution is prepared; deleting a Map only detaches its
 * endpoint (`detachMapEndpoint`); deleting the Solution deletes them with their queues.
 */
export function messageEndpointsRepo(db: Kysely<Database>): MessageEndpointRepo {
  return {
    async list(orgId, page) {
      const base = db.selectFrom('messageEndpoints').where('orgId', '=', orgId);
      const rows = await base.selectAll().orderBy('id').limit(page.limit).offset(page.offset).execute();
      const { n } = await base.select((eb) => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow();
      return { items: rows.map((r) => toMessageEndpoint(rowOf(r))), total: Number(n) };
    },

    clear(orgId, endpointId) {
      return db.transaction().execute(async (tx) => {
        const found = await tx
          .selectFrom('messageEndpoints')
          .select('id')
          .where('orgId', '=', orgId)
          .where('id', '=', endpointId)
          .executeTakeFirst();
        if (!found) return undefined;
        // Messages first, the counts after: the order doneMessages locks in (no deadlock on
        // PostgreSQL), and a message stored meanwhile stays in the queue and in both counts.
        const deleted = await tx.deleteFrom('eventMessages').where('endpointId', '=', endpointId).executeTakeFirst();
        const n = Number(deleted.numDeletedRows);
        const row = await tx
          .updateTable('messageEndpoints')
          .set({
            queued: sql<number>`CASE WHEN queued > ${n} THEN queued - ${n} ELSE 0 END`,
            messageCount: sql<number>`CASE WHEN message_count > ${n} THEN message_count - ${n} ELSE 0 END`,
          })
          .where('id', '=', endpointId)
          .returningAll()
          .executeTakeFirst();
        return row ? toMessageEndpoint(rowOf(row)) : undefined;
      });
    },

    async byUrl(orgId, urlMapId, kind) {
      const row = await db
        .selectFrom('messageEndpoints')
        .selectAll()
        .where('orgId', '=', orgId)
        .where('urlMapId', '=', urlMapId)
        .where('kind', '=', kind)
        .executeTakeFirst();
      return row ? rowOf(row) : undefined;
    },

    async forMap(orgId, mapId) {
      const row = await db
        .selectFrom('messageEndpoints')
        .selectAll()
        .where('orgId', '=', orgId)
        .where('mapId', '=', mapId)
        .orderBy('id')
        .executeTakeFirst();
      return row ? rowOf(row) : undefined;
    },

    async forMaps(orgId, mapIds) {
      const out = new Map<number, MessageEndpointRow>();
      if (mapIds.length === 0) return out;
      const rows = await db
        .selectFrom('messageEndpoints')
        .selectAll()
        .where('orgId', '=', orgId)
        .where('mapId', 'in', [...new Set(mapIds)])
        .orderBy('id')
        .execute();
      for (const r of rows) if (r.mapId !== null && !out.has(r.mapId)) out.set(r.mapId, rowOf(r));
      return out;
    },
  };
}

/**
 * Brings a prepared Solution's endpoints in line with its message and request Maps (`maps`: every
 * Map of the Solution whose first Block is Wait For Message or Wait For Request), inside the
 * prepare's transaction. The rules, in the order they are applied:
 *
 * 1. An endpoint stays with the Map it points at (`map_id`) while that Map is a message or request
 *    Map: it keeps its id and URL, and takes the Map's name, kind, entity and description (a
 *    renamed Map keeps its URL). Exception: when the Map's new name and kind are those of an
 *    endpoint without a Map, the Map takes that endpoint (rule 2) and leaves its old one behind.
 * 2. A Map without an endpoint takes over an endpoint of the same Solution, kind and name (any
 *    case) whose Map is gone: same id, same URL, `map_id` now this Map. This is how a new Map of a
 *    deleted message Map's name gets its URL back (SPEC.md "Maps", DELETE).
 * 3. Any other Map gets a new endpoint whose URL names the Map's own ID (`url_map_id`). A cloned
 *    Solution has new Map IDs and none of the original's endpoints, so all its URLs are new.
 * 4. A Map whose latest revision came in by import gets the URL of its own ID even when it took
 *    an endpoint over (rule 1 or 2): the endpoint's `url_map_id` changes (SPEC.md "Events" 4).
 * 5. An endpoint no Map took keeps its id, URL, counts and queue with `map_id` null; its name
 *    stays, so that a Map of that name takes it over later.
 *
 * `modified_at` changes only when something of the endpoint did. Two Maps of one kind and name in
 * a Solution share nothing: the first in the list gets the endpoint, the other none (`skipped`).
 * A URL can name a Map ID only once in an Organization: a Map whose own ID another endpoint's URL
 * already names (it was taken over while the Map was no message Map) is skipped too, and an
 * imported Map in that case keeps the URL it had.
 */
export async function syncEndpoints(
  db: Db,
  opts: { orgId: number; solutionId: string; maps: readonly EndpointMap[]; now: string },
): Promise<EndpointSync> {
  const solutionId = opts.solutionId.toLowerCase();
  const existing = (
    await db.selectFrom('messageEndpoints').selectAll().where('solutionId', '=', solutionId).orderBy('id').execute()
  ).map(rowOf);
  const plan = planSync(existing, opts.maps);
  const wanted = [...plan.claims.values()].map((m) => m.mapId).concat(plan.fresh.map((m) => m.mapId));
  const urlHolders = await urlHoldersOf(db, opts.orgId, wanted);
  const skipped = [...plan.skipped];

  const changes: Array<{ row: MessageEndpointRow; next: MessageEndpointRow }> = [];
  for (const row of existing) {
    const map = plan.claims.get(row.id);
    let next: MessageEndpointRow = { ...row, mapId: null };
    if (map) {
      next = { ...row, ...fieldsOf(map) };
      if (map.imported && row.urlMapId !== map.mapId) {
        const holder = urlHolders.get(map.mapId);
        if (holder === undefined || holder === row.id) next.urlMapId = map.mapId;
        else skipped.push({ mapId: map.mapId, reason: `its ID is the URL of endpoint ${holder}; it kept its URL` });
      }
    }
    if (!sameEndpoint(row, next)) changes.push({ row, next: { ...next, modifiedAt: opts.now } });
  }
  // A renamed endpoint may take a name another one gives up in this sync: park the names first.
  for (const { row, next } of changes) {
    if (row.kind === next.kind && row.mapKey === next.mapKey) continue;
    await db
      .updateTable('messageEndpoints')
      .set({ mapKey: `\u0001${row.id}` })
      .where('id', '=', row.id)
      .execute();
  }
  for (const { next } of changes) {
    await db
      .updateTable('messageEndpoints')
      .set({
        mapId: next.mapId,
        urlMapId: next.urlMapId,
        kind: next.kind,
        mapName: next.mapName,
        mapKey: next.mapKey,
        entityName: next.entityName,
        mapDescription: next.mapDescription,
        modifiedAt: next.modifiedAt,
      })
      .where('id', '=', next.id)
      .execute();
  }
  let created = 0;
  for (const map of plan.fresh) {
    const holder = urlHolders.get(map.mapId);
    if (holder !== undefined) {
      skipped.push({ mapId: map.mapId, reason: `its ID is the URL of endpoint ${holder}` });
      continue;
    }
    await db
      .insertInto('messageEndpoints')
      .values({
        orgId: opts.orgId,
        solutionId,
        urlMapId: map.mapId,
        ...fieldsOf(map),
        createdAt: opts.now,
        modifiedAt: opts.now,
      })
      .execute();
    created += 1;
  }
  const detached = changes.filter((c) => c.row.mapId !== null && c.next.mapId === null).length;
  return { created, updated: changes.length - detached, detached, skipped };
}

/** Detaches the endpoint of a Map being deleted: it keeps its id, URL and queue for a Map of its name. */
export async function detachMapEndpoint(db: Db, mapId: number, now: string): Promise<void> {
  await db.updateTable('messageEndpoints').set({ mapId: null, modifiedAt: now }).where('mapId', '=', mapId).execute();
}

/** The API model of an endpoint. */
export function toMessageEndpoint(row: MessageEndpointRow): MessageEndpoint {
  return {
    id: row.id,
    entityName: row.entityName,
    mapName: row.mapName,
    mapDescription: row.mapDescription,
    messageCount: row.messageCount,
    createDateTime: row.createdAt,
    lastModificationDate: row.modifiedAt,
  };
}

/** Which endpoint each Map takes (by endpoint ID), which Maps get a new one, and which none. */
function planSync(
  existing: readonly MessageEndpointRow[],
  maps: readonly EndpointMap[],
): { claims: Map<number, EndpointMap>; fresh: EndpointMap[]; skipped: Array<{ mapId: number; reason: string }> } {
  const skipped: Array<{ mapId: number; reason: string }> = [];
  const named = new Set<string>();
  const distinct: EndpointMap[] = [];
  for (const m of maps) {
    const key = `${m.kind}:${m.name.toLowerCase()}`;
    if (named.has(key)) skipped.push({ mapId: m.mapId, reason: `another ${m.kind} Map is named ${m.name}` });
    else {
      named.add(key);
      distinct.push(m);
    }
  }
  const live = new Set(distinct.map((m) => m.mapId));
  const orphan = (r: MessageEndpointRow) => r.mapId === null || !live.has(r.mapId);
  const orphanNamed = (m: EndpointMap) =>
    existing.find((r) => orphan(r) && r.kind === m.kind && r.mapKey === m.name.toLowerCase());
  const claims = new Map<number, EndpointMap>();
  const placed = new Set<number>();
  // Rule 1: a Map keeps its own endpoint, unless it now has the name of an orphan (rule 2 then).
  for (const m of distinct) {
    const own = existing.find((r) => r.mapId === m.mapId && !claims.has(r.id));
    if (!own) continue;
    const renamed = own.kind !== m.kind || own.mapKey !== m.name.toLowerCase();
    if (renamed && orphanNamed(m)) continue;
    claims.set(own.id, m);
    placed.add(m.mapId);
  }
  // Rule 2: the endpoint of a gone Map, by kind and name.
  for (const m of distinct) {
    if (placed.has(m.mapId)) continue;
    const taken = orphanNamed(m);
    if (taken && !claims.has(taken.id)) {
      claims.set(taken.id, m);
      placed.add(m.mapId);
    }
  }
  return { claims, fresh: distinct.filter((m) => !placed.has(m.mapId)), skipped };
}

/** The endpoints (by ID) whose URLs name these Map IDs, in the whole Organization. */
async function urlHoldersOf(db: Db, orgId: number, mapIds: readonly number[]): Promise<Map<number, number>> {
  if (mapIds.length === 0) return new Map();
  const rows = await db
    .selectFrom('messageEndpoints')
    .select(['id', 'urlMapId'])
    .where('orgId', '=', orgId)
    .where('urlMapId', 'in', [...new Set(mapIds)])
    .execute();
  return new Map(rows.map((r) => [r.urlMapId, r.id]));
}

function fieldsOf(m: EndpointMap) {
  return {
    mapId: m.mapId,
    kind: m.kind,
    mapName: m.name,
    mapKey: m.name.toLowerCase(),
    entityName: m.entityName,
    mapDescription: m.description,
  };
}

function sameEndpoint(a: MessageEndpointRow, b: MessageEndpointRow): boolean {
  return (
    a.mapId === b.mapId &&
    a.urlMapId === b.urlMapId &&
    a.kind === b.kind &&
    a.mapName === b.mapName &&
    a.mapKey === b.mapKey &&
    a.entityName === b.entityName &&
    a.mapDescription === b.mapDescription
  );
}

function rowOf(r: Selectable<MessageEndpointsTable>): MessageEndpointRow {
  return {
    ...r,
    id: Number(r.id),
    urlMapId: Number(r.urlMapId),
    mapId: r.mapId === null ? null : Number(r.mapId),
    kind: r.kind === 'request' ? 'request' : 'message',
    messageCount: Number(r.messageCount),
    queued: Number(r.queued),
  };
}
