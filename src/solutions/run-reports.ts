/**
 * What a Map's run gives becomes what a Solution run reports (runner.ts): its statistics
 * (`mapRunStats`), its record errors (`toRunError`) and, for the cloud store, its failed records
 * (`toFailedRecord`, in reports of bounded size: `FailedRecordBatcher`).
 */
import type { FailedRecordInput, MapRecordError } from '../maps/runtime/run.js';
import type { MapStats } from '../maps/runtime/stats.js';
import {
  MAX_FAILED_RECORDS_PER_REPORT,
  type RunFailedRecord,
  type RunMapStats,
  type RunRecordError,
} from '../protocol/solutions.js';

/** Cloud failed records in reports of at most MAX_FAILED_RECORDS_PER_REPORT and about 512 KiB. */
export class FailedRecordBatcher {
  #batch: RunFailedRecord[] = [];
  #bytes = 0;
  constructor(private readonly send: (batch: RunFailedRecord[]) => void) {}
  add(r: RunFailedRecord): void {
    let rec = r;
    let size = JSON.stringify(rec).length;
    if (size > MAX_FAILED_RECORD_BYTES) {
      // One record larger than a channel message can hold: its error is kept, its copy is not.
      rec = {
        ...r,
        source: {},
        errorMessage:
          `${r.errorMessage} (the source record is larger than ${MAX_FAILED_RECORD_BYTES / 1024} KiB and was not kept)`.slice(
            0,
            10_000,
          ),
      };
      size = JSON.stringify(rec).length;
    }
    if (this.#bytes + size > MAX_FAILED_RECORD_BYTES) this.flush();
    this.#batch.push(rec);
    this.#bytes += size;
    if (this.#batch.length >= MAX_FAILED_RECORDS_PER_REPORT) this.flush();
  }
  flush(): void {
    if (this.#batch.length === 0) return;
    const batch = this.#batch;
    this.#batch = [];
    this.#bytes = 0;
    this.send(batch);
  }
}

/** About half a channel message: a report of failed records always fits. */
const MAX_FAILED_RECORD_BYTES = 512 * 1024;

/** A Map's statistics as a run reports them, `missing` records counted as processed and failed. */
export function mapRunStats(map: { mapId: number; name: string }, stats: MapStats, missing: number): RunMapStats {
  const s = { ...stats, processed: stats.processed + missing, failed: stats.failed + missing };
  // Records counted without being read took no time: the average stays total / processed.
  const avgMs = s.processed ? round(s.totalMs / s.processed) : 0;
  return {
    mapId: map.mapId,
    mapName: map.name,
    ...(s.entity ? { entity: s.entity } : {}),
    processed: s.processed,
    failed: s.failed,
    minMs: missing ? 0 : s.minMs,
    maxMs: s.maxMs,
    avgMs,
    totalMs: s.totalMs,
    totalTime: s.totalTime,
    blocks: s.blocks.slice(0, 300),
  };
}

export function toFailedRecord(rec: FailedRecordInput & { id: string }): RunFailedRecord {
  return {
    id: rec.id,
    ...(rec.mapId !== undefined ? { mapId: rec.mapId } : {}),
    mapName: rec.mapName.slice(0, 500),
    entity: rec.entity.slice(0, 1000),
    blockId: rec.blockId,
    blockName: rec.blockName.slice(0, 500),
    code: rec.error.code,
    errorMessage: rec.error.message.slice(0, 10_000),
    source: rec.source,
  };
}

/** A Map's record error as a run reports it: bounded and named by its key already (record-error.ts). */
export function toRunError(e: MapRecordError, mapId: number): RunRecordError {
  // Field by field rather than a spread: an object built in one order serializes about twice as
  // fast, and every record error of a run passes here.
  const out: RunRecordError = {
    id: e.id,
    mapId,
    mapName: e.mapName,
    sourceEntity: e.sourceEntity,
    blockId: e.blockId,
    blockName: e.blockName,
    code: e.code,
    errorMessage: e.errorMessage,
    errorDetail: e.errorDetail,
    canReprocess: e.canReprocess,
  };
  if (e.failedRecordId) out.failedRecordId = e.failedRecordId;
  // Which source record failed (History's errors and export show it): its key, else its row.
  if (e.sourceKey) out.sourceKey = e.sourceKey;
  if (e.sourceRow !== undefined) out.sourceRow = e.sourceRow;
  return out;
}

const round = (n: number): number => Math.round(n * 1000) / 1000;
