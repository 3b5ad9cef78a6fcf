import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';
import {
  MAX_REPROCESS_PAGE,
  type ReprocessMap,
  type ReprocessPage,
  type ReprocessRunResult,
} from '../../src/protocol/reprocess.js';
import type { ConnectorRecord } from '../../src/connectors/sdk.js';
import type { SecretBox } from '../crypto/master-key.js';
import { agentError, type AgentCommand, type SolutionCommandPolicy } from '../gateway/agent-command.js';
import { getAgent } from '../store/repos/agents.repo.js';
import { takeMarked, takenPage, takenPerMap, undoReprocessRun } from '../store/repos/error-marks.repo.js';
import { getExecutionByRunId, insertExecutionIfNew } from '../store/repos/executions.repo.js';
import { getOrg } from '../store/repos/orgs.repo.js';
import type { AgentRow, Database, ExecutionRow, SolutionRow } from '../store/schema.js';
import type { Store } from '../store/store.js';
import { newId } from '../util/values.js';

/** The answer of a reprocess call. */
export interface ReprocessAnswer {
  readonly solutionId: string;
  /** The execution whose marked records were asked for. */
  readonly historyId: number;
  /** The reprocess run (its own execution's processExecutionId); when ignored, the run in progress, if any. */
  readonly runId: string | null;
  /** False when nothing was marked, or a run of the Solution is in progress (then nothing was taken). */
  readonly started: boolean;
  /** Records the run reprocesses. */
  readonly records: number;
  readonly message: string;
}

/** The channel to the Agents, as History needs it (the Agents' commands, passed in by build-service.ts). */
export interface ReprocessCommands {
  isConnected(agentId: string): boolean;
  sendAboutSolution(
    agentId: string,
    build: () => Promise<AgentCommand<'reprocessRun'>>,
    policy: SolutionCommandPolicy,
  ): Promise<ReprocessRunResult>;
}

/** The Solutions' definitions on their Agents (the Solutions' assignments, passed in by build-service.ts). */
export interface ReprocessAssignments {
  /** The definition the Agent should hold, when the Solution was prepared for it. */
  definition(solutionId: string): Promise<{ readonly version: string } | undefined>;
  /** Brings the Agent's copies up to date. */
  sync(agentId: string): Promise<void>;
}

export interface ReprocessingOptions {
  readonly db: Kysely<Database>;
  /**
   * The transaction that takes (or gives back) the marked errors, a write of every one of them: on
   * SQLite a million take seconds, which would hold up every other request on the event loop.
   */
  readonly bulkTransaction: Store['bulkTransaction'];
  readonly secrets: SecretBox;
  readonly commands: ReprocessCommands;
  readonly assignments: ReprocessAssignments;
  readonly log: FastifyBaseLogger;
}

/** A page of copies holds at most about this much source data (the Agent holds one page at a time). */
const PAGE_BYTES = 4 * 1024 * 1024;

/**
 * Reprocessing the marked records of an execution on the Solution's Agent (src/protocol/reprocess.ts
 * has the flow). The marked errors are taken by one UPDATE — each can be reprocessed once, so they
 * are no longer reprocessable from then on, whatever the run's outcome — and the run gets its own
 * execution (`isReprocessJob`) before the Agent is asked. An Agent that does not start it (a run of
 * the Solution is in progress, it is draining, it lacks the Solution) gives the records back: they
 * stay marked, and the execution is removed. When no answer comes (a time-out, the channel dropped)
 * the run stays until the Agent says whether it has it (./lost-reprocess-runs.ts).
 */
export class Reprocessing {
  /** Runs taken in this process whose reprocessRun has not been answered yet: the lost-run check leaves them alone. */
  readonly #sending = new Set<string>();

  constructor(private readonly opts: ReprocessingOptions) {}

  /** Whether this process is still waiting for the Agent's answer to the run's reprocessRun. */
  isSending(runId: string): boolean {
    return this.#sending.has(runId);
  }

  async reprocess(solution: SolutionRow, execution: ExecutionRow): Promise<ReprocessAnswer> {
    const runId = newId();
    this.#sending.add(runId);
    try {
      return await this.#reprocess(solution, execution, runId);
    } finally {
      this.#sending.delete(runId);
    }
  }

  async #reprocess(solution: SolutionRow, execution: ExecutionRow, runId: string): Promise<ReprocessAnswer> {
    const { db, commands } = this.opts;
    const base = { solutionId: solution.id, historyId: execution.id };
    if (solution.isDisabled === 1)
      throw new FerryError(
        'API_CONFLICT',
        `Solution ${solution.name} is disabled; enable it (PUT the Solution with isDisabled false) to reprocess its records.`,
      );
    const agent = await getAgent(db, solution.orgId, solution.agentId);
    if (!agent)
      throw new FerryError(
        'API_NOT_FOUND',
        `Agent ${solution.agentId} was not found in Organization ${solution.orgId}.`,
      );
    if (!commands.isConnected(agent.id)) {
      throw new FerryError(
        'AGT_NOT_CONNECTED',
        `Agent ${agent.name} is not connected; start it (or wait until its status is Running) and try again.`,
        { details: { agentId: agent.id } },
      );
    }
    const org = await getOrg(db, solution.orgId);
    const maps = await this.opts.bulkTransaction(async (tx) => {
      const taken = await takeMarked(tx, execution.id, runId);
      if (taken === 0) return [];
      await insertExecutionIfNew(tx, {
        runId,
        solutionId: solution.id,
        orgId: solution.orgId,
        agentId: agent.id,
        trigger: 'start',
        dueAt: null,
        start: new Date().toISOString(),
        stop: null,
        result: null,
        recordsProcessed: 0,
        recordsFailed: 0,
        details: null,
        stopped: 0,
        isReprocessJob: 1,
        sourceDataLocal: org?.isSourceDataLocal ?? 0,
        statistics: '[]',
        lastProgressAt: null,
      });
      return takenPerMap(tx, runId);
    });
    const records = maps.reduce((n, m) => n + m.records, 0);
    if (records === 0) {
      return {
        ...base,
        runId: null,
        started: false,
        records: 0,
        message: `No record of execution ${execution.id} is marked for reprocessing (a record can be reprocessed once); mark records first.`,
      };
    }
    let answer: ReprocessRunResult;
    try {
      answer = await this.#send(solution, agent, runId, execution.id, maps);
    } catch (err) {
      // The Agent answered: it did not start the run.
      if (agentError(err) !== undefined) {
        await this.#undo(runId);
        throw err;
      }
      // No answer: the Agent may have started it. It says so when asked (./lost-reprocess-runs.ts).
      if (isFerryError(err) && (err.code === 'CHN_TIMEOUT' || err.code === 'AGT_NOT_CONNECTED')) {
        this.opts.log.warn(
          { solutionId: solution.id, executionId: execution.id, runId, agentId: agent.id, code: err.code },
          'reprocess run not confirmed by the agent',
        );
        const what =
          err.code === 'CHN_TIMEOUT'
            ? 'did not answer the reprocess command in time'
            : 'disconnected before answering the reprocess command';
        throw new FerryError(
          err.code,
          `Agent ${agent.name} ${what}. Reprocess run ${runId} (${records} record${records === 1 ? '' : 's'}) shows as in progress until the Agent says whether it started it; it is asked when it connects and every minute. If it did not, the records are given back, still marked, and the run leaves History: reprocess them again then.`,
          { details: { ...err.details, solutionId: solution.id, historyId: execution.id, runId }, cause: err },
        );
      }
      throw err;
    }
    if (!answer.started) {
      await this.#undo(runId);
      return {
        ...base,
        runId: answer.runId ?? null,
        started: false,
        records: 0,
        message: `Solution ${solution.name} is running; the reprocess was ignored and the records stay marked. Reprocess again once the run has finished.`,
      };
    }
    this.opts.log.info({ solutionId: solution.id, executionId: execution.id, runId, records }, 'reprocess run started');
    return {
      ...base,
      runId,
      started: true,
      records,
      message: `Reprocessing ${records} record${records === 1 ? '' : 's'} of execution ${execution.id} on Agent ${agent.name}.`,
    };
  }

  /** The records of a reprocess run of one Map after `after`, for the Agent that runs it; their copies when the Service keeps them. */
  async page(agent: AgentRow, runId: string, mapId: number, after: number): Promise<ReprocessPage> {
    const run = await getExecutionByRunId(this.opts.db, runId.toLowerCase());
    if (!run || run.isReprocessJob !== 1 || run.agentId !== agent.id || run.orgId !== agent.orgId) {
      throw new FerryError('API_NOT_FOUND', `Reprocess run ${runId} was not found for this Agent.`);
    }
    const rows = await takenPage(this.opts.db, run.solutionId, run.runId, mapId, after, MAX_REPROCESS_PAGE);
    const records: ReprocessPage['records'] = [];
    let bytes = 0;
    for (const r of rows) {
      if (records.length > 0 && bytes > PAGE_BYTES) break;
      const text = r.source === null ? undefined : this.opts.secrets.open(r.source);
      bytes += text?.length ?? 0;
      records.push({
        seq: r.seq,
        errorId: r.errorId,
        failedRecordId: r.failedRecordId,
        ...(text !== undefined ? { source: JSON.parse(text) as ConnectorRecord } : {}),
      });
    }
    const last = records.at(-1);
    const more = records.length < rows.length || rows.length === MAX_REPROCESS_PAGE;
    return { records, next: more && last ? last.seq : null };
  }

  async #undo(runId: string): Promise<void> {
    await this.opts.bulkTransaction((tx) => undoReprocessRun(tx, runId));
  }

  /** Sends the run at the Service's version of the Solution, with the commands' policy for an Agent that does not hold it or is draining. */
  async #send(
    solution: SolutionRow,
    agent: AgentRow,
    runId: string,
    executionId: number,
    maps: readonly ReprocessMap[],
  ): Promise<ReprocessRunResult> {
    const { commands, assignments } = this.opts;
    return commands.sendAboutSolution(
      agent.id,
      async () => {
        const version = (await assignments.definition(solution.id))?.version;
        return {
          type: 'reprocessRun',
          solutionId: solution.id,
          runId,
          executionId,
          ...(version ? { version } : {}),
          maps: [...maps],
        } as const;
      },
      {
        sync: (agentId) => assignments.sync(agentId),
        draining: `The Agent of Solution ${solution.name} is waiting to restart or to update a Connector and starts no new run; reprocess again once the Agent is Running.`,
        details: { solutionId: solution.id },
      },
    );
  }
}
