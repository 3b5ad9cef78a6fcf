import type { FastifyBaseLogger } from 'fastify';
import type { Readable } from 'node:stream';
import { FerryError } from '../../src/errors/ferry-error.js';
import { requireAgent } from '../agents/agents.js';
import type { AgentLogs } from '../agents/logs.js';
import { getExecution } from '../store/repos/executions.repo.js';
import { getSolution } from '../store/repos/solutions.repo.js';
import type { AgentLogRow, SolutionRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { solutionNotFound } from './solutions.js';

/** What a user may narrow a Solution's archive to. */
export interface SolutionLogQuery {
  /** One execution of the Solution: its History `id`, or its `processExecutionId`. */
  readonly historyId?: number | string | undefined;
  /** Only lines logged at or after this instant. */
  readonly since?: Date | undefined;
}

/**
 * A Solution's logs (SPEC.md "Logs"): the lines of its runs, from the Agent that runs it, through
 * the Agent log archive path ({@link AgentLogs}) with the same single-use and same-IP rules.
 *
 *   POST S/logs[?historyId&since] ─▶ Solution ─▶ its Agent ─▶ zipLogs {solutionId, runId?, since?}
 *   Agent: every log file, current and rotated, read a line at a time; lines of other Solutions dropped
 *   GET S/logs/{logId} ─▶ the archive row of this Solution ─▶ the zip, once
 */
export class SolutionLogs {
  constructor(
    private readonly db: Db,
    private readonly logs: AgentLogs,
  ) {}

  /** Asks the Solution's Agent for the lines of its runs; answers the logId. */
  async request(
    orgId: number,
    solutionId: string,
    query: SolutionLogQuery,
    requester: { ip: string; name: string },
    log: FastifyBaseLogger,
  ): Promise<{ solution: SolutionRow; logId: string }> {
    const solution = await this.#solution(orgId, solutionId);
    // The execution first: a wrong historyId is the user's to fix whether the Agent is online or not.
    let runId: string | undefined;
    if (query.historyId !== undefined) {
      const ref = typeof query.historyId === 'string' ? query.historyId.toLowerCase() : query.historyId;
      const execution = await getExecution(this.db, solution.id, ref);
      if (!execution)
        throw new FerryError(
          'API_NOT_FOUND',
          `Execution ${query.historyId} was not found in the History of Solution ${solution.id}.`,
        );
      runId = execution.runId;
    }
    const agent = await requireAgent(this.db, orgId, solution.agentId);
    const logId = await this.logs.requestForSolution(solution, agent, { runId, since: query.since }, requester, log);
    return { solution, logId };
  }

  /** The archive for its one download, from the address that asked for it. */
  async download(
    orgId: number,
    solutionId: string,
    logId: string,
    ip: string,
    log: FastifyBaseLogger,
  ): Promise<{ row: AgentLogRow; stream: Readable }> {
    const solution = await this.#solution(orgId, solutionId);
    return this.logs.downloadForSolution(solution, logId, ip, log);
  }

  async #solution(orgId: number, solutionId: string): Promise<SolutionRow> {
    const row = await getSolution(this.db, orgId, solutionId);
    if (!row) throw solutionNotFound(orgId, solutionId);
    return row;
  }
}
