/**
 * Reprocessing: runs the Map again over marked failed records, from their stored copies (the
 * source is not read again). Each record can be reprocessed once: afterwards canReprocess is
 * false whatever the outcome; a record that fails again gives a new record error and a new
 * failed-record entry.
 */
import type { RecordBatch } from '../connectors/sdk.js';
import { FerryError } from '../errors/ferry-error.js';
import type { MapPlan } from './compiler/plan.js';
import { runMap, type RunOptions, type RunResult } from './runtime/run.js';
import type { FailedRecordStore, StoredFailedRecord } from '../failures/store.js';

export interface ReprocessResult extends RunResult {
  reprocessed: string[];
  succeeded: string[];
}

/** Reprocesses the given failed records (default: every marked one of the Map). */
export async function reprocessFailed(
  plan: MapPlan,
  store: FailedRecordStore,
  opts: Omit<RunOptions, 'source' | 'watermark'> & { ids?: readonly string[] },
): Promise<ReprocessResult> {
  let records: StoredFailedRecord[];
  if (opts.ids) {
    records = opts.ids.map((id) => {
      const r = store.get(id);
      if (!r)
        throw new FerryError('RUN_FAILED_RECORD_NOT_FOUND', `No failed record ${id} is stored on this Agent.`, {
          details: { id },
        });
      if (!r.canReprocess)
        throw new FerryError('RUN_ALREADY_REPROCESSED', `The failed record ${id} was already reprocessed.`, {
          details: { id },
        });
      return r;
    });
  } else {
    records = store.marked().filter((r) => r.mapName === plan.model.name);
  }
  const ids = records.map((r) => r.id);
  const succeeded: string[] = [];
  const size = plan.model.batchSize ?? 2000;
  async function* source(): AsyncIterable<RecordBatch> {
    for (let i = 0; i < records.length; i += size) yield records.slice(i, i + size).map((r) => ({ ...r.source }));
  }
  // Taken before running: once even if the run is interrupted.
  store.setReprocessed(ids);
  const { ids: _ignored, ...runOpts } = opts;
  void _ignored;
  const result = await runMap(plan, {
    ...runOpts,
    source: source(),
    onSourceDone: (i, ok) => {
      if (ok) succeeded.push(ids[i] as string);
    },
  });
  return { ...result, reprocessed: ids, succeeded };
}
