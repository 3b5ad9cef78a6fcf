import type { Kysely } from 'kysely';
import { FerryError } from '../../src/errors/ferry-error.js';
import type { RunMapStats } from '../../src/protocol/solutions.js';
import { getExecution } from '../store/repos/executions.repo.js';
import { getMapRun, insertMapRun, pruneMapPreviews } from '../store/repos/map-previews.repo.js';
import type { Database, ExecutionRow, MapRunRow, OrgRow } from '../store/schema.js';
import { newId } from '../util/values.js';
import type { SolutionMaps } from './maps.js';
import type { PrepareJobs } from './prepare.js';
import type { SolutionRuns } from './runs.js';

/** Single-Map run commands are kept as long as History keeps executions (45 days). */
export const MAP_RUN_RETENTION_MS = 45 * 24 * 60 * 60 * 1000;

/** Where a single-Map run is: waiting (for a prepare or the Agent's queue), running, ended, refused before it began, or ignored. */
export type MapRunStatus = 'queued' | 'running' | 'finished' | 'failed' | 'ignored';

/** A single-Map run command and what History says about its run. */
export interface MapRunView {
  readonly row: MapRunRow;
  readonly status: MapRunStatus;
  readonly message: string;
  /** The run's History execution, once the Agent reported its start. */
  readonly execution: ExecutionRow | undefined;
  /** The Map's statistics in that execution. */
  readonly statistics: RunMapStats | undefined;
}

export interface MapRunsOptions {
  readonly db: Kysely<Database>;
  readonly maps: SolutionMaps;
  readonly runs: SolutionRuns;
  readonly prepare: PrepareJobs;
}

/**
 * One Map of a Solution run on the Solution's Agent (SPEC.md POST S/maps/{mapId}/run): a start of
 * the Solution limited to that Map, so it is recorded in History like a run of its Solution (with
 * that Map's statistics), prepares the Solution first when needed, and is ignored, without an
 * error, while the Solution (or another of its Maps) runs.
 *
 *   POST …/run ─▶ SolutionRuns.start(mapIds [mapId]) ─▶ map_runs row {commandId, runId | ignored}
 *   GET  …/run/{commandId} ─▶ row ─▶ History execution by runId ─▶ queued | running | finished
 */
export class MapRuns {
  constructor(private readonly opts: MapRunsOptions) {}

  async run(org: OrgRow, solutionId: string, mapId: number): Promise<MapRunView> {
    const { db, maps, runs } = this.opts;
    const map = await maps.get(org.id, solutionId, mapId);
    const answer = await runs.start(org, map.row.solutionId, { mapIds: [map.row.id] });
    const now = new Date();
    await pruneMapPreviews(db, now.toISOString());
    const row: MapRunRow = {
      id: answer.started ? (answer.runId ?? newId()) : newId(),
      orgId: org.id,
      solutionId: map.row.solutionId,
      mapId: map.row.id,
      runId: answer.runId,
      ignored: answer.started ? 0 : 1,
      prepareId: answer.prepareId,
      message: answer.started
        ? answer.prepareId
          ? `Solution is being prepared; Map ${map.row.name} runs when the prepare succeeds.`
          : `Map ${map.row.name} started.`
        : `Map ${map.row.name} was not run: its Solution is running (run ${answer.runId ?? 'in progress'}); the command was ignored.`,
      requestedAt: now.toISOString(),
      expiresAt: new Date(now.getTime() + MAP_RUN_RETENTION_MS).toISOString(),
    };
    await insertMapRun(db, row);
    return this.#view(org.id, row);
  }

  /** The status of a single-Map run command. */
  async status(orgId: number, solutionId: string, mapId: number, commandId: string): Promise<MapRunView> {
    const map = await this.opts.maps.link(orgId, solutionId, mapId);
    const row = await getMapRun(this.opts.db, map.solutionId, map.id, commandId.toLowerCase());
    if (!row) throw new FerryError('API_NOT_FOUND', `Run command ${commandId} was not found for Map ${mapId}.`);
    return this.#view(orgId, row);
  }

  async #view(orgId: number, row: MapRunRow): Promise<MapRunView> {
    const base = { row, execution: undefined, statistics: undefined };
    if (row.ignored === 1) return { ...base, status: 'ignored', message: row.message };
    const execution = row.runId ? await getExecution(this.opts.db, row.solutionId, row.runId) : undefined;
    if (!execution) {
      if (row.prepareId) {
        const job = await this.opts.prepare.get(orgId, row.solutionId, row.prepareId).catch(() => undefined);
        if (job?.hasError === 1)
          return {
            ...base,
            status: 'failed',
            message: `The Solution could not be prepared, so the Map did not run: ${job.message}`,
          };
        if (job?.isComplete !== 1)
          return {
            ...base,
            status: 'queued',
            message: 'The Solution is being prepared; the Map runs when the prepare succeeds.',
          };
      }
      return { ...base, status: 'queued', message: 'The run is queued on the Agent.' };
    }
    const statistics = statisticsOf(execution, row.mapId);
    if (execution.result === null)
      return { row, execution, statistics, status: 'running', message: 'The Map is running.' };
    return {
      row,
      execution,
      statistics,
      status: 'finished',
      message: execution.details ?? `The run ended: ${execution.result}.`,
    };
  }
}

function statisticsOf(execution: ExecutionRow, mapId: number): RunMapStats | undefined {
  try {
    const all: unknown = JSON.parse(execution.statistics);
    if (!Array.isArray(all)) return undefined;
    return (all as RunMapStats[]).find((s) => s.mapId === mapId);
  } catch {
    return undefined;
  }
}
