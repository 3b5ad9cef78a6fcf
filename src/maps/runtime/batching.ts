/** Batch sizes: the Map's (default 2000) clamped to the Connector's bulkLimit. */
import { DEFAULT_MAP_BATCH_SIZE } from '../../protocol/map.js';

export function clampBatch(asked: number | undefined, bulkLimit: number): number {
  return Math.max(1, Math.min(asked ?? DEFAULT_MAP_BATCH_SIZE, bulkLimit));
}

/** Consecutive slices of at most `size`. */
export function* slices<T>(items: readonly T[], size: number): Generator<T[]> {
  for (let i = 0; i < items.length; i += size) yield items.slice(i, i + size);
}
