import type { FastifyBaseLogger } from 'fastify';
import type { Kysely } from 'kysely';
import { FerryError } from '../../src/errors/ferry-error.js';
import type {
  ChangeCaptureStatusResult,
  MonitorSolutionResult,
  StartSolutionResult,
} from '../../src/protocol/solutions.js';
import { requireAgent } from '../agents/agents.js';
import type { AgentCommands } from '../agents/commands.js';
import { latestExecution } from '../store/repos/executions.repo.js';
import { getSolution } from '../store/repos/solutions.repo.js';
import { pendingMovesOf } from '../store/repos/prepare.repo.js';
import type { Database, OrgRow, SolutionRow } from '../store/schema.js';
import { newId } from '../util/values.js';
import type { SolutionAssignments } from './assignments.js';
import type { PrepareJobs } from './prepare.js';
import { solutionNotFound } from './solutions.js';

/** The answer of a start: the run it started (or the one already running), or the prepare it waits for. */
export interface StartAnswer {
  readonly solutionId: string;
  /** The run's ID (History `processExecutionId`): the new run, or the one in progress when the start was ignored. */
  readonly runId: string | null;
  /** False when the start was ignored because a run of the Solution is in progress. */
  readonly started: boolean;
  /** The prepare job the start waits for (an unprepared Solution is prepared first), else null. */
  readonly prepareId: string | null;
  readonly message: string;
}

export interface SolutionRunsOptions {
  readonly db: Kysely<Database>;
  readonly commands: AgentCommands;
  readonly prepare: PrepareJobs;
  readonly assignments: SolutionAssignments;
  readonly log: FastifyBaseLogger;
}

/**
 * Starting, stopping and monitoring runs (SPEC.md POST S/start, stop, startmonitor, stopmonitor).
 * Runs execute on the Solution's Agent; this class only sends the commands. A start of a Solution
 * that is not prepared prepares it first and starts it when the prepare succeeds; a start while a
 * run is in progress is ignored, without an error, and names the run in progress.
 */
export class SolutionRuns {
  constructor(private readonly opts: SolutionRunsOptions) {}

  async #solution(orgId: number, id: string): Promise<SolutionRow> {
    const row = await getSolution(this.opts.db, orgId, id);
    if (!row) throw solutionNotFound(orgId, id);
    return row;
  }

  /**
   * Starts a run of the Solution, or of only `opts.mapIds` of its Maps (the Maps API's single-Map
   * run: recorded in History as a run of the Solution, ignored like a start while one runs).
   */
  async start(org: OrgRow, solutionId: string, opts: { mapIds?: readonly number[] } = {}): Promise<StartAnswer> {
    const { db, commands, log } = this.opts;
    const solution = await this.#solution(org.id, solutionId);
    if (solution.isDisabled === 1)
      throw new FerryError(
        'API_CONFLICT',
        `Solution ${solution.name} is disabled; enable it (PUT the Solution with isDisabled false) to run it.`,
      );
    const agent = await requireAgent(db, org.id, solution.agentId);
    commands.requireConnected(agent);
    const holders = await pendingMovesOf(db, solution.id);
    if (holders.length > 0) {
      throw new FerryError(
        'API_CONFLICT',
        `Solution ${solution.name} moved to Agent ${agent.name}, but the Agent it left (${holders.join(', ')}) has not yet confirmed that it dropped it, so that no due time runs twice. It runs on ${agent.name} once that Agent connects; delete that Agent if it is gone for good.`,
        { details: { solutionId: solution.id, agentIds: holders } },
      );
    }
    const runId = newId();
    if (solution.prepared !== 1 || this.opts.prepare.isRunning(solution.id)) {
      const { job, done } = await this.opts.prepare.start(org, solution.id);
      void done
        .then(async (finished) => {
          if (finished.hasError === 1) return;
          await this.#send(solution, runId, opts.mapIds);
        })
        .catch((err: unknown) => log.warn({ err, solutionId: solution.id, runId }, 'start after prepare failed'));
      return {
        solutionId: solution.id,
        runId,
        started: true,
        prepareId: job.id,
        message: `Solution ${solution.name} is being prepared; the run starts when the prepare succeeds (GET …/prepare/${job.id}).`,
      };
    }
    const answer = await this.#send(solution, runId, opts.mapIds);
    return {
      solutionId: solution.id,
      runId: answer.runId ?? runId,
      started: answer.started,
      prepareId: null,
      message: answer.started
        ? `Solution ${solution.name} started.`
        : `Solution ${solution.name} is already running; the start was ignored.`,
    };
  }

  /**
   * Sends the start at the version the Service holds (an Agent with an older copy — a password or
   * a schedule changed since — is brought up to date first, as docs/solutions.md says), with the
   * commands' policy for an Agent that does not hold the Solution or is draining.
   */
  async #send(solution: SolutionRow, runId: string, mapIds?: readonly number[]): Promise<StartSolutionResult> {
    const { commands, assignments } = this.opts;
    return commands.sendAboutSolution(
      solution.agentId,
      async () => {
        const version = (await assignments.definition(solution.id))?.version;
        return {
          type: 'startSolution',
          solutionId: solution.id,
          runId,
          ...(version ? { version } : {}),
          ...(mapIds ? { mapIds: [...mapIds] } : {}),
        } as const;
      },
      {
        sync: (agentId) => assignments.sync(agentId),
        draining: `The Agent of Solution ${solution.name} is waiting to restart or to update a Connector: it lets running Solutions finish and starts no new run. Start the Solution again once the Agent is Running.`,
        details: { solutionId: solution.id },
      },
    );
  }

  /** Cancels the run in progress between batches; nothing to stop is not an error. */
  async stop(
    org: OrgRow,
    solutionId: string,
  ): Promise<{ solutionId: string; stopping: boolean; runId: string | null }> {
    const { db, commands } = this.opts;
    const solution = await this.#solution(org.id, solutionId);
    const agent = await requireAgent(db, org.id, solution.agentId);
    commands.requireConnected(agent);
    const r = await commands.send(agent.id, { type: 'stopSolution', solutionId: solution.id });
    return { solutionId: solution.id, stopping: r.stopping, runId: r.runId ?? null };
  }

  /** What the source keeps for a Replication that captures changes from its log, read by its Agent (docs/change-capture.md). */
  async changeCapture(org: OrgRow, solutionId: string): Promise<ChangeCaptureStatusResult & { solutionId: string }> {
    const { db, commands } = this.opts;
    const solution = await this.#solution(org.id, solutionId);
    const agent = await requireAgent(db, org.id, solution.agentId);
    commands.requireConnected(agent);
    const r = await commands.send(agent.id, { type: 'changeCaptureStatus', solutionId: solution.id });
    return { solutionId: solution.id, ...r };
  }

  /**
   * The records processed so far by the run in progress, read from the Agent; when none runs, the
   * final counts of the last run from History (a person who polls until `running` is false reads
   * how the run ended, not zeros), and zeros only for a Solution that never ran.
   */
  async monitor(org: OrgRow, solutionId: string): Promise<MonitorSolutionResult & { solutionId: string }> {
    const { db, commands } = this.opts;
    const solution = await this.#solution(org.id, solutionId);
    const agent = await requireAgent(db, org.id, solution.agentId);
    commands.requireConnected(agent);
    const r = await commands.send(agent.id, { type: 'monitorSolution', solutionId: solution.id });
    if (r.running) return { solutionId: solution.id, ...r };
    const last = await latestExecution(db, solution.id);
    if (!last) return { solutionId: solution.id, ...r };
    return {
      solutionId: solution.id,
      running: false,
      runId: last.runId,
      startedAt: last.start,
      processed: last.recordsProcessed,
      failed: last.recordsFailed,
    };
  }
}
