/**
 * Batch sizes, decided once when a run starts: the one place a size is clamped to a Connector's
 * bulkLimit.
 *
 *   run   = the asked size (RunOptions.batchSize, else the Map's, else 2000) within the source
 *           Connector's bulkLimit: what the starter reads, a For Each slice, a child write
 *   bulk  = per write Block: its bulkCountPerOperation, else run, within its own Connector's
 *           bulkLimit (1 when its Connection is not open: the write fails record by record)
 */
import type { HostConnection } from '../../connectors/connection.js';
import { DEFAULT_MAP_BATCH_SIZE, type Block } from '../../protocol/map.js';

export interface BatchSizes {
  readonly run: number;
  readonly bulk: (block: Block) => number;
}

const clamp = (asked: number | undefined, bulkLimit: number): number =>
  Math.max(1, Math.min(asked ?? DEFAULT_MAP_BATCH_SIZE, bulkLimit));

/** The run's batch size and each Block's bulk write size. */
export function batchSizes(
  asked: number | undefined,
  source: Pick<HostConnection, 'bulkLimit'> | undefined,
  blocks: readonly Block[],
  connections: ReadonlyMap<string, Pick<HostConnection, 'bulkLimit'>>,
): BatchSizes {
  const run = clamp(asked, source?.bulkLimit ?? Number.MAX_SAFE_INTEGER);
  const bulk = new Map<string, number>();
  for (const b of blocks) {
    const conn = connections.get(b.connectionId ?? '');
    if (conn) bulk.set(b.blockId, clamp(b.bulkCountPerOperation ?? run, conn.bulkLimit));
  }
  return { run, bulk: (block) => bulk.get(block.blockId) ?? 1 };
}

/** Consecutive slices of at most `size`. */
export function* slices<T>(items: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}
