/**
 * The source of a reprocess run's Map: the stored copies of its failed records, never the source
 * datastore. The Service names the records (marks live there) in pages the Map pulls as it goes;
 * each record's copy comes with it when the Service keeps it (the cloud store), else from this
 * Agent's local store, which then marks it reprocessed too. A record without a copy anywhere is
 * handed to `onMissing` (it becomes a record error of the run) and is not written.
 */
import type { ConnectorRecord, RecordBatch } from '../connectors/sdk.js';
import type { ReprocessPage, ReprocessRecord } from '../protocol/reprocess.js';
import type { FailedRecordStore } from './store.js';

/** Reads one page of a reprocess run's records of one Map, after the given `seq` (0: from the start). */
export type ReprocessPages = (
  runId: string,
  mapId: number,
  after: number,
  signal: AbortSignal,
) => Promise<ReprocessPage>;

export interface ReprocessCopiesOptions {
  readonly runId: string;
  readonly mapId: number;
  readonly pages: ReprocessPages;
  readonly local: FailedRecordStore;
  readonly signal: AbortSignal;
  /** Records per batch handed to the Map (its batch size). */
  readonly batchSize: number;
  readonly onMissing: (record: ReprocessRecord) => void;
}

export interface ReprocessCopies {
  readonly batches: AsyncIterable<RecordBatch>;
  /** Records without a stored copy so far. */
  readonly missing: number;
}

export function reprocessCopies(o: ReprocessCopiesOptions): ReprocessCopies {
  let missing = 0;
  async function* batches(): AsyncGenerator<RecordBatch, void, undefined> {
    let after = 0;
    let pending: ConnectorRecord[] = [];
    for (;;) {
      if (o.signal.aborted) return;
      const page = await o.pages(o.runId, o.mapId, after, o.signal);
      const fromLocal: string[] = [];
      for (const r of page.records) {
        if (r.source) {
          pending.push({ ...(r.source as ConnectorRecord) });
          continue;
        }
        const stored = r.failedRecordId ? o.local.get(r.failedRecordId) : undefined;
        if (stored) {
          pending.push({ ...stored.source });
          fromLocal.push(stored.id);
          continue;
        }
        missing++;
        o.onMissing(r);
      }
      if (fromLocal.length > 0) o.local.setReprocessed(fromLocal);
      while (pending.length >= o.batchSize) yield pending.splice(0, o.batchSize);
      if (page.next === null) break;
      after = page.next;
    }
    if (pending.length > 0) {
      const last = pending;
      pending = [];
      yield last;
    }
  }
  return {
    batches: batches(),
    get missing() {
      return missing;
    },
  };
}
