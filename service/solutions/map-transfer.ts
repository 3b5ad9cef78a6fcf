import type { Kysely } from 'kysely';
import { FerryError, invalid, isFerryError, type FieldError } from '../../src/errors/ferry-error.js';
import { upgradeMap } from '../../src/maps/compiler/upgrade.js';
import type { Block, MapModel } from '../../src/protocol/map.js';
import { listConnections } from '../store/repos/connections.repo.js';
import { insertMapExport, pruneMapExports, takeMapExport } from '../store/repos/map-exports.repo.js';
import { listMaps, updateMap } from '../store/repos/maps.repo.js';
import { getSolution } from '../store/repos/solutions.repo.js';
import type { ConnectionRow, Database, OrgRow, SolutionRow } from '../store/schema.js';
import { nowIso } from '../util/values.js';
import { lockedByOther, mapLocked, type MapView, type SolutionMaps } from './maps.js';
import { solutionNotFound } from './solutions.js';

/** How long an export waits for its download. */
export const EXPORT_TTL_MS = 60 * 60 * 1000;
/** Most Maps one import file may hold. */
export const MAX_IMPORT_MAPS = 1000;
/** The revision comment of an imported Map starts with this (SPEC.md "Map": comment). */
export const IMPORT_COMMENT = 'Map Imported';

/** The Connections of an Organization by ID (lower case). */
export type ConnectionsById = ReadonlyMap<string, ConnectionRow>;

/** Turns a Map into its entry in the export file (the API's Map model, Connection names filled in). */
export type RenderExport = (view: MapView, connections: ConnectionsById) => unknown;

export interface ExportRequest {
  /** Comma-separated Map IDs; blank exports every Map of the Solution. */
  readonly mapIds?: string | undefined;
  /** A revision of the one Map named. */
  readonly revision?: number | undefined;
}

/** One Map an import wrote. */
export interface ImportedMap {
  readonly id: number;
  readonly name: string;
  readonly revision: number;
  readonly index: number;
  readonly action: 'Created' | 'Overwritten';
}

/** A Connection of an imported Map that matched none of the Organization's. */
export interface UnresolvedConnection {
  readonly mapName: string;
  readonly connectionId: string;
  readonly connectionName: string | null;
  readonly connectionAlias: string | null;
}

export interface ImportResult {
  readonly maps: ImportedMap[];
  readonly unresolvedConnections: UnresolvedConnection[];
}

export interface MapTransferOptions {
  readonly db: Kysely<Database>;
  readonly maps: SolutionMaps;
}

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);
const text = (v: unknown): string | undefined =>
  typeof v === 'string' && v.trim() !== '' ? v.trim() : typeof v === 'number' ? String(v) : undefined;

/** A key of an object matched ignoring case (the original's files are PascalCase). */
function pick(o: Obj, key: string): unknown {
  if (key in o) return o[key];
  const lower = key.toLowerCase();
  for (const [k, v] of Object.entries(o)) if (k.toLowerCase() === lower) return v;
  return undefined;
}

/** What a file says about one Connection a Map uses. */
interface ConnectionRef {
  name?: string | undefined;
  alias?: string | undefined;
}

/**
 * Export and import of a Solution's Maps (SPEC.md "Maps": maps/export, maps/export/{exportId},
 * maps/import).
 *
 *   POST export ─▶ file built from the Maps now ─▶ map_exports row (expires after 1 hour)
 *   GET export/{id} ─▶ row deleted and answered: a second GET is 404
 *   POST import ─▶ every Map upgraded and checked ─▶ Connections matched ─▶ saved or created ─▶ order
 *
 * The file is a JSON array of Maps with the keys of the API's Map model (DESIGN.md "Map"), the
 * Blocks as the model stores them. An import reads that, the original service's export (model
 * 2.5, PascalCase keys, flat Block lists), a single Map, or `{maps: […]}`.
 */
export class MapTransfer {
  constructor(private readonly opts: MapTransferOptions) {}

  private async solution(orgId: number, solutionId: string): Promise<SolutionRow> {
    const row = await getSolution(this.opts.db, orgId, solutionId);
    if (!row) throw solutionNotFound(orgId, solutionId);
    return row;
  }

  private async connections(orgId: number): Promise<Map<string, ConnectionRow>> {
    return new Map((await listConnections(this.opts.db, orgId)).map((c) => [c.id.toLowerCase(), c]));
  }

  /**
   * Builds the export file of the Maps named (all when blank; the latest revision, or `revision`
   * of the one Map named) and keeps it for one download; answers its exportId. Several mapIds
   * with a revision are refused (400) and no file is made.
   */
  async requestExport(
    org: OrgRow,
    solutionId: string,
    q: ExportRequest,
    by: string,
    render: RenderExport,
  ): Promise<number> {
    const solution = await this.solution(org.id, solutionId);
    const ids = parseMapIds(q.mapIds);
    if (q.revision !== undefined && ids.length !== 1) {
      throw invalid(
        `A revision exports one Map: give exactly one mapId with revision ${q.revision} (${ids.length === 0 ? 'none was given' : `${ids.length} were given`}). No export file was made.`,
        [{ path: 'querystring.revision', message: 'needs exactly one mapId' }],
      );
    }
    const { maps } = this.opts;
    const views =
      ids.length > 0
        ? await Promise.all(ids.map((id) => maps.get(org.id, solution.id, id, q.revision)))
        : (await maps.list(org.id, solution.id, { limit: 1_000_000, offset: 0 })).items;
    const connections = await this.connections(org.id);
    const body = JSON.stringify(
      views.map((v) => render(v, connections)),
      null,
      2,
    );
    const now = new Date();
    await pruneMapExports(this.opts.db, now.toISOString());
    return insertMapExport(this.opts.db, {
      orgId: org.id,
      solutionId: solution.id,
      fileName: `${solution.name}.json`,
      body,
      createdAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + EXPORT_TTL_MS).toISOString(),
      createdBy: by,
    });
  }

  /** The export file, once: 404 when it was downloaded already, expired or never made. */
  async takeExport(orgId: number, solutionId: string, exportId: number): Promise<{ fileName: string; body: string }> {
    const solution = await this.solution(orgId, solutionId);
    const row = await takeMapExport(this.opts.db, { orgId, solutionId: solution.id, id: exportId }, nowIso());
    if (!row) {
      throw new FerryError(
        'API_NOT_FOUND',
        `Export ${exportId} of Solution ${solution.name} was not found: an export is downloaded once and kept for an hour. Ask for a new one with POST …/solutions/${solution.id}/maps/export.`,
      );
    }
    return { fileName: row.fileName, body: row.body };
  }

  /**
   * Imports the Maps of a file into the Solution. All of them are upgraded and checked first: a
   * file with a Map that cannot be read is refused whole (400 naming the Map and the problem) and
   * nothing changes. Then each Map whose name a Map of the Solution has (ignoring case) becomes
   * that Map's next revision, and the others are added at the end; every revision written has
   * the comment "Map Imported: revision N, <date>, <user>" (N the revision in the file).
   * `importedMapOrder` true moves the overwritten Maps to the end of the run order, in the file's
   * order, before the new ones; false keeps their places.
   *
   * Connections: a Block's connectionId that is a Connection of this Organization stays. Another
   * is looked up by the name the file gives for it (sourceConnectionName, targetConnections), then
   * by its alias, ignoring case; when the file names it nowhere, the ID text itself is tried as a
   * name and an alias. A reference that matches no Connection, or several, stays as it is and is
   * listed in `unresolvedConnections`: the Map is imported and validation names the Block.
   */
  async importMaps(
    org: OrgRow,
    solutionId: string,
    file: unknown,
    importedMapOrder: boolean,
    by: string,
  ): Promise<ImportResult> {
    const solution = await this.solution(org.id, solutionId);
    if (solution.solutionType === 'Replication') {
      throw invalid(
        `Solution ${solution.name} is a Replication Solution: it copies the entities it selects and holds no Maps to import into.`,
        [{ path: 'solutionId', message: 'a Replication Solution holds no Maps' }],
      );
    }
    const items = mapsOfFile(file);
    const connections = await this.connections(org.id);
    const errors: FieldError[] = [];
    const parsed: Array<{ model: MapModel; fileRevision: number | undefined }> = [];
    const unresolved: UnresolvedConnection[] = [];
    items.forEach((item, i) => {
      const path = `body[${i}]`;
      if (!isObj(item)) {
        errors.push({
          path,
          message: `is ${item === null ? 'null' : Array.isArray(item) ? 'an array' : typeof item}, not a Map object`,
        });
        return;
      }
      const label = text(pick(item, 'name')) ?? `Map ${i + 1}`;
      let model: MapModel;
      try {
        // The API's Map model answers an absent optional field as null (batchSize, lastRunDate): read as absent.
        model = upgradeMap(Object.fromEntries(Object.entries(item).filter(([, v]) => v !== null)));
      } catch (err) {
        if (!isFerryError(err)) throw err;
        errors.push({ path, message: `${label}: ${err.message}` });
        return;
      }
      const type = model.mapType ?? '';
      if (/basic|syscontroller|^replication/i.test(type)) {
        errors.push({
          path: `${path}.mapType`,
          message: `${label}: the map type ${type} cannot be imported into an ${solution.solutionType} Solution`,
        });
        return;
      }
      const { blocks, missing } = resolveConnections(model.blocks, connectionRefsOf(item), connections);
      for (const m of missing) unresolved.push({ mapName: model.name, ...m });
      const rev = pick(item, 'revision');
      parsed.push({
        model: { ...model, blocks },
        fileRevision: typeof rev === 'number' && Number.isInteger(rev) ? rev : undefined,
      });
    });
    const seen = new Map<string, number>();
    parsed.forEach(({ model }, i) => {
      const key = model.name.toLowerCase();
      const first = seen.get(key);
      if (first !== undefined)
        errors.push({
          path: `body[${i}].name`,
          message: `the file holds two Maps named ${model.name}; Map names are matched ignoring case`,
        });
      else seen.set(key, i);
    });
    if (errors.length > 0) {
      throw invalid(
        `The import file cannot be imported, nothing was changed: ${errors.map((e) => `${e.path}: ${e.message}`).join('; ')}`.slice(
          0,
          4000,
        ),
        errors.slice(0, 100),
      );
    }

    const { maps, db } = this.opts;
    const existing = new Map((await listMaps(db, solution.id)).rows.map((r) => [r.name.toLowerCase(), r]));
    // A Map another user holds locked refuses the whole file before anything is written.
    for (const { model } of parsed) {
      const row = existing.get(model.name.toLowerCase());
      if (row && lockedByOther(row, by)) throw mapLocked(row, 'overwritten by an import');
    }
    const date = nowIso();
    const written: Array<{ id: number; name: string; revision: number; action: ImportedMap['action'] }> = [];
    for (const { model, fileRevision } of parsed) {
      const comment = `${IMPORT_COMMENT}: ${fileRevision !== undefined ? `revision ${fileRevision}, ` : ''}${date}, ${by}`;
      const row = existing.get(model.name.toLowerCase());
      if (row) {
        // The Map keeps the net change watermark of its own runs.
        const current = await maps.get(org.id, solution.id, row.id);
        const view = await maps.save(
          org,
          solution.id,
          row.id,
          { ...model, lastRunDate: current.model.lastRunDate ?? null },
          comment,
          by,
        );
        written.push({ id: view.row.id, name: view.row.name, revision: view.row.revision, action: 'Overwritten' });
      } else {
        const view = await maps.create(org, solution.id, model, comment, by);
        written.push({ id: view.row.id, name: view.row.name, revision: view.row.revision, action: 'Created' });
      }
    }
    const order = await this.reorder(solution, written, importedMapOrder);
    return {
      maps: written.map((w) => ({ ...w, index: order.get(w.id) ?? -1 })),
      unresolvedConnections: unresolved,
    };
  }

  /**
   * The run order after an import: the Maps not imported keep their order; with
   * `importedMapOrder` the imported ones follow in the file's order, else the overwritten keep
   * their places and the new ones (already at the end) follow. Answers each Map's index.
   */
  private async reorder(
    solution: SolutionRow,
    written: ReadonlyArray<{ id: number; action: ImportedMap['action'] }>,
    importedMapOrder: boolean,
  ): Promise<Map<number, number>> {
    const { db } = this.opts;
    return db.transaction().execute(async (tx) => {
      const { rows } = await listMaps(tx, solution.id);
      const imported = new Set(written.map((w) => w.id));
      const moved = importedMapOrder ? written : written.filter((w) => w.action === 'Created');
      const movedIds = new Set(moved.map((w) => w.id));
      const order = [
        ...rows.filter((r) => !movedIds.has(r.id)).map((r) => r.id),
        ...moved.map((w) => w.id).filter((id) => imported.has(id)),
      ];
      const index = new Map<number, number>();
      for (const [i, id] of order.entries()) {
        index.set(id, i);
        const row = rows.find((r) => r.id === id);
        if (row && row.linkIndex !== i) await updateMap(tx, id, { linkIndex: i });
      }
      return index;
    });
  }
}

/** The Map IDs of an export request: comma-separated integers, each once; blank is none. */
function parseMapIds(raw: string | undefined): number[] {
  const parts = (raw ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  const ids: number[] = [];
  for (const p of parts) {
    if (!/^\d{1,10}$/.test(p) || Number(p) < 1 || Number(p) > 2_147_483_647) {
      throw invalid(
        `The mapIds list holds "${p.slice(0, 40)}", which is not a Map ID; give Map IDs separated by commas, or nothing to export every Map.`,
        [{ path: 'querystring.mapIds', message: 'comma-separated Map IDs' }],
      );
    }
    if (!ids.includes(Number(p))) ids.push(Number(p));
  }
  return ids;
}

/** The Maps of an import file: an array of Maps, `{maps: […]}` (or `models`), or one Map. */
function mapsOfFile(file: unknown): unknown[] {
  let items: unknown[] | undefined;
  if (Array.isArray(file)) items = file;
  else if (isObj(file)) {
    const list = pick(file, 'maps') ?? pick(file, 'models') ?? pick(file, 'mapModels');
    if (Array.isArray(list)) items = list;
    else if (pick(file, 'blocks') !== undefined) items = [file];
  }
  if (!items) {
    throw invalid(
      'The import file holds no Maps: send the JSON of an export file (an array of Maps), one Map (an object with blocks), or {"maps": [...]}.',
      [{ path: 'body', message: 'no Maps found' }],
    );
  }
  if (items.length === 0)
    throw invalid('The import file holds no Maps: its list is empty.', [
      { path: 'body', message: 'empty list of Maps' },
    ]);
  if (items.length > MAX_IMPORT_MAPS)
    throw invalid(`The import file holds ${items.length} Maps; import at most ${MAX_IMPORT_MAPS} at once.`, [
      { path: 'body', message: `more than ${MAX_IMPORT_MAPS} Maps` },
    ]);
  return items;
}

/** What the file says about the Connections of one Map, by ID (lower case): the source and targetConnections. */
function connectionRefsOf(item: Obj): Map<string, ConnectionRef> {
  const refs = new Map<string, ConnectionRef>();
  const add = (id: unknown, name: unknown, alias: unknown): void => {
    const key = text(id)?.toLowerCase();
    if (!key) return;
    const prev = refs.get(key) ?? {};
    refs.set(key, { name: prev.name ?? text(name), alias: prev.alias ?? text(alias) });
  };
  add(pick(item, 'sourceConnectionId'), pick(item, 'sourceConnectionName'), pick(item, 'sourceConnectionAlias'));
  const targets = pick(item, 'targetConnections');
  if (Array.isArray(targets)) {
    for (const t of targets) {
      if (isObj(t)) add(pick(t, 'connectionId'), pick(t, 'connectionName'), pick(t, 'connectionAlias'));
      else add(t, undefined, undefined);
    }
  }
  return refs;
}

/** The one Connection whose name, else alias, is `value` (ignoring case); none when several match. */
function byNameOrAlias(
  connections: ConnectionsById,
  value: string | undefined,
  field: 'name' | 'alias',
): ConnectionRow | undefined {
  if (!value) return undefined;
  const v = value.toLowerCase();
  const hits = [...connections.values()].filter((c) => c[field].toLowerCase() === v);
  return hits.length === 1 ? hits[0] : undefined;
}

/** The Blocks with their connectionIds resolved to this Organization's Connections, and the references that matched none. */
function resolveConnections(
  blocks: readonly Block[],
  refs: ReadonlyMap<string, ConnectionRef>,
  connections: ConnectionsById,
): { blocks: Block[]; missing: Array<Omit<UnresolvedConnection, 'mapName'>> } {
  const resolved = new Map<string, string | undefined>();
  const missing: Array<Omit<UnresolvedConnection, 'mapName'>> = [];
  const resolve = (id: string): string => {
    const key = id.toLowerCase();
    if (resolved.has(key)) return resolved.get(key) ?? id;
    const own = connections.get(key);
    const ref = refs.get(key);
    const hit =
      own ??
      (ref
        ? (byNameOrAlias(connections, ref.name, 'name') ?? byNameOrAlias(connections, ref.alias, 'alias'))
        : (byNameOrAlias(connections, id, 'name') ?? byNameOrAlias(connections, id, 'alias')));
    resolved.set(key, hit?.id);
    if (!hit)
      missing.push({ connectionId: id, connectionName: ref?.name ?? null, connectionAlias: ref?.alias ?? null });
    return hit?.id ?? id;
  };
  const walk = (list: readonly Block[]): Block[] =>
    list.map((b) => ({
      ...b,
      ...(b.connectionId ? { connectionId: resolve(b.connectionId) } : {}),
      ...(b.messageSource
        ? { messageSource: { ...b.messageSource, connectionId: resolve(b.messageSource.connectionId) } }
        : {}),
      ...(b.then ? { then: walk(b.then) } : {}),
      ...(b.else ? { else: walk(b.else) } : {}),
      ...(b.body ? { body: walk(b.body) } : {}),
    }));
  return { blocks: walk(blocks), missing };
}
