import { Readable } from 'node:stream';
import type { FastifyBaseLogger } from 'fastify';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';
import { LOG_UPLOAD_PATH } from '../../src/protocol/registration.js';
import { MAX_LOG_ARCHIVE_BYTES } from '../store/log-archives.js';
import {
  claimAgentLogDownload,
  getAgentLog,
  insertAgentLog,
  markAgentLogFailed,
  markAgentLogReady,
} from '../store/repos/agent-logs.repo.js';
import type { ZipLogsCommand } from '../../src/protocol/channel.js';
import type { ReportHandler } from '../gateway/report-handlers.js';
import type { AgentLogRow, AgentRow, SolutionRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { newId, nowIso } from '../util/values.js';
import { notConnected } from './commands.js';
import type { AgentRuntime } from './runtime.js';

/** The message SPEC.md gives for a GET before the archive arrived (clients match on it). */
export const LOGS_NOT_AVAILABLE = 'The Agent Logs are not available.';

/** The `logArchiveFailed` report: the Agent could not make or upload the archive, and its log request says why. */
export const logArchiveFailed: ReportHandler<'logArchiveFailed'> = async (tx, agent, report) => {
  await markAgentLogFailed(tx, report.logId, agent.id, report.error.message);
};

/** Same address, whether it arrived as IPv4 or IPv4-mapped IPv6. */
const sameIp = (a: string, b: string): boolean => a.replace(/^::ffff:/i, '') === b.replace(/^::ffff:/i, '');

const usedLog = (logId: string): FerryError =>
  new FerryError(
    'AGT_LOGS_USED',
    `Log archive ${logId} was already downloaded: a logId works once. POST again for a new archive.`,
  );

/** A Ready row whose archive this Service does not have (a file deleted, a replica's own folder): nothing is used up. */
const archiveMissing = (logId: string): FerryError =>
  new FerryError(
    'AGT_LOGS_NOT_AVAILABLE',
    `Log archive ${logId} was uploaded but is not on this Service replica (its stored archive is missing); the download was not used up. Get it through the replica that received the upload, or POST again for a new archive.`,
  );

const logNotFound = (logId: string): FerryError =>
  new FerryError('API_NOT_FOUND', `Log archive ${logId} was not found.`);

/** Which lines of a Solution's runs its archive keeps (every line of every run when empty). */
export interface SolutionLogFilter {
  /** Only the lines of this run (the execution's processExecutionId). */
  readonly runId?: string | undefined;
  /** Only lines logged at or after this instant. */
  readonly since?: Date | undefined;
}

/**
 * Agent log archives (SPEC.md "Logs"):
 *
 *   user POST …/logs ─▶ row Requested (caller's IP) ─▶ zipLogs {logId, uploadUrl} ─▶ Agent
 *   Agent zips its logs ─▶ PUT /v1/agent/logs/{logId} (bearer, application/zip) ─▶ archive, row Ready
 *   user GET …/logs/{logId} (same IP) ─▶ 404 "The Agent Logs are not available." until Ready,
 *        then the zip once (archive opened, row Downloaded, archive deleted); later GETs 410
 *
 * The archive is a file in the data folder on SQLite and chunks in the database on PostgreSQL,
 * where every replica reads it (store/log-archives.ts, store/log-archive-chunks.ts).
 *
 * A Solution's logs take the same path from the Solution's Agent, with `solutionId` on the row and
 * the command: the Agent keeps only the lines of that Solution's runs.
 */
export class AgentLogs {
  constructor(
    private readonly db: Db,
    private readonly runtime: Pick<AgentRuntime, 'commands' | 'logArchives'>,
  ) {}

  /** Records the request and asks the Agent to zip and upload its logs; answers the logId. */
  async request(agent: AgentRow, requester: { ip: string; name: string }, log: FastifyBaseLogger): Promise<string> {
    if (agent.isCloudAgent === 1) {
      throw new FerryError(
        'API_UNSUPPORTED',
        'Cloud Agent logs are per Solution: use POST /v1/orgs/{orgId}/solutions/{solutionId}/logs.',
      );
    }
    const logId = await this.#ask(agent, {}, requester);
    log.info({ agentId: agent.id, logId }, 'agent logs requested');
    return logId;
  }

  /**
   * Records the request and asks the Solution's Agent (On-Premise or Cloud) to zip the lines of
   * the Solution's runs, narrowed by `filter`, and upload them; answers the logId.
   */
  async requestForSolution(
    solution: Pick<SolutionRow, 'id' | 'orgId'>,
    agent: AgentRow,
    filter: SolutionLogFilter,
    requester: { ip: string; name: string },
    log: FastifyBaseLogger,
  ): Promise<string> {
    const extra = {
      solutionId: solution.id,
      ...(filter.runId !== undefined ? { runId: filter.runId } : {}),
      ...(filter.since ? { since: filter.since.toISOString() } : {}),
    };
    const logId = await this.#ask(agent, extra, requester);
    log.info({ agentId: agent.id, logId, ...extra }, 'solution logs requested');
    return logId;
  }

  async #ask(
    agent: AgentRow,
    filter: Pick<ZipLogsCommand, 'solutionId' | 'runId' | 'since'>,
    requester: { ip: string; name: string },
  ): Promise<string> {
    // Named by its ID, as the command bus names an Agent it cannot reach.
    if (!this.runtime.commands.isConnected(agent.id)) throw notConnected(agent.id);
    const logId = newId();
    await insertAgentLog(this.db, {
      id: logId,
      orgId: agent.orgId,
      agentId: agent.id,
      solutionId: filter.solutionId ?? null,
      requesterIp: requester.ip,
      requestedBy: requester.name,
      state: 'Requested',
      sizeBytes: null,
      error: null,
      requestedAt: nowIso(),
      uploadedAt: null,
      downloadedAt: null,
    });
    try {
      // A path: the Agent's session makes it absolute on the origin the Agent connected to.
      await this.runtime.commands.send(agent.id, {
        type: 'zipLogs',
        logId,
        uploadUrl: LOG_UPLOAD_PATH(logId),
        ...filter,
      });
    } catch (err) {
      await markAgentLogFailed(this.db, logId, agent.id, err instanceof Error ? err.message : String(err));
      throw err;
    }
    return logId;
  }

  /**
   * The archive for its one download, from the address that asked for it: the row and a stream of
   * the zip, whose archive goes when the stream closes (whether the client read it all or not).
   */
  async download(
    agent: AgentRow,
    logId: string,
    ip: string,
    log: FastifyBaseLogger,
  ): Promise<{ row: AgentLogRow; stream: Readable }> {
    const row = await getAgentLog(this.db, logId);
    // A Solution's archive is fetched from the Solution, not from its Agent.
    if (!row || row.agentId !== agent.id || row.orgId !== agent.orgId || row.solutionId !== null)
      throw logNotFound(logId);
    return this.#hand(row, ip, log);
  }

  /** The Solution's archive for its one download, under the rules of {@link download}. */
  async downloadForSolution(
    solution: Pick<SolutionRow, 'id' | 'orgId'>,
    logId: string,
    ip: string,
    log: FastifyBaseLogger,
  ): Promise<{ row: AgentLogRow; stream: Readable }> {
    const row = await getAgentLog(this.db, logId);
    // By the Solution, not its current Agent: an archive asked for before a move stays its own.
    if (!row || row.orgId !== solution.orgId || row.solutionId !== solution.id) throw logNotFound(logId);
    return this.#hand(row, ip, log);
  }

  async #hand(row: AgentLogRow, ip: string, log: FastifyBaseLogger): Promise<{ row: AgentLogRow; stream: Readable }> {
    if (!sameIp(row.requesterIp, ip)) {
      throw new FerryError(
        'AGT_LOGS_OTHER_IP',
        `The logs were requested from another IP address than ${ip}; download them from the same address, or POST again from this one.`,
      );
    }
    switch (row.state) {
      case 'Requested':
        throw new FerryError('AGT_LOGS_NOT_AVAILABLE', LOGS_NOT_AVAILABLE);
      case 'Failed':
        throw new FerryError(
          'AGT_LOGS_FAILED',
          `The Agent could not provide its logs: ${row.error ?? 'no reason given'}. POST again for a new attempt.`,
        );
      case 'Downloaded':
        throw usedLog(row.id);
      case 'Ready':
        break;
    }
    // Opened before the one download is claimed: an archive this Service cannot read leaves the
    // row Ready, for a retry where it is (or a new request), rather than used up for nothing.
    const archives = this.runtime.logArchives;
    const stream = await archives.open(row.id);
    if (!stream) {
      // Downloaded meanwhile (through another replica, which then deleted it): that is the answer.
      if ((await getAgentLog(this.db, row.id))?.state === 'Downloaded') throw usedLog(row.id);
      log.warn({ agentId: row.agentId, logId: row.id }, 'log archive missing');
      throw archiveMissing(row.id);
    }
    let claimed: boolean;
    try {
      claimed = await claimAgentLogDownload(this.db, row.id, nowIso());
    } catch (err) {
      stream.destroy();
      throw err;
    }
    if (!claimed) {
      stream.destroy();
      throw usedLog(row.id);
    }
    stream.once(
      'close',
      () =>
        void archives
          .remove(row.id)
          .catch((err: unknown) => log.warn({ err, logId: row.id }, 'log archive not removed')),
    );
    log.info(
      {
        agentId: row.agentId,
        logId: row.id,
        bytes: row.sizeBytes,
        ...(row.solutionId !== null ? { solutionId: row.solutionId } : {}),
      },
      'agent logs downloaded',
    );
    return { row, stream };
  }

  /** Stores the archive the Agent uploads for `logId` (once, at most MAX_LOG_ARCHIVE_BYTES); answers its size. */
  async receive(
    agent: AgentRow,
    logId: string,
    body: unknown,
    declaredBytes: number,
    log: FastifyBaseLogger,
  ): Promise<number> {
    const row = await getAgentLog(this.db, logId);
    if (!row || row.agentId !== agent.id)
      throw new FerryError('API_NOT_FOUND', `Log archive ${logId} was not requested from this Agent.`);
    if (row.state !== 'Requested')
      throw new FerryError('API_CONFLICT', `Log archive ${row.id} is ${row.state}; it takes one upload.`);
    if (!(body instanceof Readable))
      throw new FerryError('API_UNSUPPORTED_MEDIA_TYPE', 'Send the log archive as application/zip.');
    if (Number.isFinite(declaredBytes) && declaredBytes > MAX_LOG_ARCHIVE_BYTES) {
      throw new FerryError('API_PAYLOAD_TOO_LARGE', `A log archive may have at most ${MAX_LOG_ARCHIVE_BYTES} bytes.`);
    }
    const files = this.runtime.logArchives;
    let size: number;
    try {
      size = await files.write(row.id, body, MAX_LOG_ARCHIVE_BYTES);
    } catch (err) {
      if (isFerryError(err)) throw err;
      throw new FerryError('API_MALFORMED_BODY', 'The log archive upload was cut off; send it again.', { cause: err });
    }
    if (!(await markAgentLogReady(this.db, row.id, size, nowIso()))) {
      await files.remove(row.id);
      throw new FerryError('API_CONFLICT', `Log archive ${row.id} is no longer waiting for an upload.`);
    }
    log.info({ agentId: agent.id, logId: row.id, bytes: size }, 'agent log archive received');
    return size;
  }
}
