import { z } from 'zod';
import { RunMapStats } from '../../src/protocol/solutions.js';

/**
 * The statistics of an execution as the API shows them, from the RunMapStats the Agent reported
 * with the run's end (src/protocol/solutions.ts). Times are milliseconds.
 */

/** One Map (IS/MS) or one entity (RS) of a run: SPEC.md's mapStatistics. */
export interface MapStatistics {
  readonly mapId: number | null;
  readonly mapName: string;
  /** The entity an RS run copied, or the Map's source entity when the Agent named one. */
  readonly entityName: string | null;
  readonly recordsProcessed: number;
  readonly recordsFailed: number;
  /** Shortest, longest and mean time of one record, and the Map's total time (ms). */
  readonly minimum: number;
  readonly maximum: number;
  readonly average: number;
  readonly totalTime: number;
  /** totalTime as `hh:mm:ss` (hours past 99 take more digits). */
  readonly totalTimeFormatted: string;
  /** The Map's or entity's fatal error, when it ended with one. */
  readonly fatalError: string | null;
}

/** One Block of a run (SPEC.md's legacyCounters: "per object"). */
export interface LegacyCounter {
  readonly mapName: string;
  readonly blockId: string;
  readonly blockName: string;
  /** The Block's kind (`Query`, `Create`, `Upsert`, …; for an RS entity, its read and write). */
  readonly actionType: string;
  /** Records the Block handled, and those that failed. */
  readonly callCount: number;
  readonly errorCount: number;
  readonly minimum: number;
  readonly maximum: number;
  readonly average: number;
  readonly totalTime: number;
}

export interface ExecutionStatistics {
  readonly mapStatistics: MapStatistics[];
  readonly legacyCounters: LegacyCounter[];
}

const StoredStats = z.array(RunMapStats);

/** `hh:mm:ss` of a duration in milliseconds (whole seconds, rounded down; never negative). */
export function formatDuration(ms: number): string {
  const total = Math.max(0, Math.floor((Number.isFinite(ms) ? ms : 0) / 1000));
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(Math.floor(total / 3600))}:${pad(Math.floor((total % 3600) / 60))}:${pad(total % 60)}`;
}

/** Seconds from `start` to `stop`, or to `now` while the run is on; with milliseconds, never negative. */
export function durationSeconds(start: string, stop: string | null, now: Date): number {
  const from = Date.parse(start);
  const to = stop === null ? now.getTime() : Date.parse(stop);
  if (Number.isNaN(from) || Number.isNaN(to)) return 0;
  return Math.max(0, to - from) / 1000;
}

/** The stored statistics JSON of an execution; empty when there is none (a run still going) or it cannot be read. */
export function parseStatistics(json: string): RunMapStats[] {
  try {
    const parsed = StoredStats.safeParse(JSON.parse(json));
    return parsed.success ? parsed.data : [];
  } catch {
    return [];
  }
}

/** The API's statistics of an execution from what its Agent reported. */
export function toStatistics(stats: readonly RunMapStats[]): ExecutionStatistics {
  return {
    mapStatistics: stats.map((m) => ({
      mapId: m.mapId ?? null,
      mapName: m.mapName,
      entityName: m.entity ?? null,
      recordsProcessed: m.processed,
      recordsFailed: m.failed,
      minimum: m.minMs,
      maximum: m.maxMs,
      average: m.avgMs,
      totalTime: m.totalMs,
      totalTimeFormatted: formatDuration(m.totalMs),
      fatalError: m.fatal ?? null,
    })),
    legacyCounters: stats.flatMap((m) =>
      m.blocks.map((b) => ({
        mapName: m.mapName,
        blockId: b.blockId,
        blockName: b.name,
        actionType: b.blockType,
        callCount: b.processed,
        errorCount: b.failed,
        minimum: b.minMs,
        maximum: b.maxMs,
        average: b.avgMs,
        totalTime: b.totalMs,
      })),
    ),
  };
}
