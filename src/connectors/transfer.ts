import { readAhead } from './read-ahead.js';
import type { RecordBatch, WriteResult } from './sdk.js';

/** Counts of one {@link transfer}. */
export interface TransferStats {
  read: number;
  written: number;
  failed: number;
  batches: number;
}

/**
 * Moves batches from a query into a writer, reading the next batch while the current one is
 * written (one batch of read-ahead), so the source's work overlaps the target's and memory stays
 * at two batches. `onResults` sees each batch with its per-record results (failed-record
 * handling). Stop it with the query's signal.
 *
 *   write(N) starts ─▶ its synchronous part sends N to the target
 *   next macrotask ─▶ read N+1 (a synchronous source such as SQLite reads here, while the
 *                     target works on N)
 *   await write(N) ─▶ results of N ─▶ write(N+1) …
 *
 * The read-ahead starts one macrotask after the write so that the write's own start (a pool
 * checkout, the COPY it sends) runs first: a synchronous source would otherwise hold the event
 * loop while the target sits idle.
 */
export async function transfer(
  source: AsyncIterable<RecordBatch>,
  write: (batch: RecordBatch) => Promise<WriteResult[]>,
  onResults?: (batch: RecordBatch, results: WriteResult[]) => void | Promise<void>,
): Promise<TransferStats> {
  const stats: TransferStats = { read: 0, written: 0, failed: 0, batches: 0 };
  // Stopping early (a write or onResults threw) releases the source once its read-ahead settles.
  for await (const batch of readAhead(source)) {
    const results = await write(batch);
    stats.read += batch.length;
    stats.batches++;
    for (const res of results) {
      if (res.ok) stats.written++;
      else stats.failed++;
    }
    if (onResults) await onResults(batch, results);
  }
  return stats;
}
