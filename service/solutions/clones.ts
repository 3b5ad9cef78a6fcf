import type { Kysely } from 'kysely';
import type { FastifyBaseLogger } from 'fastify';
import { FerryError } from '../../src/errors/ferry-error.js';
import { formulasOf, validateModel } from '../../src/maps/compiler/validate.js';
import { upgradeMap } from '../../src/maps/compiler/upgrade.js';
import { lookupTablesOf } from '../../src/maps/formula/compiler.js';
import { parseFormula } from '../../src/maps/formula/parser.js';
import { walkBlocks, type Block, type MapModel } from '../../src/protocol/map.js';
import type { ConnectionMetadata as MetadataDocument } from '../../src/protocol/metadata.js';
import { requireAgent } from '../agents/agents.js';
import { getAgent } from '../store/repos/agents.repo.js';
import { getPreparedSolution, putPreparedSolution } from '../store/repos/prepare.repo.js';
import type { ConnectionMetadata } from '../connections/metadata.js';
import { getConnection, listConnections } from '../store/repos/connections.repo.js';
import { getOrgConnector } from '../store/repos/connector-installs.repo.js';
import { findTable } from '../store/repos/lookup-tables.repo.js';
import { getOrg } from '../store/repos/orgs.repo.js';
import { listMaps } from '../store/repos/maps.repo.js';
import { getSolution, insertSolution, solutionNameTaken } from '../store/repos/solutions.repo.js';
import type { CloneJobRow } from '../store/schema-clones.js';
import type { ConnectionRow, Database, MapRow, SolutionRow, SolutionsTable } from '../store/schema.js';
import { isUniqueViolation } from '../store/sql.js';
import { newId, nowIso } from '../util/values.js';
import { summaryOf } from './maps.js';
import { solutionNotFound } from './solutions.js';

/** The revision comment of every Map of a copy. */
export const CLONED_REVISION_COMMENT = 'Cloned';
/** A copy that has not ended after this long was lost with its Service process (a copy takes seconds). */
const LOST_AFTER_MS = 5 * 60_000;

export interface CloneRequest {
  readonly destOrgId: number;
  readonly destAgentId: string;
  readonly byReference: boolean;
  /** The caller's email: the copy's modificationBy. */
  readonly by: string;
}

export interface SolutionClonesOptions {
  readonly db: Kysely<Database>;
  readonly metadata: Pick<ConnectionMetadata, 'cached' | 'ensure'>;
  readonly log: FastifyBaseLogger;
  /** This process in `clone_jobs.runner`: its replica ID, or a token of its own. */
  readonly runner: string;
  /** Whether other processes share the store (replicas): then only age ends a lost job. */
  readonly shared: boolean;
  /** Told of the Agent of a by-reference copy, which runs it without a prepare. */
  readonly assigned?: (agentId: string) => void;
}

/** A Map of the source at its latest revision. */
interface SourceMap {
  readonly row: MapRow;
  readonly model: MapModel;
}

/** What a copy needs in the destination, found before anything is written. */
interface Plan {
  readonly name: string;
  /** Source Connection ID (lower case) → the destination's. */
  readonly connections: ReadonlyMap<string, string>;
  readonly maps: readonly SourceMap[];
  /** By reference: the destination's earlier by-reference copy of that name, replaced (its History kept). */
  readonly replaces?: string;
}

/**
 * Copies of Solutions (SPEC.md "Clone job", docs/solutions.md "Copies"): `start` records a job and
 * answers it at once; the copy runs beside it and ends the job. A copy finds every piece it needs
 * in the destination first (Connections by Name and Alias with the same Connector, Lookup Tables by
 * name, a free name) and names every one that is missing; only when none is does it write the
 * Solution and its Maps (each the source's latest revision, as revision 1), in one transaction.
 * So a failed job created nothing, and a job lost with its process created nothing either.
 */
export class SolutionClones {
  /** The copies this process runs, by job ID. */
  readonly #running = new Map<string, Promise<void>>();

  constructor(private readonly opts: SolutionClonesOptions) {}

  /** Records the job of copying `solutionId` and starts it; the job as recorded. */
  async start(orgId: number, solutionId: string, req: CloneRequest): Promise<CloneJobRow> {
    const { db } = this.opts;
    const source = await getSolution(db, orgId, solutionId);
    if (!source) throw solutionNotFound(orgId, solutionId);
    await requireAgent(db, req.destOrgId, req.destAgentId.toLowerCase());
    const job: CloneJobRow = {
      id: newId(),
      orgId,
      solutionId: source.id,
      destOrgId: req.destOrgId,
      destAgentId: req.destAgentId.toLowerCase(),
      byReference: req.byReference ? 1 : 0,
      // A by-reference copy replaces the destination's earlier one of the same name, keeping its ID.
      clonedSolutionId: (req.byReference ? await earlierTarget(db, req.destOrgId, source.name) : undefined) ?? newId(),
      createdBy: req.by,
      creationDate: nowIso(),
      finishDate: null,
      isComplete: 0,
      hasError: 0,
      message: '',
      runner: this.opts.runner,
    };
    await db.insertInto('cloneJobs').values(job).execute();
    this.#running.set(
      job.id,
      this.#run(job).finally(() => this.#running.delete(job.id)),
    );
    return job;
  }

  /** Starts the copy and waits for its end (the deprecated POST S/clone). */
  async startAndWait(orgId: number, solutionId: string, req: CloneRequest): Promise<CloneJobRow> {
    const job = await this.start(orgId, solutionId, req);
    await this.#running.get(job.id);
    return this.get(orgId, solutionId, job.id);
  }

  /** The job, ended as failed first when its process was lost before it ended. */
  async get(orgId: number, solutionId: string, id: string): Promise<CloneJobRow> {
    const { db } = this.opts;
    const job = await db
      .selectFrom('cloneJobs')
      .selectAll()
      .where('id', '=', id)
      .where('orgId', '=', orgId)
      .where('solutionId', '=', solutionId)
      .executeTakeFirst();
    if (!job) throw new FerryError('API_NOT_FOUND', `Clone job ${id} of Solution ${solutionId} was not found.`);
    if (job.isComplete === 0 && this.#lost(job)) {
      await this.#end(
        job,
        'The copy did not finish: the Service stopped while it ran. Nothing was copied; copy again.',
      );
      return this.get(orgId, solutionId, id);
    }
    return job;
  }

  /** Waits for the copies this process runs (before the store closes). */
  async settled(): Promise<void> {
    while (this.#running.size > 0) await Promise.allSettled([...this.#running.values()]);
  }

  #lost(job: CloneJobRow): boolean {
    if (job.runner === this.opts.runner) return false;
    return !this.opts.shared || Date.now() - Date.parse(job.creationDate) > LOST_AFTER_MS;
  }

  async #run(job: CloneJobRow): Promise<void> {
    try {
      const source = await getSolution(this.opts.db, job.orgId, job.solutionId);
      if (!source) throw new CloneRefused([`the Solution ${job.solutionId} was deleted`]);
      const plan = await this.#plan(source, job);
      if (job.byReference === 1) await this.#share(source, job, plan);
      else await this.#copy(source, job, plan);
      await this.#end(job, `Copied "${source.name}" to Organization ${job.destOrgId} as "${plan.name}".`, false);
      this.opts.log.info(
        { cloneId: job.id, solutionId: source.id, clonedSolutionId: job.clonedSolutionId },
        'solution copied',
      );
    } catch (err) {
      const message =
        err instanceof CloneRefused
          ? `The Solution was not copied: ${err.problems.join('; ')}.`
          : 'The Solution was not copied: the store failed. Nothing was copied; copy again.';
      if (!(err instanceof CloneRefused)) this.opts.log.error({ err, cloneId: job.id }, 'solution copy failed');
      await this.#end(job, message).catch((e: unknown) => this.opts.log.error({ err: e }, 'clone job not ended'));
    }
  }

  /** Everything the copy needs in the destination; every piece that is missing, named. */
  async #plan(source: SolutionRow, job: CloneJobRow): Promise<Plan> {
    const { db } = this.opts;
    const problems: string[] = [];
    const sameOrg = job.destOrgId === source.orgId;
    const maps = await this.#maps(source);
    const name = sameOrg && job.byReference === 0 ? await copyName(db, source.orgId, source.name) : source.name;
    const replaces = job.byReference === 1 ? await this.#shareChecks(source, job, maps, problems) : undefined;
    if (!sameOrg && replaces === undefined && (await solutionNameTaken(db, job.destOrgId, name)))
      problems.push(`Organization ${job.destOrgId} already has a Solution named "${name}" (rename one of them)`);

    const own = new Map((await listConnections(db, source.orgId)).map((c) => [c.id.toLowerCase(), c]));
    const theirs = sameOrg ? [...own.values()] : await listConnections(db, job.destOrgId);
    const connections = new Map<string, string>();
    for (const id of usedConnections(source, maps)) {
      const conn = own.get(id);
      if (!conn) {
        problems.push(`a Map uses the Connection ${id}, which no longer exists in the source Organization`);
        continue;
      }
      const match = matchConnection(conn, theirs);
      if (typeof match === 'string') problems.push(match.replace('{org}', String(job.destOrgId)));
      else if (!sameOrg && !(await getOrgConnector(db, job.destOrgId, match.connectorId)))
        problems.push(
          `the Connector of the Connection "${conn.name}" (${match.connectorId}) is not installed in Organization ${job.destOrgId} (install it there)`,
        );
      else connections.set(id, match.id);
    }
    if (!sameOrg) {
      for (const table of usedLookupTables(maps))
        if (!(await findTable(db, job.destOrgId, table)))
          problems.push(
            `the Lookup Table "${table}" is not in Organization ${job.destOrgId} (create it there under that name)`,
          );
    }
    const metadata = new Map<string, Promise<MetadataDocument | undefined>>();
    for (const m of maps) {
      const invalid = await this.#invalid(m, own, metadata);
      if (invalid) problems.push(`the Map "${m.row.name}" is not valid (${invalid}): fix it in the source`);
    }
    if (problems.length === 0 && job.byReference === 1) await this.#fits(job, maps, connections, problems);
    if (problems.length > 0) throw new CloneRefused(problems);
    return { name, connections, maps, ...(replaces ? { replaces } : {}) };
  }

  async #maps(source: SolutionRow): Promise<SourceMap[]> {
    const { rows } = await listMaps(this.opts.db, source.id);
    if (rows.length === 0) return [];
    // Every latest revision in one read, not one a Map.
    const revisions = await this.opts.db
      .selectFrom('mapRevisions as r')
      .innerJoin('maps as m', (j) => j.onRef('m.id', '=', 'r.mapId').onRef('m.revision', '=', 'r.revision'))
      .select(['r.mapId', 'r.model'])
      .where('m.solutionId', '=', source.id)
      .execute();
    const models = new Map(revisions.map((r) => [Number(r.mapId), r.model]));
    return rows.flatMap((row) => {
      const model = models.get(row.id);
      return model === undefined ? [] : [{ row, model: upgradeMap(JSON.parse(model)) }];
    });
  }

  /** Why the Map is known to be invalid (validated against the metadata the Service holds); undefined when it is not. */
  async #invalid(
    m: SourceMap,
    connections: ReadonlyMap<string, ConnectionRow>,
    metadata: Map<string, Promise<MetadataDocument | undefined>>,
  ): Promise<string | undefined> {
    if (m.row.valid === 1) return undefined;
    const documents: Record<string, MetadataDocument> = {};
    for (const block of walkBlocks(m.model.blocks)) {
      const conn = block.connectionId ? connections.get(block.connectionId.toLowerCase()) : undefined;
      if (!conn || documents[conn.id]) continue;
      if (!metadata.has(conn.id)) metadata.set(conn.id, this.opts.metadata.cached(conn));
      const md = await metadata.get(conn.id);
      // Not checked without its metadata: the copy's prepare checks it.
      if (!md) return undefined;
      documents[conn.id] = md;
    }
    const v = validateModel(m.model, documents);
    return v.valid ? undefined : (v.results[0]?.message ?? 'it does not validate');
  }

  /** The Solution and its Maps, written in one transaction. */
  async #copy(source: SolutionRow, job: CloneJobRow, plan: Plan): Promise<void> {
    const now = nowIso();
    const mapped = (id: string | null) => (id ? (plan.connections.get(id.toLowerCase()) ?? id) : null);
    try {
      await this.opts.db.transaction().execute(async (tx) => {
        await insertSolution(tx, {
          ...source,
          id: job.clonedSolutionId,
          orgId: job.destOrgId,
          name: plan.name,
          nameKey: plan.name.toLowerCase(),
          agentId: job.destAgentId,
          connectionIdForSource: mapped(source.connectionIdForSource),
          connectionIdForTarget: mapped(source.connectionIdForTarget),
          isDisabled: 0,
          reasonDisabled: 0,
          prepared: 0,
          prepareState: null,
          lastRunTime: null,
          lastRunResult: null,
          inProgressStartTime: null,
          sharedFrom: null,
          minAgentVersion: null,
          creationDate: now,
          lastModificationDate: now,
          modificationBy: job.createdBy,
        });
        if (plan.maps.length === 0) return;
        // Two statements for all the Maps, not two a Map: a copy is bounded by round trips on PostgreSQL.
        const models = plan.maps.map((m): MapModel => ({
          ...m.model,
          blocks: remap(m.model.blocks, plan.connections),
          lastRunDate: null,
        }));
        const rows = await tx
          .insertInto('maps')
          .values(
            plan.maps.map((m, i) => ({
              solutionId: job.clonedSolutionId,
              orgId: job.destOrgId,
              // The run order as positions: unique, so each new ID is found by it below.
              linkIndex: i,
              enabled: m.row.enabled,
              ...summaryOf(models[i] as MapModel),
              revision: 1,
              valid: 0,
              creationDate: now,
              lastModificationDate: now,
              modifiedBy: job.createdBy,
            })),
          )
          .returning(['id', 'linkIndex'])
          .execute();
        const idAt = new Map(rows.map((r) => [Number(r.linkIndex), Number(r.id)]));
        await tx
          .insertInto('mapRevisions')
          .values(
            models.map((model, i) => {
              const mapId = idAt.get(i) ?? 0;
              return {
                mapId,
                revision: 1,
                model: JSON.stringify({ ...model, mapId }),
                comment: CLONED_REVISION_COMMENT,
                revisionDate: now,
                modifiedBy: job.createdBy,
              };
            }),
          )
          .execute();
      });
    } catch (err) {
      if (isUniqueViolation(err))
        throw new CloneRefused([`Organization ${job.destOrgId} already has a Solution named "${plan.name}"`]);
      throw err;
    }
  }

  /**
   * By reference the Maps are shared and no prepare follows: each must validate against the
   * metadata of the destination's Connections (SPEC.md condition 9, "the same metadata"), loaded
   * through the destination's Agent when the Service holds none yet.
   */
  async #fits(
    job: CloneJobRow,
    maps: readonly SourceMap[],
    connections: ReadonlyMap<string, string>,
    problems: string[],
  ): Promise<void> {
    const { db, metadata, log } = this.opts;
    const org = await getOrg(db, job.destOrgId);
    if (!org) return;
    const documents: Record<string, MetadataDocument> = {};
    for (const [sourceId, destId] of connections) {
      const conn = await getConnection(db, job.destOrgId, destId);
      if (!conn) continue;
      try {
        // Keyed by the source's ID: the shared Maps name the source's Connections.
        documents[sourceId] = await metadata.ensure(log, org, conn, job.destAgentId);
      } catch (err) {
        problems.push(
          `the metadata of the Connection "${conn.name}" could not be loaded through the Agent ${job.destAgentId} (${err instanceof Error ? err.message : String(err)}): start the Agent, or test the Connection`,
        );
      }
    }
    if (problems.length > 0) return;
    for (const m of maps) {
      const model = { ...m.model, blocks: lowerIds(m.model.blocks) };
      const v = validateModel(model, documents);
      if (!v.valid)
        problems.push(
          `the Map "${m.row.name}" does not fit the Connections of Organization ${job.destOrgId} (${v.results[0]?.message ?? 'it does not validate'})`,
        );
    }
  }

  /**
   * What a by-reference copy needs beyond a plain one (SPEC.md conditions 2, 5, 6, 10, 12), added to
   * `problems`; the destination's earlier by-reference copy of the same name, which it replaces.
   */
  async #shareChecks(
    source: SolutionRow,
    job: CloneJobRow,
    maps: readonly SourceMap[],
    problems: string[],
  ): Promise<string | undefined> {
    const { db } = this.opts;
    const shareable = source.solutionType === 'Integration' || source.solutionType === 'Migration';
    if (!shareable)
      problems.push(
        `only Integration and Migration Solutions are copied by reference; "${source.name}" is of type ${source.solutionType}`,
      );
    if (job.destOrgId === source.orgId)
      problems.push('a by-reference copy goes to another Organization than its source');
    if (source.prepared !== 1 || !(await getPreparedSolution(db, source.id)))
      problems.push(`"${source.name}" is not prepared: prepare it first (a source must be complete and runnable)`);
    if (shareable && !maps.some((m) => m.row.enabled === 1))
      problems.push(`every Map of "${source.name}" is disabled (or it has none)`);
    const [theirs, ours] = await Promise.all([
      getAgent(db, job.destOrgId, job.destAgentId),
      getAgent(db, source.orgId, source.agentId),
    ]);
    if (theirs && ours && compareVersions(theirs.version, ours.version) < 0)
      problems.push(
        `the Agent "${theirs.name}" runs version ${theirs.version ?? 'unknown'}, older than the source's Agent (${ours.version ?? 'unknown'}): upgrade it or choose another`,
      );
    return earlierTarget(db, job.destOrgId, source.name);
  }

  /**
   * The by-reference copy: a Solution of the destination that runs the source's Maps (shared, never
   * copied) with the destination's Connections, prepared at once from the source's prepared
   * definition. An earlier copy of the same name is replaced in place: same ID, History kept.
   */
  async #share(source: SolutionRow, job: CloneJobRow, plan: Plan): Promise<void> {
    const { db } = this.opts;
    const prepared = await getPreparedSolution(db, source.id);
    if (!prepared) throw new CloneRefused([`"${source.name}" is not prepared: prepare it first`]);
    const id = plan.replaces ?? job.clonedSolutionId;
    let body = prepared.body;
    for (const [from, to] of plan.connections) body = body.split(`"${from}"`).join(`"${to}"`);
    const shared = JSON.parse(body) as { maps?: Array<{ model: Record<string, unknown> }> };
    const definition = {
      ...shared,
      solutionId: id,
      orgId: job.destOrgId,
      // The Net Change date is not copied (SPEC.md condition 12): the target reads everything first.
      maps: (shared.maps ?? []).map((m) => ({ ...m, model: { ...m.model, lastRunDate: null } })),
    };
    const now = nowIso();
    const row: SolutionsTable = {
      ...source,
      id,
      orgId: job.destOrgId,
      name: plan.name,
      nameKey: plan.name.toLowerCase(),
      agentId: job.destAgentId,
      isDisabled: 0,
      reasonDisabled: 0,
      prepared: 1,
      prepareState: null,
      lastRunTime: null,
      lastRunResult: null,
      inProgressStartTime: null,
      sharedFrom: source.id,
      minAgentVersion: null,
      creationDate: now,
      lastModificationDate: now,
      modificationBy: job.createdBy,
    };
    await db.transaction().execute(async (tx) => {
      if (plan.replaces) {
        const {
          id: _id,
          orgId: _org,
          creationDate: _created,
          lastRunTime: _lastRun,
          lastRunResult: _lastResult,
          inProgressStartTime: _running,
          ...rest
        } = row;
        await tx.updateTable('solutions').set(rest).where('id', '=', plan.replaces).execute();
        await tx.updateTable('cloneJobs').set({ clonedSolutionId: id }).where('id', '=', job.id).execute();
      } else await insertSolution(tx, row);
      await putPreparedSolution(tx, {
        solutionId: id,
        agentId: job.destAgentId,
        body: JSON.stringify(definition),
        preparedAt: now,
      });
    });
    this.opts.assigned?.(job.destAgentId);
  }

  async #end(job: CloneJobRow, message: string, failed = true): Promise<void> {
    await this.opts.db
      .updateTable('cloneJobs')
      .set({ isComplete: 1, hasError: failed ? 1 : 0, message, finishDate: nowIso() })
      .where('id', '=', job.id)
      .where('isComplete', '=', 0)
      .execute();
  }
}

/** A copy refused before anything was written: every missing piece. */
class CloneRefused extends Error {
  constructor(readonly problems: string[]) {
    super(problems.join('; '));
  }
}

/** The Organization's by-reference copy named `name`, which a new by-reference copy of that name replaces. */
async function earlierTarget(db: Kysely<Database>, orgId: number, name: string): Promise<string | undefined> {
  const same = await db
    .selectFrom('solutions')
    .select(['id', 'sharedFrom'])
    .where('orgId', '=', orgId)
    .where('nameKey', '=', name.toLowerCase())
    .executeTakeFirst();
  return same?.sharedFrom ? same.id : undefined;
}

/** "Copy of <name> N", the first N no Solution of the Organization uses. */
async function copyName(db: Kysely<Database>, orgId: number, name: string): Promise<string> {
  for (let n = 1; ; n += 1) {
    const candidate = `Copy of ${name} ${n}`;
    if (!(await solutionNameTaken(db, orgId, candidate))) return candidate;
  }
}

/** The Connection IDs (lower case) the Solution and its Maps use. */
function usedConnections(source: SolutionRow, maps: readonly SourceMap[]): Set<string> {
  const ids = new Set<string>();
  for (const id of [source.connectionIdForSource, source.connectionIdForTarget]) if (id) ids.add(id.toLowerCase());
  for (const m of maps)
    for (const b of walkBlocks(m.model.blocks)) {
      if (b.connectionId) ids.add(b.connectionId.toLowerCase());
      if (b.messageSource) ids.add(b.messageSource.connectionId.toLowerCase());
    }
  return ids;
}

/** The destination's Connection of the same Name and Alias (any case) and Connector, or why there is none. */
function matchConnection(conn: ConnectionRow, theirs: readonly ConnectionRow[]): ConnectionRow | string {
  if (theirs.some((c) => c.id === conn.id)) return conn;
  const named = theirs.filter(
    (c) => c.name.toLowerCase() === conn.name.toLowerCase() && c.alias.toLowerCase() === conn.alias.toLowerCase(),
  );
  const same = named.find((c) => c.connectorId === conn.connectorId);
  if (same) return same;
  if (named.length > 0)
    return `the Connection "${conn.name}" (alias "${conn.alias}") of Organization {org} uses another Connector than the source's (${conn.connectorId})`;
  return `the Connection "${conn.name}" (alias "${conn.alias}") is not in Organization {org} (create it there with that Name and Alias, on the same Connector)`;
}

/** The Lookup Tables the Maps' formulas name. */
function usedLookupTables(maps: readonly SourceMap[]): Set<string> {
  const names = new Set<string>();
  for (const m of maps)
    for (const b of walkBlocks(m.model.blocks))
      for (const [, formula] of formulasOf(b)) {
        try {
          for (const n of lookupTablesOf(parseFormula(formula)).names) names.add(n);
        } catch {
          // A formula that does not parse makes its Map invalid, which is named on its own.
        }
      }
  return names;
}

/** The Blocks with their Connection IDs replaced by the destination's. */
function remap(blocks: readonly Block[], connections: ReadonlyMap<string, string>): Block[] {
  return blocks.map((b) => ({
    ...b,
    ...(b.connectionId ? { connectionId: connections.get(b.connectionId.toLowerCase()) ?? b.connectionId } : {}),
    ...(b.messageSource
      ? {
          messageSource: {
            ...b.messageSource,
            connectionId: connections.get(b.messageSource.connectionId.toLowerCase()) ?? b.messageSource.connectionId,
          },
        }
      : {}),
    ...(b.then ? { then: remap(b.then, connections) } : {}),
    ...(b.else ? { else: remap(b.else, connections) } : {}),
    ...(b.body ? { body: remap(b.body, connections) } : {}),
  }));
}

/** Dotted versions compared by their numbers (`1.10.0` > `1.9.2`); an unknown one compares as equal. */
export function compareVersions(a: string | null, b: string | null): number {
  if (!a || !b) return 0;
  const pa = a.split(/[.+-]/).map((x) => Number.parseInt(x, 10) || 0);
  const pb = b.split(/[.+-]/).map((x) => Number.parseInt(x, 10) || 0);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/** The Blocks with their Connection IDs in lower case (the keys of the metadata documents). */
function lowerIds(blocks: readonly Block[]): Block[] {
  return blocks.map((b) => ({
    ...b,
    ...(b.connectionId ? { connectionId: b.connectionId.toLowerCase() } : {}),
    ...(b.then ? { then: lowerIds(b.then) } : {}),
    ...(b.else ? { else: lowerIds(b.else) } : {}),
    ...(b.body ? { body: lowerIds(b.body) } : {}),
  }));
}
