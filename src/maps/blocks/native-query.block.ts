/**
 * Native Query (starter): runs the Block's `statement` in the Connection's own language (the
 * Connector's nativeQuery) and streams its rows as the Map's records, keyed by column fullName.
 * Formulas read the columns listed in the Block's `fields`.
 */
import type { HostConnection } from '../../connectors/connection.js';
import type { RecordBatch } from '../../connectors/sdk.js';
import type { Block } from '../../protocol/map.js';
import { openConnection } from '../runtime/context.js';
import type { BlockKind } from './registry.js';

export function nativeQueryBatches(
  block: Block,
  conn: HostConnection,
  opts: { batchSize: number; signal: AbortSignal },
): AsyncIterable<RecordBatch> {
  return conn.nativeQuery(block.statement ?? '', [], { batchSize: opts.batchSize, signal: opts.signal });
}

export const nativeQueryKind: BlockKind = {
  type: 'NativeQuery',
  connection: 'native-query',
  check(block, cx) {
    if (!block.statement?.trim()) cx.error('MAP_MODEL_INVALID', `${block.name}: a Native Query needs a statement.`);
  },
  fields: (block) => block.fields ?? [],
  source: (block) => ({
    block,
    readsConnection: true,
    batches: (conn, opts) => nativeQueryBatches(block, openConnection(block, conn), opts),
  }),
};
