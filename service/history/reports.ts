import type { FastifyBaseLogger } from 'fastify';
import { isFerryError } from '../../src/errors/ferry-error.js';
import { errorsOf, RunMapStats, type RunRecordError } from '../../src/protocol/solutions.js';
import type { ReportHandler } from '../gateway/report-handlers.js';
import {
  existingErrorIds,
  getExecutionByRunId,
  insertErrors,
  insertExecutionIfNew,
  insertScheduleSkip,
  lastErrorSeq,
  updateExecution,
  type NewExecutionError,
} from '../store/repos/executions.repo.js';
import { getOrg } from '../store/repos/orgs.repo.js';
import { getSolution } from '../store/repos/solutions.repo.js';
import { recordUsage, type ServiceType } from '../store/repos/subscriptions.repo.js';
import type { StoreDialect } from '../store/dialect.js';
import type { AgentRow, ExecutionRow, SolutionRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { toFlag } from '../util/values.js';
import { isoOr } from './query.js';

/**
 * What the run reports of an Agent do to History (src/protocol/solutions.ts), registered by kind in
 * build-service.ts. Each runs inside the transaction that records the report, so a report applies
 * once per message ID; beyond that, each is idempotent by run ID (and errors by their own ID),
 * whatever order or repetition the reports arrive in:
 *
 *   runStarted ──▶ execution row (result null) if new ─▶ Solution.inProgressStartTime
 *   runProgress ─▶ counts, while the run has no result
 *   runErrors ───▶ (execution row if missing) ─▶ errors not stored yet, seq 1, 2, …
 *   runFinished ─▶ end of the execution ─┬▶ first time it gets a result: its counts, usage += processed
 *                                        └▶ Solution: in-progress cleared (if this run's),
 *                                           lastRunTime / lastRunResult (if not older)
 *   runCommitted ▶ an ended run's counts raised to what a target checkpoint holds (never lowered),
 *                  usage += the difference
 *   scheduleSkipped ▶ schedule_skips (once per due time)
 *
 * A report about a Solution that no longer exists, or that is not of the Agent's Organization,
 * is acknowledged and dropped: failing it would only block the Agent's outbox.
 */
export class RunReports {
  constructor(
    private readonly opts: {
      readonly log: FastifyBaseLogger;
      readonly dialect: StoreDialect;
      readonly onExecutionFinished?: ExecutionFinishedHook | undefined;
      /** An event run ended: the messages it still held go back (service/events/events.ts). */
      readonly onEventRunEnded?: ((tx: Db, solutionId: string, runId: string) => Promise<void>) | undefined;
    },
  ) {}

  /** The Solution a report is about, when it exists in the reporting Agent's Organization. */
  private async solution(tx: Db, agent: AgentRow, solutionId: string, kind: string): Promise<SolutionRow | undefined> {
    const row = await getSolution(tx, agent.orgId, solutionId);
    if (row) return row;
    this.opts.log.debug({ agentId: agent.id, solutionId, kind }, 'run report for an unknown Solution dropped');
    return undefined;
  }

  /** The execution of a run, created from what is known when no runStarted came before. */
  private async ensureExecution(tx: Db, agent: AgentRow, solution: SolutionRow, run: NewRun): Promise<ExecutionRow> {
    const runId = run.runId.toLowerCase();
    const found = await getExecutionByRunId(tx, runId);
    if (found) return found;
    const org = await getOrg(tx, solution.orgId);
    await insertExecutionIfNew(tx, {
      runId,
      solutionId: solution.id,
      orgId: solution.orgId,
      agentId: agent.id,
      trigger: run.trigger,
      dueAt: run.dueAt ?? null,
      start: run.start,
      stop: null,
      result: null,
      recordsProcessed: 0,
      recordsFailed: 0,
      details: null,
      stopped: 0,
      isReprocessJob: 0,
      // The Organization's setting until the run's end says where it kept its failed records.
      sourceDataLocal: org?.isSourceDataLocal ?? 0,
      statistics: '[]',
      lastProgressAt: null,
    });
    const row = await getExecutionByRunId(tx, runId);
    if (!row) throw new Error(`execution of run ${runId} vanished inside its transaction`);
    return row;
  }

  readonly runStarted: ReportHandler<'runStarted'> = async (tx, agent, r, now) => {
    const solution = await this.solution(tx, agent, r.solutionId, r.kind);
    if (!solution) return;
    const start = isoOr(r.at, now);
    const dueAt = r.dueAt === undefined ? null : isoOr(r.dueAt, r.dueAt);
    const execution = await this.ensureExecution(tx, agent, solution, {
      runId: r.runId,
      trigger: r.trigger,
      dueAt,
      start,
    });
    // A run that already finished (its end overtook its start) is not in progress again.
    if (execution.result !== null) return;
    // Errors that overtook the start made the row with what they knew: the start knows better.
    if (execution.start !== start || execution.trigger !== r.trigger || execution.dueAt !== dueAt) {
      await updateExecution(tx, execution.runId, { start, trigger: r.trigger, dueAt }, true);
    }
    await tx.updateTable('solutions').set({ inProgressStartTime: start }).where('id', '=', solution.id).execute();
  };

  readonly runProgress: ReportHandler<'runProgress'> = async (tx, agent, r, now) => {
    const solution = await this.solution(tx, agent, r.solutionId, r.kind);
    if (!solution) return;
    await updateExecution(
      tx,
      r.runId.toLowerCase(),
      { recordsProcessed: r.processed, recordsFailed: r.failed, lastProgressAt: isoOr(r.at, now) },
      true,
    );
  };

  readonly runErrors: ReportHandler<'runErrors'> = async (tx, agent, r, now) => {
    const solution = await this.solution(tx, agent, r.solutionId, r.kind);
    if (!solution) return;
    const execution = await this.ensureExecution(tx, agent, solution, {
      runId: r.runId,
      trigger: 'start',
      dueAt: null,
      start: now,
    });
    const errors = errorsOf(r);
    const ids = errors.map((e) => e.id.toLowerCase());
    const stored = await existingErrorIds(tx, ids, this.opts.dialect);
    let seq = await lastErrorSeq(tx, execution.id);
    // A new error follows the execution's mark default (migration 023), except after a mark-all
    // (default 1): that marked the errors it saw, so a later one starts unmarked, on its own.
    const marked = execution.markDefault === 1 ? 0 : null;
    const rows: NewExecutionError[] = [];
    for (let i = 0; i < errors.length; i++) {
      const id = ids[i] as string;
      if (stored.has(id)) continue;
      stored.add(id);
      const e = errors[i] as RunRecordError;
      rows.push({
        id,
        executionId: execution.id,
        seq: (seq += 1),
        mapId: e.mapId ?? null,
        mapName: e.mapName,
        sourceEntity: e.sourceEntity,
        blockId: e.blockId ?? null,
        blockName: e.blockName ?? null,
        code: e.code,
        errorMessage: e.errorMessage,
        errorDetail: e.errorDetail,
        canReprocess: toFlag(e.canReprocess),
        marked,
        failedRecordId: e.failedRecordId ?? null,
        created: now,
        sourceKey: e.sourceKey === undefined ? null : JSON.stringify(e.sourceKey),
        sourceRow: e.sourceRow ?? null,
      });
    }
    await insertErrors(tx, rows, this.opts.dialect);
  };

  readonly runFinished: ReportHandler<'runFinished'> = async (tx, agent, r, now) => {
    const solution = await this.solution(tx, agent, r.solutionId, r.kind);
    if (!solution) return;
    const runId = r.runId.toLowerCase();
    const startedAt = isoOr(r.startedAt, now);
    const before = await this.ensureExecution(tx, agent, solution, {
      runId,
      trigger: r.trigger,
      dueAt: null,
      start: startedAt,
    });
    // The end's counts are what the Agent counted committed, also for a run that ended with its
    // Agent process (RUN_AGENT_ENDED: the counts it kept after each batch), and they add up to its
    // statistics: they replace what the progress said. An older Agent reported such a run with no
    // counts and no statistics at all: then what its progress said stands, and is counted.
    const countless = r.processed === 0 && r.failed === 0 && r.statistics.length === 0 && before.result === null;
    const processed = countless ? Number(before.recordsProcessed) : r.processed;
    const failed = countless ? Number(before.recordsFailed) : r.failed;
    const end = {
      trigger: r.trigger,
      start: startedAt,
      stop: isoOr(r.at, now),
      result: r.result,
      recordsProcessed: processed,
      recordsFailed: failed,
      details: r.details ?? null,
      stopped: toFlag(r.stopped),
      sourceDataLocal: toFlag(r.sourceDataLocal),
      statistics: JSON.stringify(r.statistics),
    };
    // The first end applied decides: a re-sent end (a new message ID after an Agent crash) changes
    // nothing, so its records are not counted twice.
    const first = await updateExecution(tx, runId, end, true);
    // Any run (an event run ended with an older Agent was reported as a start), also a re-sent
    // end: it gives back only what the run still holds.
    await this.opts.onEventRunEnded?.(tx, solution.id, runId);
    if (!first) return;

    // The Solution is in progress with this run when its in-progress start is this run's.
    const thisRun =
      solution.inProgressStartTime !== null &&
      (solution.inProgressStartTime === before.start || solution.inProgressStartTime === startedAt);
    const newest = solution.lastRunTime === null || solution.lastRunTime <= startedAt;
    const patch = {
      ...(thisRun ? { inProgressStartTime: null } : {}),
      ...(newest ? { lastRunTime: startedAt, lastRunResult: r.result } : {}),
    };
    if (Object.keys(patch).length > 0)
      await tx.updateTable('solutions').set(patch).where('id', '=', solution.id).execute();
    if (processed > 0) await this.countUsage(tx, solution, processed, [end.stop, now]);
    await this.opts.onExecutionFinished?.(tx, { solution, agent, execution: { ...before, ...end } });
  };

  /**
   * A run that ended with its Agent process had written more of a Map or entity than its end said
   * (a later run found its counts in the target's checkpoint): the larger figures win — the Map's
   * or entity's statistics, the run's counts, its stop time — and the Subscription is charged the
   * records not counted yet. Applied to an ended run only; a figure not larger changes nothing.
   */
  readonly runCommitted: ReportHandler<'runCommitted'> = async (tx, agent, r, now) => {
    const solution = await this.solution(tx, agent, r.solutionId, r.kind);
    if (!solution) return;
    const before = await getExecutionByRunId(tx, r.runId.toLowerCase());
    if (!before || before.result === null || before.solutionId !== solution.id) return;
    const statistics = parseStatistics(before.statistics);
    if (!statistics) return;
    const same = (s: RunMapStats): boolean =>
      r.entity !== undefined && r.mapId === undefined
        ? s.entity === r.entity && s.mapId === undefined
        : s.mapId === r.mapId;
    const entry = statistics.find(same);
    const processedBefore = entry?.processed ?? 0;
    const failedBefore = entry?.failed ?? 0;
    if (r.processed <= processedBefore) return;
    const failed = Math.max(failedBefore, r.failed);
    const corrected: RunMapStats = entry
      ? { ...entry, processed: r.processed, failed }
      : {
          ...(r.mapId !== undefined ? { mapId: r.mapId } : {}),
          mapName: r.mapName,
          ...(r.entity !== undefined ? { entity: r.entity } : {}),
          processed: r.processed,
          failed,
          minMs: 0,
          maxMs: 0,
          avgMs: 0,
          totalMs: 0,
          totalTime: '00:00:00',
          blocks: [],
        };
    const next = entry ? statistics.map((s) => (s === entry ? corrected : s)) : [...statistics, corrected];
    const added = r.processed - processedBefore;
    const stop = before.stop === null || r.at > before.stop ? r.at : before.stop;
    // Only over the statistics read here: a correction applied meanwhile is not undone.
    const res = await tx
      .updateTable('executions')
      .set({
        statistics: JSON.stringify(next),
        recordsProcessed: Number(before.recordsProcessed) + added,
        recordsFailed: Number(before.recordsFailed) + (failed - failedBefore),
        stop,
      })
      .where('runId', '=', before.runId)
      .where('statistics', '=', before.statistics)
      .executeTakeFirst();
    if (Number(res.numUpdatedRows) === 0) return;
    await this.countUsage(tx, solution, added, [stop, now]);
  };

  readonly scheduleSkipped: ReportHandler<'scheduleSkipped'> = async (tx, agent, r, now) => {
    const solution = await this.solution(tx, agent, r.solutionId, r.kind);
    if (!solution) return;
    await insertScheduleSkip(tx, {
      solutionId: solution.id,
      dueAt: isoOr(r.dueAt, r.dueAt),
      reason: r.reason,
      at: isoOr(r.at, now),
    });
  };

  /**
   * Adds a run's processed records to the Organization's Subscription of the Solution's service
   * type current at the run's end, else (an Agent clock behind the Service's, a Subscription that
   * began during the run) the one current when the report arrived. An Organization without either
   * keeps its History: the run happened.
   */
  private async countUsage(tx: Db, solution: SolutionRow, records: number, times: readonly string[]): Promise<void> {
    for (const at of new Set(times)) {
      try {
        await recordUsage(tx, {
          orgId: solution.orgId,
          serviceType: serviceTypeOf(solution.solutionType),
          records,
          at: new Date(at),
        });
        return;
      } catch (err) {
        if (!isFerryError(err) || err.code !== 'SVC_NO_SUBSCRIPTION') throw err;
      }
    }
    this.opts.log.warn(
      { orgId: solution.orgId, solutionId: solution.id, records },
      'run records not counted: no current Subscription',
    );
  }
}

/** An execution's statistics column as RunMapStats, or null when it does not read as such (then it is left as it is). */
function parseStatistics(text: string): RunMapStats[] | null {
  try {
    const parsed = RunMapStats.array().safeParse(JSON.parse(text));
    return parsed.success ? parsed.data : null;
  } catch {
    return null;
  }
}

/** A run's end as History recorded it (once per execution), for what follows it: notification mails. */
export interface FinishedExecution {
  readonly solution: SolutionRow;
  readonly agent: AgentRow;
  readonly execution: ExecutionRow;
}

/** Called inside the runFinished report's transaction, after the end was applied the first time. */
export type ExecutionFinishedHook = (tx: Db, finished: FinishedExecution) => Promise<void>;

interface NewRun {
  readonly runId: string;
  readonly trigger: string;
  readonly dueAt: string | null;
  readonly start: string;
}

/** The Subscription a Solution's runs count against, by its type. */
export function serviceTypeOf(solutionType: string): ServiceType {
  if (solutionType === 'Replication') return 'RS';
  if (solutionType === 'Migration') return 'MS';
  return 'IS';
}
