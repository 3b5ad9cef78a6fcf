import type { Kysely } from 'kysely';
import { FerryError, invalid } from '../../src/errors/ferry-error.js';
import { walkBlocks, type MapModel } from '../../src/protocol/map.js';
import { upgradeMap } from '../../src/maps/compiler/upgrade.js';
import {
  deleteMap,
  getMap,
  getMapRevision,
  insertMap,
  insertMapRevision,
  listMapRevisions,
  listMaps,
  updateMap,
  updateMapUnlessLocked,
} from '../store/repos/maps.repo.js';
import { detachMapEndpoint } from '../store/repos/message-endpoints.repo.js';
import { getPreparedSolution, putPreparedSolution } from '../store/repos/prepare.repo.js';
import { getSolution, updateSolution } from '../store/repos/solutions.repo.js';
import type { Database, MapRevisionRow, MapRow, OrgRow, SolutionRow } from '../store/schema.js';
import { isUniqueViolation, type Db } from '../store/sql.js';
import { nowIso } from '../util/values.js';
import type { PreparedBody } from './prepare.js';
import { solutionNotFound } from './solutions.js';

/** The map type a model without one gets. */
export const DEFAULT_MAP_TYPE = 'IntegrationServicesAdvancedMap';

/** The comment of a Map's first revision when the client gives none. */
export const INITIAL_REVISION_COMMENT = 'Initial Revision';

/** The revision comment of a Map made by clone. */
export const DUPLICATED_REVISION_COMMENT = 'Duplicated';

/** The revision comment of a revert to `revision`. */
export const revertedComment = (revision: number): string => `Reverted to revision ${revision}`;

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

export interface MapSaveOptions {
  /** Release the caller's lock once the revision is saved (the `unlockMap` flag). */
  readonly unlock?: boolean | undefined;
}

export interface SolutionMapsOptions {
  readonly db: Kysely<Database>;
}

export const mapNotFound = (solutionId: string, id: number): FerryError =>
  new FerryError('API_NOT_FOUND', `Map ${id} was not found in Solution ${solutionId}.`);

/** Whether a user other than `by` holds the Map's lock (emails compare ignoring case). */
export function lockedByOther(row: Pick<MapRow, 'lockedBy'>, by: string): boolean {
  return row.lockedBy !== null && row.lockedBy.toLowerCase() !== by.toLowerCase();
}

/** 409 MAP_LOCKED: who holds the lock since when, and how it is released. */
export function mapLocked(row: Pick<MapRow, 'id' | 'name' | 'lockedBy' | 'lockDate'>, refused: string): FerryError {
  return new FerryError(
    'MAP_LOCKED',
    `Map ${row.name} (${row.id}) is locked by ${row.lockedBy ?? '?'} since ${row.lockDate ?? '?'}, so it cannot be ${refused} by another user. ` +
      `Ask ${row.lockedBy ?? 'the holder'} to unlock it (PUT …/maps/${row.id}/lock?lockState=false), or ask an Administrator of the Organization to release the lock.`,
    { details: { mapId: row.id, lockedBy: row.lockedBy, lockDate: row.lockDate } },
  );
}

/** 400 API_VALIDATION naming one field. */
const invalidField = (path: string, message: string, detail: string): FerryError =>
  invalid(detail, [{ path, message }]);

/**
 * The Connection IDs a Map reads from (its starter's, and the broker of its messages) and writes to
 * (every other Block's), each once. A Connection in either list is in use (it cannot be deleted).
 */
export function connectionsOf(model: MapModel): { sources: string[]; targets: string[] } {
  const [starter] = model.blocks;
  const sources = starter?.connectionId ? [starter.connectionId] : [];
  const broker = starter?.messageSource?.connectionId;
  if (broker && !sources.includes(broker)) sources.push(broker);
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

  private async requireMap(
    orgId: number,
    solutionId: string,
    id: number,
  ): Promise<{ solution: SolutionRow; row: MapRow }> {
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

  /**
   * Writes a Map's next revision and the row's summary of it in one transaction. The row is
   * updated only while no other user holds the lock, so a lock taken between the caller's check
   * and this write still refuses it; two writes taking the same number answer 409.
   */
  private async writeRevision(
    org: OrgRow,
    solution: SolutionRow,
    row: MapRow,
    rev: { model: MapModel; comment: string; by: string; unlock?: boolean | undefined },
    refused: string,
  ): Promise<void> {
    const now = nowIso();
    const revision = row.revision + 1;
    try {
      await this.opts.db.transaction().execute(async (tx) => {
        await insertMapRevision(tx, {
          mapId: row.id,
          revision,
          model: JSON.stringify({ ...rev.model, mapId: row.id }),
          comment: rev.comment,
          revisionDate: now,
          modifiedBy: rev.by,
        });
        const patch = {
          ...summaryOf(rev.model),
          revision,
          valid: 0 as const,
          lastModificationDate: now,
          modifiedBy: rev.by,
          ...(rev.unlock ? { lockedBy: null, lockDate: null } : {}),
        };
        if (!(await updateMapUnlessLocked(tx, row.id, rev.by, patch))) {
          const current = await getMap(tx, solution.id, row.id);
          throw current ? mapLocked(current, refused) : mapNotFound(solution.id, row.id);
        }
        await updateSolution(tx, org.id, solution.id, { prepared: 0, prepareState: null });
      });
    } catch (err) {
      // Two saves of one Map at once both took the next number: the revision's key lets one through.
      if (isUniqueViolation(err)) {
        throw new FerryError(
          'API_CONFLICT',
          `Map ${row.id} was saved by someone else meanwhile (revision ${revision}); read it again and save your change on top of it.`,
        );
      }
      throw err;
    }
  }

  /** Inserts a Map at the end of the Solution's run order with its first revision; the Solution becomes Incomplete. */
  private async insertNew(
    org: OrgRow,
    solution: SolutionRow,
    model: MapModel,
    first: { comment: string; enabled: boolean; by: string },
  ): Promise<number> {
    const { rows } = await listMaps(this.opts.db, solution.id);
    const now = nowIso();
    return this.opts.db.transaction().execute(async (tx) => {
      const mapId = await insertMap(tx, {
        solutionId: solution.id,
        orgId: org.id,
        linkIndex: rows.length,
        enabled: first.enabled ? 1 : 0,
        ...summaryOf(model),
        revision: 1,
        valid: 0,
        creationDate: now,
        lastModificationDate: now,
        modifiedBy: first.by,
      });
      await insertMapRevision(tx, {
        mapId,
        revision: 1,
        model: JSON.stringify({ ...model, mapId }),
        comment: first.comment,
        revisionDate: now,
        modifiedBy: first.by,
      });
      await updateSolution(tx, org.id, solution.id, { prepared: 0, prepareState: null });
      return mapId;
    });
  }

  /** The Solution's Maps in run order, each at its latest revision. */
  async list(orgId: number, solutionId: string, q: MapListQuery): Promise<{ items: MapView[]; total: number }> {
    const solution = await this.solution(orgId, solutionId);
    const { rows, total } = await listMaps(this.opts.db, solution.id, { nameContains: q.name, page: q });
    return { items: await Promise.all(rows.map((r) => this.view(r))), total };
  }

  /**
   * A Map at its latest revision, or at `revision`. With `lockFor` the Map is first locked for
   * that user (the `lockMap` flag): 409 MAP_LOCKED when another user holds the lock.
   */
  async get(
    orgId: number,
    solutionId: string,
    id: number,
    revision?: number,
    opts: { lockFor?: string | undefined } = {},
  ): Promise<MapView> {
    if (opts.lockFor !== undefined) {
      const row = await this.lock(orgId, solutionId, id, true, opts.lockFor);
      return this.view(row, revision);
    }
    const { row } = await this.requireMap(orgId, solutionId, id);
    return this.view(row, revision);
  }

  /** A Map's link: its row (the Solution model's mapLinks entries are the same). */
  async link(orgId: number, solutionId: string, id: number): Promise<MapRow> {
    return (await this.requireMap(orgId, solutionId, id)).row;
  }

  /** A Map's revisions, newest first, paged. */
  async revisions(
    orgId: number,
    solutionId: string,
    id: number,
    page: { limit: number; offset: number },
  ): Promise<{ items: MapRevisionRow[]; total: number }> {
    const { row } = await this.requireMap(orgId, solutionId, id);
    const { rows, total } = await listMapRevisions(this.opts.db, row.id, page);
    return { items: rows, total };
  }

  /** Creates a Map at the end of the Solution's run order: revision 1, lastRunDate null. */
  async create(
    org: OrgRow,
    solutionId: string,
    body: unknown,
    comment: string | undefined,
    by: string,
  ): Promise<MapView> {
    const solution = await this.solution(org.id, solutionId);
    refuseReplication(solution);
    const model: MapModel = { ...modelOf(body), lastRunDate: null };
    const id = await this.insertNew(org, solution, model, {
      comment: commentOf(body, comment) ?? INITIAL_REVISION_COMMENT,
      enabled: true,
      by,
    });
    return this.get(org.id, solution.id, id);
  }

  /**
   * Saves a Map's model as its next revision. Refused with 409 MAP_LOCKED while another user
   * holds the Map's lock; `unlock` releases the caller's own lock with the save.
   */
  async save(
    org: OrgRow,
    solutionId: string,
    id: number,
    body: unknown,
    comment: string | undefined,
    by: string,
    opts: MapSaveOptions = {},
  ): Promise<MapView> {
    const { solution, row } = await this.requireMap(org.id, solutionId, id);
    if (lockedByOther(row, by)) throw mapLocked(row, 'saved');
    const model = modelOf(body);
    await this.writeRevision(
      org,
      solution,
      row,
      { model, comment: commentOf(body, comment) ?? '', by, unlock: opts.unlock },
      'saved',
    );
    return this.get(org.id, solution.id, row.id);
  }

  /**
   * Restores an earlier revision as the Map's next one ("Reverted to revision N"). The Map is not
   * valid and its Solution Incomplete until it is validated, saved and prepared again; lastRunDate
   * keeps the current value, so a net change run does not read again what it already read.
   */
  async revert(org: OrgRow, solutionId: string, id: number, revision: number, by: string): Promise<MapView> {
    const { solution, row } = await this.requireMap(org.id, solutionId, id);
    if (lockedByOther(row, by)) throw mapLocked(row, 'reverted');
    const old = await this.view(row, revision);
    const current = await this.view(row);
    const model: MapModel = { ...old.model, lastRunDate: current.model.lastRunDate ?? null };
    await this.writeRevision(org, solution, row, { model, comment: revertedComment(revision), by }, 'reverted');
    return this.get(org.id, solution.id, row.id);
  }

  /**
   * Copies a Map's latest revision as a new, disabled Map at the end of the run order, named
   * "Copy of <name> N" with the first N no Map of the Solution uses; its revision 1 says
   * "Duplicated" and its lastRunDate is null (the copy reads everything on its first run).
   */
  async clone(org: OrgRow, solutionId: string, id: number, by: string): Promise<MapView> {
    const { solution, row } = await this.requireMap(org.id, solutionId, id);
    const source = await this.view(row);
    const taken = new Set((await listMaps(this.opts.db, solution.id)).rows.map((r) => r.name.toLowerCase()));
    let n = 1;
    while (taken.has(`copy of ${source.model.name} ${n}`.toLowerCase())) n += 1;
    const model: MapModel = { ...source.model, name: `Copy of ${source.model.name} ${n}`, lastRunDate: null };
    const newId = await this.insertNew(org, solution, model, {
      comment: DUPLICATED_REVISION_COMMENT,
      enabled: false,
      by,
    });
    return this.get(org.id, solution.id, newId);
  }

  /**
   * Enables or disables a Map: a disabled Map is skipped when its Solution runs. The change also
   * goes into the Solution's prepared definition, so that the Agent's copy follows on its next
   * sync without a new prepare. Answers the Map's row and its Solution (whose Agent to sync).
   */
  async enable(
    orgId: number,
    solutionId: string,
    id: number,
    enabled: boolean,
  ): Promise<{ row: MapRow; solution: SolutionRow }> {
    const { solution, row } = await this.requireMap(orgId, solutionId, id);
    await this.opts.db.transaction().execute(async (tx) => {
      await updateMap(tx, row.id, { enabled: enabled ? 1 : 0 });
      await setPreparedEnabled(tx, solution.id, row.id, enabled);
    });
    return { row: (await getMap(this.opts.db, solution.id, row.id)) ?? row, solution };
  }

  /**
   * Locks a Map for `by`, or unlocks it. Locking a Map `by` already holds keeps its lock date;
   * locking one another user holds is 409 MAP_LOCKED. Only the holder unlocks, or, when
   * `mayRelease` (an Administrator of the Organization), anyone; unlocking an unlocked Map is a no-op.
   */
  async lock(
    orgId: number,
    solutionId: string,
    id: number,
    lockState: boolean,
    by: string,
    mayRelease = false,
  ): Promise<MapRow> {
    const { solution, row } = await this.requireMap(orgId, solutionId, id);
    const { db } = this.opts;
    if (lockState) {
      if (row.lockedBy !== null && !lockedByOther(row, by)) return row;
      if (
        row.lockedBy !== null ||
        !(await updateMapUnlessLocked(db, row.id, by, { lockedBy: by, lockDate: nowIso() }))
      ) {
        throw mapLocked((await getMap(db, solution.id, row.id)) ?? row, 'locked');
      }
    } else {
      if (row.lockedBy === null) return row;
      if (lockedByOther(row, by) && !mayRelease) throw mapLocked(row, 'unlocked');
      await updateMap(db, row.id, { lockedBy: null, lockDate: null });
    }
    const after = await getMap(db, solution.id, row.id);
    if (!after) throw mapNotFound(solution.id, row.id);
    return after;
  }

  /**
   * Deletes a Map with its revisions; the Maps after it move up one place. Refused with 409
   * MAP_LOCKED while another user than `by` holds the Map's lock (without `by`, while anyone does).
   * A message Map's endpoint stays, without a Map, keeping its URL for a new Map of the same name.
   */
  async delete(orgId: number, solutionId: string, id: number, by?: string): Promise<void> {
    const { solution, row } = await this.requireMap(orgId, solutionId, id);
    await this.opts.db.transaction().execute(async (tx) => {
      const current = await getMap(tx, solution.id, row.id);
      if (!current) throw mapNotFound(solution.id, row.id);
      if (by !== undefined ? lockedByOther(current, by) : current.lockedBy !== null)
        throw mapLocked(current, 'deleted');
      if (!(await deleteMap(tx, solution.id, row.id))) throw mapNotFound(solution.id, row.id);
      await detachMapEndpoint(tx, row.id, nowIso());
      const { rows } = await listMaps(tx, solution.id);
      for (const [i, r] of rows.entries()) if (r.linkIndex !== i) await updateMap(tx, r.id, { linkIndex: i });
      await updateSolution(tx, orgId, solution.id, { prepared: 0, prepareState: null });
    });
  }
}

/** Sets a Map's `enabled` in its Solution's prepared definition, when it has one holding the Map. */
async function setPreparedEnabled(db: Db, solutionId: string, mapId: number, enabled: boolean): Promise<void> {
  const prepared = await getPreparedSolution(db, solutionId);
  if (!prepared) return;
  const body = JSON.parse(prepared.body) as PreparedBody;
  if (!body.maps.some((m) => m.mapId === mapId && m.enabled !== enabled)) return;
  const maps = body.maps.map((m) => (m.mapId === mapId ? { ...m, enabled } : m));
  await putPreparedSolution(db, { ...prepared, body: JSON.stringify({ ...body, maps }) });
}

function refuseReplication(solution: SolutionRow): void {
  if (solution.solutionType === 'Replication') {
    throw new FerryError(
      'API_VALIDATION',
      `Solution ${solution.name} is a Replication Solution: it copies the entities it selects and holds no Maps.`,
      {
        errors: [{ path: 'solutionId', message: 'a Replication Solution holds no Maps' }],
      },
    );
  }
}

/** The body's model at version 3.0 (upgraded when older); Basic and SysController Maps are refused. */
function modelOf(body: unknown): MapModel {
  const model = upgradeMap(body);
  const type = model.mapType ?? DEFAULT_MAP_TYPE;
  if (/basic|syscontroller/i.test(type)) {
    throw invalidField(
      'body.mapType',
      'unsupported map type',
      `Map type ${type} is not supported: build the Map as an advanced Map (${DEFAULT_MAP_TYPE}).`,
    );
  }
  if (/^replication/i.test(type))
    throw invalidField(
      'body.mapType',
      'only Replication Solutions have this type',
      `Map type ${type} belongs to Replication Solutions.`,
    );
  return { ...model, mapType: type };
}

/** The comment of a save: the query string's, else a `comment` string at the top of the body. */
function commentOf(body: unknown, comment: string | undefined): string | undefined {
  if (comment !== undefined) return comment;
  const c = typeof body === 'object' && body !== null ? (body as Record<string, unknown>)['comment'] : undefined;
  return typeof c === 'string' ? c.slice(0, 4000) : undefined;
}

export function summaryOf(model: MapModel): Pick<MapRow, 'name' | 'description' | 'mapType' | 'sources' | 'targets'> {
  const { sources, targets } = connectionsOf(model);
  return {
    name: model.name,
    description: model.description ?? '',
    mapType: model.mapType ?? DEFAULT_MAP_TYPE,
    sources: JSON.stringify(sources),
    targets: JSON.stringify(targets),
  };
}
