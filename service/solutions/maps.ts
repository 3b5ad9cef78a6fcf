import type { Kysely } from 'kysely';
import { FerryError, invalid } from '../../src/errors/ferry-error.js';
import { walkBlocks, type MapModel } from '../../src/protocol/map.js';
import { upgradeMap } from '../../src/maps/compiler/upgrade.js';
import { deleteMap, getMap, getMapRevision, insertMap, insertMapRevision, listMaps, updateMap } from '../store/repos/maps.repo.js';
import { getSolution, updateSolution } from '../store/repos/solutions.repo.js';
import type { Database, MapRevisionRow, MapRow, OrgRow, SolutionRow } from '../store/schema.js';
import { isUniqueViolation } from '../store/sql.js';
import { nowIso } from '../util/values.js';
import { solutionNotFound } from './solutions.js';

/** The map type a model without one gets. */
export const DEFAULT_MAP_TYPE = 'IntegrationServicesAdvancedMap';

/** The comment of a Map's first revision when the client gives none. */
export const INITIAL_REVISION_COMMENT = 'Initial Revision';

/** A Map as read: its row, the revision read and that revision's model. */
export interface MapView {
  readonly row: MapRow;
  readonly revision: MapRevisionRow;
  readonly model: MapModel;
}

export interface MapListQuery {
  /** Part of the name, any case. */
  readonly name?: string | undefined;
  readonly limit: number;
  readonly offset: number;
}

export interface SolutionMapsOptions {
  readonly db: Kysely<Database>;
}

export const mapNotFound = (solutionId: string, id: number): FerryError => new FerryError('API_NOT_FOUND', `Map ${id} was not found in Solution ${solutionId}.`);

/** 400 API_VALIDATION naming one field. */
const invalidField = (path: string, message: string, detail: string): FerryError => invalid(detail, [{ path, message }]);

/** The Connection IDs a Map reads from (its starter's) and writes to (every other Block's), each once. */
export function connectionsOf(model: MapModel): { sources: string[]; targets: string[] } {
  const [starter] = model.blocks;
  const sources = starter?.connectionId ? [starter.connectionId] : [];
  const targets: string[] = [];
  for (const b of walkBlocks(model.blocks)) {
    if (b === starter || !b.connectionId || targets.includes(b.connectionId)) continue;
    targets.push(b.connectionId);
  }
  return { sources, targets };
}

/** The stored JSON array of Connection IDs (sources, targets) of a row. */
export function idsOf(json: string): string[] {
  try {
    const v: unknown = JSON.parse(json);
    return Array.isArray(v) ? v.filter((x): x is string => typeof x === 'string') : [];
  } catch {
    return [];
  }
}

/**
 * The Maps of an Integration, Migration or Integration Event Solution (SPEC.md "Maps"): each save
 * (the advanced create and modify) stores the model as a new numbered revision, a model of an
 * older version (the original service's 2.5 export) upgraded to 3.0 first. Adding, saving or
 * deleting a Map makes its Solution Incomplete until prepared. `valid` stays false until a
 * validation against the Connections' metadata (prepare) says otherwise.
 */
export class SolutionMaps {
  constructor(private readonly opts: SolutionMapsOptions) {}

  private async solution(orgId: number, solutionId: string): Promise<SolutionRow> {
    const row = await getSolution(this.opts.db, orgId, solutionId);
    if (!row) throw solutionNotFound(orgId, solutionId);
    return row;
  }

  private async requireMap(orgId: number, solutionId: string, id: number): Promise<{ solution: SolutionRow; row: MapRow }> {
    const solution = await this.solution(orgId, solutionId);
    const row = await getMap(this.opts.db, solution.id, id);
    if (!row) throw mapNotFound(solution.id, id);
    return { solution, row };
  }

  private async view(row: MapRow, revision?: number): Promise<MapView> {
    const rev = await getMapRevision(this.opts.db, row.id, revision);
    if (!rev) throw new FerryError('API_NOT_FOUND', `Map ${row.id} has no revision ${revision ?? row.revision}.`);
    return { row, revision: rev, model: upgradeMap(JSON.parse(rev.model)) };
  }

  /** The Solution's Maps in run order, each at its latest revision. */
  async list(orgId: number, solutionId: string, q: MapListQuery): Promise<{ items: MapView[]; total: number }> {
    const solution = await this.solution(orgId, solutionId);
    const { rows, total } = await listMaps(this.opts.db, solution.id, { nameContains: q.name, page: q });
    return { items: await Promise.all(rows.map((r) => this.view(r))), total };
  }

  /** A Map at its latest revision, or at `revision`. */
  async get(orgId: number, solutionId: string, id: number, revision?: number): Promise<MapView> {
    const { row } = await this.requireMap(orgId, solutionId, id);
    return this.view(row, revision);
  }

  /** A Map's link: its row (the Solution model's mapLinks entries are the same). */
  async link(orgId: number, solutionId: string, id: number): Promise<MapRow> {
    return (await this.requireMap(orgId, solutionId, id)).row;
  }

  /** Creates a Map at the end of the Solution's run order: revision 1, lastRunDate null. */
  async create(org: OrgRow, solutionId: string, body: unknown, comment: string | undefined, by: string): Promise<MapView> {
    const solution = await this.solution(org.id, solutionId);
    refuseReplication(solution);
    const model: MapModel = { ...modelOf(body), lastRunDate: null };
    const { rows } = await listMaps(this.opts.db, solution.id);
    const now = nowIso();
    const id = await this.opts.db.transaction().execute(async (tx) => {
      const mapId = await insertMap(tx, {
        solutionId: solution.id,
        orgId: org.id,
        linkIndex: rows.length,
        enabled: 1,
        ...summaryOf(model),
        revision: 1,
        valid: 0,
        creationDate: now,
        lastModificationDate: now,
        modifiedBy: by,
      });
      await insertMapRevision(tx, { mapId, revision: 1, model: JSON.stringify({ ...model, mapId }), comment: commentOf(body, comment) ?? INITIAL_REVISION_COMMENT, revisionDate: now, modifiedBy: by });
      await updateSolution(tx, org.id, solution.id, { prepared: 0, prepareState: null });
      return mapId;
    });
    return this.get(org.id, solution.id, id);
  }

  /** Saves a Map's model as its next revision. */
  async save(org: OrgRow, solutionId: string, id: number, body: unknown, comment: string | undefined, by: string): Promise<MapView> {
    const { solution, row } = await this.requireMap(org.id, solutionId, id);
    const model = modelOf(body);
    const now = nowIso();
    const revision = row.revision + 1;
    try {
      await this.opts.db.transaction().execute(async (tx) => {
        await insertMapRevision(tx, { mapId: row.id, revision, model: JSON.stringify({ ...model, mapId: row.id }), comment: commentOf(body, comment) ?? '', revisionDate: now, modifiedBy: by });
        await updateMap(tx, row.id, { ...summaryOf(model), revision, valid: 0, lastModificationDate: now, modifiedBy: by });
        await updateSolution(tx, org.id, solution.id, { prepared: 0, prepareState: null });
      });
    } catch (err) {
      // Two saves of one Map at once both took the next number: the revision's key lets one through.
      if (isUniqueViolation(err)) {
        throw new FerryError('API_CONFLICT', `Map ${row.id} was saved by someone else meanwhile (revision ${revision}); read it again and save your change on top of it.`);
      }
      throw err;
    }
    return this.get(org.id, solution.id, row.id);
  }

  /** Deletes a Map with its revisions; the Maps after it move up one place. */
  async delete(orgId: number, solutionId: string, id: number): Promise<void> {
    const { solution, row } = await this.requireMap(orgId, solutionId, id);
    await this.opts.db.transaction().execute(async (tx) => {
      if (!(await deleteMap(tx, solution.id, row.id))) throw mapNotFound(solution.id, row.id);
      const { rows } = await listMaps(tx, solution.id);
      for (const [i, r] of rows.entries()) if (r.linkIndex !== i) await updateMap(tx, r.id, { linkIndex: i });
      await updateSolution(tx, orgId, solution.id, { prepared: 0, prepareState: null });
    });
  }
}

function refuseReplication(solution: SolutionRow): void {
  if (solution.solutionType === 'Replication') {
    throw new FerryError('API_VALIDATION', `Solution ${solution.name} is a Replication Solution: it copies the entities it selects and holds no Maps.`, {
      errors: [{ path: 'solutionId', message: 'a Replication Solution holds no Maps' }],
    });
  }
}

/** The body's model at version 3.0 (upgraded when older); Basic and SysController Maps are refused. */
function modelOf(body: unknown): MapModel {
  const model = upgradeMap(body);
  const type = model.mapType ?? DEFAULT_MAP_TYPE;
  if (/basic|syscontroller/i.test(type)) {
    throw invalidField('body.mapType', 'unsupported map type', `Map type ${type} is not supported: build the Map as an advanced Map (${DEFAULT_MAP_TYPE}).`);
  }
  if (/^replication/i.test(type)) throw invalidField('body.mapType', 'only Replication Solutions have this type', `Map type ${type} belongs to Replication Solutions.`);
  return { ...model, mapType: type };
}

/** The comment of a save: the query string's, else a `comment` string at the top of the body. */
function commentOf(body: unknown, comment: string | undefined): string | undefined {
  if (comment !== undefined) return comment;
  const c = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['comment'] : undefined;
  return typeof c === 'string' ? c.slice(0, 4000) : undefined;
}

function summaryOf(model: MapModel): Pick<MapRow, 'name' | 'description' | 'mapType' | 'sources' | 'targets'> {
  const { sources, targets } = connectionsOf(model);
  return { name: model.name, description: model.description ?? '', mapType: model.mapType ?? DEFAULT_MAP_TYPE, sources: JSON.stringify(sources), targets: JSON.stringify(targets) };
}

