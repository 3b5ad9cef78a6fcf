import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';
import { compilePlan } from '../../src/maps/compiler/plan.js';
import { validateModel } from '../../src/maps/compiler/validate.js';
import { connectionIdsOf } from '../../src/maps/open-run.js';
import type { MetadataByConnection } from '../../src/maps/metadata.js';
import { MapModel, MESSAGE_SOURCE_CONNECTORS, MESSAGE_STARTERS } from '../../src/protocol/map.js';
import type { ConnectionMetadata as MetadataDocument } from '../../src/protocol/metadata.js';
import type { PreparedMap, PreparedReplication, PreparedSolution } from '../../src/protocol/solutions.js';
import { requireAgent } from '../agents/agents.js';
import type { AgentCommands } from '../agents/commands.js';
import type { ConnectionMetadata } from '../connections/metadata.js';
import { getConnection } from '../store/repos/connections.repo.js';
import { getMapRevision, listMaps, updateMap } from '../store/repos/maps.repo.js';
import { syncEndpoints, type EndpointMap } from '../store/repos/message-endpoints.repo.js';
import { getOrg } from '../store/repos/orgs.repo.js';
import { getSolution, updateSolution } from '../store/repos/solutions.repo.js';
import {
  failAbandonedPrepareJobs,
  finishPrepareJob,
  getPrepareJob,
  insertPrepareJob,
  latestPrepareJob,
  putPreparedSolution,
} from '../store/repos/prepare.repo.js';
import type { ConnectionRow, Database, MapRow, OrgRow, PrepareJobRow, SolutionRow } from '../store/schema.js';
import { newId, nowIso } from '../util/values.js';
import { blockErrorsOf, blockErrorsText, type BlockError } from './block-errors.js';
import { replicationSettingsOf, solutionNotFound } from './solutions.js';

/** One Map's reason prepare failed (SPEC.md `mapErrorModels`): `message` as one line, `errors` per Block. */
export interface MapErrorModel {
  readonly mapId: number;
  readonly message: string;
  readonly errors: readonly BlockError[];
}

/** What prepare stores for an Agent: the prepared definition without what is added when it is sent (see assignments.ts). */
export type PreparedBody = Omit<
  PreparedSolution,
  'version' | 'isDisabled' | 'schedule' | 'capture' | 'connections' | 'name'
> & {
  readonly connections: ReadonlyArray<{ connectionId: string; connectorId: string; name: string }>;
};

export interface PrepareJobsOptions {
  readonly db: Kysely<Database>;
  readonly commands: AgentCommands;
  readonly metadata: ConnectionMetadata;
  readonly log: FastifyBaseLogger;
  /** Called after a successful prepare: the Solution's Agent is brought up to date. */
  readonly prepared: (solution: SolutionRow) => Promise<void>;
  /**
   * With replicas on PostgreSQL: this replica's ID, written on its jobs, so that only the jobs of a
   * replica that is gone end as abandoned. Absent (one process): every unfinished job at start is.
   */
  readonly replicaId?: string;
}

/** A job in this process; `superseded` once a change since it began gave its Solution a newer job. */
interface RunningJob {
  readonly job: PrepareJobRow;
  done: Promise<PrepareJobRow>;
  superseded: boolean;
}

/** A prepare that failed as a whole (no Map to blame). */
class PrepareFailure extends Error {}

/**
 * Prepare (SPEC.md "Solution jobs"): an asynchronous job that gathers the Solution's Connections
 * and their metadata through its Agent (from the metadata cache when loaded), validates and
 * compiles every Map with the engine's compiler, and stores what the Agent needs to run it.
 *
 *   POST …/prepare ─▶ job (isComplete false), Solution Preparing
 *        └─ Agent connected? ─▶ Connections + metadata ─▶ RS: entities resolved
 *                                                      └▶ IS/MS: each Map validated and compiled
 *           ─▶ errors: job hasError, mapErrorModels, Solution ProvisionError
 *           ─▶ none:   prepared_solutions row, Message Endpoints of its message and request Maps
 *                      (store/repos/message-endpoints.repo.ts), Solution prepared, its Agent brought up to date
 *
 * One job runs per Solution at a time: a second POST answers the running one while the Solution is
 * unchanged since that job began; after a change it gets a new job, which runs once the other ended.
 * A Solution changed while its prepare ran stays Incomplete (the job says so).
 */
export class PrepareJobs {
  /** Jobs running in this process, by Solution ID. */
  readonly #running = new Map<string, RunningJob>();

  constructor(private readonly opts: PrepareJobsOptions) {}

  /** Starts a prepare (or answers the one running); `done` resolves with the finished job. */
  async start(org: OrgRow, solutionId: string): Promise<{ job: PrepareJobRow; done: Promise<PrepareJobRow> }> {
    const { db } = this.opts;
    const solution = await getSolution(db, org.id, solutionId);
    if (!solution) throw solutionNotFound(org.id, solutionId);
    const running = this.#running.get(solution.id);
    // Every change to what a run uses sets prepareState back to null: a job that began before it
    // built the old definition, so it answers only while the Solution still says Preparing.
    if (running && !running.superseded && solution.prepareState === 'Preparing') return running;
    if (running) running.superseded = true;
    const job: PrepareJobRow = {
      id: newId(),
      solutionId: solution.id,
      orgId: org.id,
      creationDate: nowIso(),
      finishDate: null,
      isComplete: 0,
      hasError: 0,
      message: '',
      mapErrors: '[]',
      replicaId: this.opts.replicaId ?? null,
    };
    await insertPrepareJob(db, job);
    await updateSolution(db, org.id, solution.id, { prepareState: 'Preparing' });
    const entry: RunningJob = { job, done: Promise.resolve(job), superseded: false };
    const begin = running
      ? running.done.then(
          async () => (await getSolution(db, org.id, solution.id)) ?? solution,
          () => solution,
        )
      : Promise.resolve(solution);
    entry.done = begin
      .then((current) => this.#run(org, current, job, entry))
      .finally(() => {
        if (this.#running.get(solution.id) === entry) this.#running.delete(solution.id);
      });
    this.#running.set(solution.id, entry);
    return entry;
  }

  /** A prepare job of the Solution. */
  async get(orgId: number, solutionId: string, jobId: string): Promise<PrepareJobRow> {
    const job = await getPrepareJob(this.opts.db, solutionId, jobId.toLowerCase());
    if (!job || job.orgId !== orgId)
      throw new FerryError('API_NOT_FOUND', `Prepare job ${jobId} was not found for Solution ${solutionId}.`);
    return job;
  }

  /** The Solution's latest prepare job, if any. */
  latest(solutionId: string): Promise<PrepareJobRow | undefined> {
    return latestPrepareJob(this.opts.db, solutionId);
  }

  /** Whether a prepare of the Solution runs in this process. */
  isRunning(solutionId: string): boolean {
    return this.#running.has(solutionId);
  }

  /**
   * Ends with an error the jobs a stopped Service process left unfinished (their Solutions leave
   * Preparing for ProvisionError). Called once at start, before any new job.
   */
  async failAbandoned(): Promise<void> {
    const { db, replicaId, log } = this.opts;
    const abandoned = await failAbandonedPrepareJobs(db, nowIso(), replicaId !== undefined);
    if (abandoned === 0) return;
    log.warn({ count: abandoned }, 'prepare jobs of a stopped Service process ended with an error');
  }

  /** Waits for every running job (the Service is closing). */
  async settled(): Promise<void> {
    await Promise.allSettled([...this.#running.values()].map((r) => r.done));
  }

  async #run(org: OrgRow, solution: SolutionRow, job: PrepareJobRow, entry: RunningJob): Promise<PrepareJobRow> {
    const { db, log } = this.opts;
    let mapErrors: MapErrorModel[] = [];
    let message = '';
    let body: PreparedBody | undefined;
    let endpoints: EndpointMap[] = [];
    try {
      const built = await this.#build(org, solution);
      mapErrors = built.mapErrors;
      body = built.body;
      endpoints = built.endpoints;
      if (mapErrors.length > 0)
        message = `${mapErrors.length} Map(s) of Solution ${solution.name} are not valid: ${mapErrors.map((e) => `Map ${e.mapId}: ${e.message}`).join('; ')}`;
    } catch (err) {
      message =
        err instanceof PrepareFailure || isFerryError(err)
          ? err.message
          : `Prepare failed: ${err instanceof Error ? err.message : String(err)}`;
      if (!(err instanceof PrepareFailure) && !isFerryError(err))
        log.error({ err, solutionId: solution.id }, 'prepare failed unexpectedly');
    }
    let failed = message !== '';
    let finished = job;
    const current = await db.transaction().execute(async (tx) => {
      const current = await getSolution(tx, org.id, solution.id);
      const changed =
        entry.superseded ||
        (current !== undefined &&
          (current.prepareState !== 'Preparing' || current.lastModificationDate !== solution.lastModificationDate));
      if (body && !failed && changed) {
        message = `Solution ${solution.name} changed while it was being prepared; prepare it again.`;
        failed = true;
      }
      finished = {
        ...job,
        finishDate: nowIso(),
        isComplete: 1,
        hasError: failed ? 1 : 0,
        message: failed ? message : 'Prepared',
        mapErrors: JSON.stringify(mapErrors),
      };
      await finishPrepareJob(tx, finished);
      if (!current) return undefined;
      if (failed) {
        // A change since the job began leaves the Solution Incomplete, or Preparing by the job after it.
        if (!entry.superseded && current.prepareState === 'Preparing')
          await updateSolution(tx, org.id, solution.id, { prepareState: 'ProvisionError' });
        return current;
      }
      await putPreparedSolution(tx, {
        solutionId: solution.id,
        agentId: solution.agentId,
        body: JSON.stringify(body),
        preparedAt: finished.finishDate ?? nowIso(),
      });
      if (solution.solutionType !== 'Replication') {
        const sync = await syncEndpoints(tx, {
          orgId: org.id,
          solutionId: solution.id,
          maps: endpoints,
          now: finished.finishDate ?? nowIso(),
        });
        if (sync.skipped.length > 0)
          log.warn({ solutionId: solution.id, skipped: sync.skipped }, 'message Maps left without an endpoint');
      }
      await updateSolution(tx, org.id, solution.id, { prepared: 1, prepareState: null });
      return current;
    });
    log.info(
      { solutionId: solution.id, jobId: job.id, hasError: failed, mapErrors: mapErrors.length },
      'prepare finished',
    );
    if (!failed && current)
      await this.opts
        .prepared(current)
        .catch((err: unknown) =>
          log.warn(
            { err, solutionId: solution.id },
            'prepared Solution not sent to its Agent; it is sent when the Agent connects',
          ),
        );
    return finished;
  }

  async #build(
    org: OrgRow,
    solution: SolutionRow,
  ): Promise<{ body: PreparedBody; mapErrors: MapErrorModel[]; endpoints: EndpointMap[] }> {
    const { db, commands } = this.opts;
    const agent = await requireAgent(db, org.id, solution.agentId);
    if (!commands.isConnected(agent.id)) {
      throw new PrepareFailure(
        `Agent ${agent.name} is not connected: prepare loads the Connections' metadata through it. Start the Agent (or wait until its status is Running) and prepare again.`,
      );
    }
    const connections = new Map<string, ConnectionRow>();
    const metadata: Record<string, MetadataDocument> = {};
    /** The Connection and its metadata, loaded once per prepare (`fresh`: read again from the datastore, not the cache). */
    const load = async (id: string, fresh = false): Promise<MetadataDocument> => {
      const known = metadata[id];
      if (known && !fresh) return known;
      const conn = await getConnection(db, org.id, id);
      if (!conn) throw new PrepareFailure(`Connection ${id} was not found in Organization ${org.id}.`);
      connections.set(conn.id, conn);
      if (fresh) await this.opts.metadata.reset(conn);
      const md = await this.opts.metadata.ensure(this.opts.log, org, conn, agent.id);
      metadata[conn.id] = md;
      return md;
    };
    const base = {
      solutionId: solution.id,
      orgId: org.id,
      solutionType: solution.solutionType as PreparedSolution['solutionType'],
    };
    if (solution.solutionType === 'Replication') {
      const replication = await this.#replication(solution, load);
      return {
        body: { ...base, maps: [], replication, lookupTables: [], connections: connectionList(connections) },
        mapErrors: [],
        endpoints: [],
      };
    }
    const mapErrors: MapErrorModel[] = [];
    const maps: PreparedMap[] = [];
    const endpoints: EndpointMap[] = [];
    const lookupTables = new Set<string>();
    const rows = (await listMaps(db, solution.id)).rows;
    if (rows.length === 0)
      throw new PrepareFailure(
        `Solution ${solution.name} has no Maps: add a Map (POST …/maps/advanced), then prepare.`,
      );
    for (const row of rows) {
      const rev = await getMapRevision(db, row.id);
      const parsed = MapModel.safeParse(rev ? JSON.parse(rev.model) : undefined);
      if (!parsed.success) {
        const message = `The Map model is not valid: ${parsed.error.issues[0]?.message ?? 'unknown'}`;
        mapErrors.push({
          mapId: row.id,
          message,
          errors: [{ blockId: null, blockName: null, code: 'MAP_MODEL_INVALID', message }],
        });
        await updateMap(db, row.id, { valid: 0 });
        continue;
      }
      const model = { ...parsed.data, mapId: row.id, name: row.name };
      const md: Record<string, MetadataDocument> = {};
      let failure: BlockError[] | undefined;
      for (const id of connectionIdsOf(model)) {
        try {
          md[id] = await load(id);
        } catch (err) {
          const message = err instanceof Error ? err.message : String(err);
          failure = [
            {
              blockId: null,
              blockName: null,
              code: isFerryError(err) ? err.code : 'API_METADATA_LOAD_FAILED',
              message,
            },
          ];
          break;
        }
      }
      if (failure === undefined) failure = errorsOf(model, md);
      failure ??= await messageSourceErrors(db, org.id, model, connections);
      if (failure !== undefined) {
        mapErrors.push({ mapId: row.id, message: blockErrorsText(failure), errors: failure });
        await updateMap(db, row.id, { valid: 0 });
        continue;
      }
      for (const name of compilePlan(model, md).lookupTables.names) lookupTables.add(name);
      await updateMap(db, row.id, { valid: 1 });
      maps.push({ mapId: row.id, name: row.name, enabled: row.enabled === 1, model: model });
      const endpoint = endpointOf(row, model, rev?.comment ?? '');
      if (endpoint) endpoints.push(endpoint);
    }
    return {
      body: {
        ...base,
        maps,
        replication: null,
        lookupTables: [...lookupTables],
        connections: connectionList(connections),
      },
      mapErrors,
      endpoints,
    };
  }

  /** The RS Connections' metadata and the entities to copy: Selected ones checked, All and Recommended expanded. */
  async #replication(
    solution: SolutionRow,
    load: (id: string, fresh?: boolean) => Promise<MetadataDocument>,
  ): Promise<PreparedReplication> {
    const settings = replicationSettingsOf(solution);
    if (!solution.connectionIdForSource || !solution.connectionIdForTarget || !settings) {
      throw new PrepareFailure(
        `Replication Solution ${solution.name} needs a source and a target Connection and its entities.`,
      );
    }
    let source = await load(solution.connectionIdForSource);
    await load(solution.connectionIdForTarget);
    const queryableIn = (md: MetadataDocument) =>
      md.entities.filter((e) => e.actions.some((a) => a.action === 'Query'));
    let queryable = queryableIn(source);
    let entities: string[];
    if (settings.selectionType === 'Selected') {
      const select = (): { found: string[]; missing: string[] } => {
        const missing: string[] = [];
        const found = settings.entities.flatMap((name) => {
          const hit =
            queryable.find((e) => e.fullName === name) ??
            queryable.find((e) => e.fullName.toLowerCase() === name.toLowerCase());
          if (!hit) missing.push(name);
          return hit ? [hit.fullName] : [];
        });
        return { found, missing };
      };
      let picked = select();
      if (picked.missing.length > 0) {
        // The metadata may predate the entity (a table created since it was loaded): read it again once.
        source = await load(solution.connectionIdForSource, true);
        queryable = queryableIn(source);
        picked = select();
      }
      if (picked.missing.length > 0)
        throw new PrepareFailure(
          `The source Connection has no entity ${picked.missing.join(', ')} to replicate: select entities it has (GET …/connections/{id}/metadata lists them).`,
        );
      entities = picked.found;
    } else {
      // Recommended: the entities with a primary key, which replicate without duplicates on every run.
      entities = (
        settings.selectionType === 'All' ? queryable : queryable.filter((e) => e.fields.some((f) => f.isPrimaryKey))
      ).map((e) => e.fullName);
    }
    return {
      sourceConnectionId: solution.connectionIdForSource,
      targetConnectionId: solution.connectionIdForTarget,
      selectionType: settings.selectionType,
      entities,
      checkForBulk: solution.checkForBulk === 1,
      ...(settings.changeCapture ? { changeCapture: settings.changeCapture } : {}),
    };
  }
}

/** The validation errors of a Map per Block, or undefined when it has none. */
function errorsOf(model: MapModel, metadata: MetadataByConnection): BlockError[] | undefined {
  const v = validateModel(model, metadata);
  return v.valid ? undefined : blockErrorsOf(v.results);
}

/**
 * The errors of a Wait For Message Block's broker source: its Connection must be in the
 * Organization and of the broker's Connector. The Connection joins the prepared Solution's
 * `connections` (it reaches the Agent with its properties, as a Block's does), without metadata:
 * a broker has no entities.
 */
async function messageSourceErrors(
  db: Kysely<Database>,
  orgId: number,
  model: MapModel,
  connections: Map<string, ConnectionRow>,
): Promise<BlockError[] | undefined> {
  const starter = model.blocks[0];
  const source = starter?.messageSource;
  if (!starter || !source) return undefined;
  const conn = await getConnection(db, orgId, source.connectionId);
  const want = MESSAGE_SOURCE_CONNECTORS[source.type];
  const problem = !conn
    ? `its messageSource names Connection ${source.connectionId}, which is not in Organization ${orgId}`
    : conn.connectorId.toLowerCase() !== want.id
      ? `its messageSource is of type ${source.type}, and Connection ${conn.name} is not a ${want.name} Connection`
      : undefined;
  if (problem === undefined && conn) {
    connections.set(conn.id, conn);
    return undefined;
  }
  return [
    {
      blockId: starter.blockId,
      blockName: starter.name,
      code: 'MAP_MESSAGE_SOURCE_INVALID',
      message: `${problem ?? ''}.`,
    },
  ];
}

/**
 * How the revision comment of an imported Map begins: map-transfer.ts's IMPORT_COMMENT, which this
 * file cannot import (map-transfer.ts → maps.ts → prepare.ts would be a cycle). The endpoint tests'
 * import case fails when the two differ.
 */
const IMPORT_COMMENT = 'Map Imported';

/** What the endpoint of a Map that begins with Wait For Message (Request) is made of; undefined for other Maps. */
function endpointOf(row: MapRow, model: MapModel, comment: string): EndpointMap | undefined {
  const [starter] = model.blocks;
  // A Map fed by a broker has no HTTP endpoint (docs/events.md "Messages from RabbitMQ or NATS JetStream").
  if (!starter || !MESSAGE_STARTERS.includes(starter.blockType) || starter.messageSource) return undefined;
  return {
    mapId: row.id,
    kind: starter.blockType === 'WaitForRequest' ? 'request' : 'message',
    name: row.name,
    entityName: starter.entity ?? starter.name,
    description: row.description,
    imported: comment.startsWith(IMPORT_COMMENT),
  };
}

function connectionList(connections: ReadonlyMap<string, ConnectionRow>): PreparedBody['connections'] {
  return [...connections.values()].map((c) => ({ connectionId: c.id, connectorId: c.connectorId, name: c.name }));
}

/** The Organization of a Solution (for jobs started without a request). */
export async function orgOfSolution(db: Kysely<Database>, solution: Pick<SolutionRow, 'orgId'>): Promise<OrgRow> {
  const org = await getOrg(db, solution.orgId);
  if (!org) throw new FerryError('API_NOT_FOUND', `Organization ${solution.orgId} was not found.`);
  return org;
}
