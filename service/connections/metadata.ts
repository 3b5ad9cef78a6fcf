import type { FastifyBaseLogger } from 'fastify';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';
import { COMMANDS } from '../../src/protocol/commands.js';
import { ConnectionMetadata as MetadataDocument, type EntityMetadata } from '../../src/protocol/metadata.js';
import { requireAgent } from '../agents/agents.js';
import type { AgentCommands } from '../agents/commands.js';
import { agentError } from '../gateway/agent-command.js';
import type { SecretBox } from '../crypto/master-key.js';
import {
  countMetadataRequests,
  finishMetadataRequest,
  getMetadataCache,
  insertMetadataRequest,
  listMetadataRequests,
  markMetadataErrorSeen,
  pruneMetadataRequests,
  putMetadataCache,
  resetMetadataCache,
} from '../store/repos/metadata.repo.js';
import { replicaAlive } from '../jobs/claims.js';
import { setLastTestedAgent } from '../store/repos/connections.repo.js';
import type { ConnectionRow, MetadataRequestRow, OrgRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { newId, nowIso } from '../util/values.js';
import { openProperties } from './properties.js';

/** Metadata requests kept per Connection. */
const KEEP_REQUESTS = 50;
/** How long a load another replica sent may run: the command's time-out and a minute for its answer. */
const REMOTE_LOAD_MS = COMMANDS.loadMetadata.timeoutMs + 60_000;
export const METADATA_LOADING = 'Metadata is loading; repeat the call';

const loadingProblem = (connectionId: string): FerryError =>
  new FerryError('API_METADATA_LOADING', METADATA_LOADING, { details: { connectionId } });

/** A load this process sent: its request, and the Agent channel it went out on. */
interface InFlight {
  requestId: string;
  agentId: string;
  channel: object | undefined;
}

export interface ConnectionMetadataOptions {
  readonly db: Db;
  readonly secrets: SecretBox;
  readonly commands: AgentCommands;
  /** This replica's ID among several on one PostgreSQL (none on SQLite). */
  readonly replicaId?: string | undefined;
}

/**
 * The metadata of Connections (entities, fields, relationships, actions), loaded by an Agent and
 * cached in the store, with the record of the latest loads.
 *
 * Every read is POLL-style: the first call on a Connection without cached metadata starts a
 * `loadMetadata` command on the Agent (agentId, or the Agent that loaded it before) and answers
 * 404 API_METADATA_LOADING; calls answer the same while the load runs, then serve the cache.
 *
 * "The load runs" means an answer can still come: this process sent it, on the channel the Agent
 * holds now. A request recorded as Requested that no longer qualifies (sent by a Service process
 * that is gone, or on a channel the Agent has since replaced or closed) gets no answer, so the
 * next call sends the load again at once instead of answering "loading" until a time-out.
 *
 * With replicas, a request another replica sent is in flight while that replica lives (its
 * liveness lease runs) and the request is younger than a load may take: the call answers
 * "loading" as the sender would, and the load is not sent twice.
 */
export class ConnectionMetadata {
  /** Loads under way in this process, by Connection ID (one at a time per Connection). */
  readonly #loading = new Map<string, InFlight>();

  constructor(private readonly opts: ConnectionMetadataOptions) {}

  /** Whether the load's answer can still arrive: the channel it was sent on is the Agent's current one. */
  #answerable(f: InFlight | undefined): boolean {
    return f?.channel !== undefined && this.opts.commands.channelOf(f.agentId) === f.channel;
  }

  /** The cached metadata, or a 404 (loading) / 400 (no Agent) / 502 (last load failed) problem. */
  async of(
    log: FastifyBaseLogger,
    org: OrgRow,
    conn: ConnectionRow,
    agentId: string | undefined,
  ): Promise<MetadataDocument> {
    const { db, commands } = this.opts;
    const cache = await getMetadataCache(db, conn.id);
    // A cached document that does not fit the contract (a plugin that broke the SDK's types) is loaded again.
    const cached = cache?.metadata ? MetadataDocument.safeParse(JSON.parse(cache.metadata)) : undefined;
    if (cached?.success) return cached.data;
    if (cached)
      log.warn(
        { connectionId: conn.id, issue: cached.error.issues[0]?.message },
        'cached metadata does not fit the contract; loading it again',
      );
    const [latest] = await listMetadataRequests(db, conn.id, 1);
    // After the read, so that a load another call started meanwhile is seen here.
    const inFlight = this.#loading.get(conn.id);
    if (this.#answerable(inFlight)) throw loadingProblem(conn.id);
    if (latest?.state === 'Requested' && (await this.#sentByLiveReplica(latest))) throw loadingProblem(conn.id);
    if (latest?.state === 'Requested') {
      // Not answerable (checked above): its answer is lost, so it is closed and sent again below.
      const why =
        inFlight?.requestId === latest.id ? "the Agent's channel closed or was replaced" : 'the Service restarted';
      await finishMetadataRequest(
        db,
        latest.id,
        'Failed',
        nowIso(),
        `No answer arrived: ${why} while the Agent was loading the metadata.`,
        { report: false },
      );
    } else if (latest?.state === 'Failed' && latest.errorSeen === 0) {
      await markMetadataErrorSeen(db, latest.id);
      throw new FerryError(
        'API_METADATA_LOAD_FAILED',
        `Loading the metadata of Connection ${conn.name} failed: ${latest.errorMessage ?? 'unknown error'}`,
        {
          details: { connectionId: conn.id, requestId: latest.id, agentId: latest.agentId },
        },
      );
    }
    const loaderId = agentId ?? cache?.agentId ?? latest?.agentId;
    if (!loaderId) {
      throw new FerryError(
        'API_METADATA_AGENT_REQUIRED',
        `The metadata of Connection ${conn.name} was never loaded; give the agentId of an Agent that has the Connector and can reach the datastore.`,
        {
          details: { connectionId: conn.id },
        },
      );
    }
    const agent = await requireAgent(db, org.id, loaderId);
    commands.requireConnected(agent);
    // Another call may have started a load while this one awaited the store.
    if (this.#answerable(this.#loading.get(conn.id))) throw loadingProblem(conn.id);
    const id = newId();
    const entry: InFlight = { requestId: id, agentId: agent.id, channel: commands.channelOf(agent.id) };
    this.#loading.set(conn.id, entry);
    const forget = (): void => {
      if (this.#loading.get(conn.id) === entry) this.#loading.delete(conn.id);
    };
    try {
      await insertMetadataRequest(db, {
        id,
        orgId: org.id,
        connectionId: conn.id,
        agentId: agent.id,
        objectName: conn.name,
        startDate: nowIso(),
        endDate: null,
        state: 'Requested',
        errorMessage: null,
        replicaId: this.opts.replicaId ?? null,
      });
      await pruneMetadataRequests(db, conn.id, KEEP_REQUESTS);
      log.info({ requestId: id, agentId: agent.id, connectionId: conn.id }, 'metadata load requested');
      // The channel the command goes out on; the Agent may have reconnected while the store was written.
      entry.channel = commands.channelOf(agent.id);
      void this.#load(log, org, conn, agent.id, id, cache !== undefined).finally(forget);
    } catch (err) {
      forget();
      throw err;
    }
    throw loadingProblem(conn.id);
  }

  /** Whether another replica sent `req`, lives, and may still get its answer. */
  async #sentByLiveReplica(req: MetadataRequestRow): Promise<boolean> {
    const { replicaId } = req;
    if (!replicaId || replicaId === this.opts.replicaId) return false;
    if (Date.now() - Date.parse(req.startDate) > REMOTE_LOAD_MS) return false;
    return replicaAlive(this.opts.db, replicaId);
  }

  async #load(
    log: FastifyBaseLogger,
    org: OrgRow,
    conn: ConnectionRow,
    agentId: string,
    requestId: string,
    reload: boolean,
  ): Promise<void> {
    const { db } = this.opts;
    try {
      // Parsed (and unpacked when it came compressed) by the command's result schema.
      const md = await this.opts.commands.send(agentId, {
        type: 'loadMetadata',
        connectionId: conn.id,
        connectorId: conn.connectorId,
        properties: openProperties(this.opts.secrets, conn),
        reload,
      });
      await putMetadataCache(db, {
        connectionId: conn.id,
        orgId: org.id,
        agentId,
        metadata: JSON.stringify(md),
        loadedAt: nowIso(),
      });
      await setLastTestedAgent(db, conn.id, agentId);
      await finishMetadataRequest(db, requestId, 'Completed', nowIso(), null);
      log.info({ requestId, connectionId: conn.id, entities: md.entities.length }, 'metadata loaded');
    } catch (err) {
      const message = loadFailure(err);
      log.warn({ requestId, connectionId: conn.id, message }, 'metadata load failed');
      // A channel that closed before the answer is not the load's failure: the next call sends it again.
      const lost = isFerryError(err) && err.code === 'AGT_NOT_CONNECTED';
      await finishMetadataRequest(db, requestId, 'Failed', nowIso(), message, { report: !lost }).catch((e: unknown) =>
        log.error({ err: e, requestId }, 'metadata request result not stored'),
      );
    }
  }

  /** The Connection's latest metadata requests, newest first, and how many are kept. */
  async requests(
    conn: ConnectionRow,
    limit: number,
    offset: number,
  ): Promise<{ rows: MetadataRequestRow[]; total: number }> {
    const rows = await listMetadataRequests(this.opts.db, conn.id, limit, offset);
    return { rows, total: await countMetadataRequests(this.opts.db, conn.id) };
  }

  /**
   * The cached metadata, or loaded now through `agentId` and awaited (prepare: no POLL). The load
   * is recorded as a metadata request like any other; a failure throws API_METADATA_LOAD_FAILED
   * with the Agent's reason.
   */
  async ensure(log: FastifyBaseLogger, org: OrgRow, conn: ConnectionRow, agentId: string): Promise<MetadataDocument> {
    const { db } = this.opts;
    const cache = await getMetadataCache(db, conn.id);
    const cached = cache?.metadata ? MetadataDocument.safeParse(JSON.parse(cache.metadata)) : undefined;
    if (cached?.success) return cached.data;
    const id = newId();
    await insertMetadataRequest(db, {
      id,
      orgId: org.id,
      connectionId: conn.id,
      agentId,
      objectName: conn.name,
      startDate: nowIso(),
      endDate: null,
      state: 'Requested',
      errorMessage: null,
    });
    await pruneMetadataRequests(db, conn.id, KEEP_REQUESTS);
    await this.#load(log, org, conn, agentId, id, cache !== undefined);
    const fresh = await getMetadataCache(db, conn.id);
    const parsed = fresh?.metadata ? MetadataDocument.safeParse(JSON.parse(fresh.metadata)) : undefined;
    if (parsed?.success) return parsed.data;
    const [latest] = await listMetadataRequests(db, conn.id, 1);
    throw new FerryError(
      'API_METADATA_LOAD_FAILED',
      `Loading the metadata of Connection ${conn.name} failed: ${latest?.errorMessage ?? 'unknown error'}`,
      { details: { connectionId: conn.id, requestId: id, agentId } },
    );
  }

  /** The cached metadata without loading anything, or undefined when none is cached (or it does not fit the contract). */
  async cached(conn: ConnectionRow): Promise<MetadataDocument | undefined> {
    const cache = await getMetadataCache(this.opts.db, conn.id);
    const parsed = cache?.metadata ? MetadataDocument.safeParse(JSON.parse(cache.metadata)) : undefined;
    return parsed?.success ? parsed.data : undefined;
  }

  /** Forgets the cached metadata: the next read loads it again. */
  async reset(conn: ConnectionRow): Promise<void> {
    await resetMetadataCache(this.opts.db, conn.id);
  }
}

/** One entity by ID or fullName, case-insensitive; 404 otherwise. */
export function findEntity(
  md: MetadataDocument,
  idOrName: string,
  conn: Pick<ConnectionRow, 'id' | 'name'>,
): EntityMetadata {
  const key = idOrName.toLowerCase();
  const hit =
    md.entities.find((e) => e.id.toLowerCase() === key) ?? md.entities.find((e) => e.fullName.toLowerCase() === key);
  if (!hit)
    throw new FerryError(
      'API_NOT_FOUND',
      `Entity ${idOrName} was not found in the metadata of Connection ${conn.name}.`,
      { details: { connectionId: conn.id } },
    );
  return hit;
}

/** The stored reason of a failed load: the Agent's own error when it answered, else why it did not. */
function loadFailure(err: unknown): string {
  if (isFerryError(err)) {
    const answered = agentError(err);
    if (answered?.message !== undefined) return `${answered.code}: ${answered.message}`;
    return `${err.code}: ${err.message}`;
  }
  return err instanceof Error ? err.message : String(err);
}
