/**
 * Fetch (starter): reads the records of the entity that match the Block's filter, at most
 * `maxRecords` (default 1) in the Connector's order, as one batch. For one record by key (a filter
 * on the primary key) or a small set; a Query reads whole entities.
 */
import type { HostConnection } from '../../connectors/connection.js';
import type { RecordBatch } from '../../connectors/sdk.js';
import type { Block } from '../../protocol/map.js';
import { openConnection } from '../runtime/context.js';
import type { BlockKind } from './registry.js';
import { checkRelationships, childrenOf } from './relationships.js';

export function fetchBatches(
  block: Block,
  conn: HostConnection,
  opts: { batchSize: number; signal: AbortSignal },
): AsyncIterable<RecordBatch> {
  const limit = block.maxRecords ?? 1;
  return conn.query(block.entity ?? '', block.filter, {
    limit,
    batchSize: Math.min(limit, conn.bulkLimit),
    signal: opts.signal,
  });
}

export const fetchKind: BlockKind = {
  type: 'Fetch',
  connection: 'entity',
  entityAction: 'Query',
  readsRelationships: true,
  checkEntity: checkRelationships,
  check(block, cx) {
    if (!block.filter)
      cx.error('MAP_MODEL_INVALID', `${block.name}: a Fetch needs a filter (use a Query to read a whole entity).`);
  },
  source: (block, relationships) => ({
    block,
    readsConnection: true,
    batches: (conn, opts) => fetchBatches(block, openConnection(block, conn), opts),
    ...childrenOf(block, relationships),
  }),
};
