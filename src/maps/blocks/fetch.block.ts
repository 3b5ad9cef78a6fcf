/**
 * Fetch (starter): reads the records of the entity that match the Block's filter, at most
 * `maxRecords` (default 1) in the Connector's order, as one batch. For one record by key (a filter
 * on the primary key) or a small set; a Query reads whole entities.
 */
import type { HostConnection } from '../../connectors/connection.js';
import type { RecordBatch } from '../../connectors/sdk.js';
import type { Block } from '../../protocol/map.js';

export function fetchBatches(block: Block, conn: HostConnection, opts: { batchSize: number; signal: AbortSignal }): AsyncIterable<RecordBatch> {
  const limit = block.maxRecords ?? 1;
  return conn.query(block.entity ?? '', block.filter, { limit, batchSize: Math.min(limit, conn.bulkLimit), signal: opts.signal });
}
