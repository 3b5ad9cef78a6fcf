/**
 * Query (starter): reads the entity as a stream of batches with the Block's filter; with net
 * change, only records whose date field is at or after the watermark, ascending by it.
 */
import type { HostConnection } from '../../connectors/connection.js';
import type { Filter, OrderBy, RecordBatch } from '../../connectors/sdk.js';
import { and } from '../../protocol/filter.js';
import type { Block } from '../../protocol/map.js';
import { openConnection } from '../runtime/context.js';
import type { BlockKind } from './registry.js';
import { checkRelationships, childrenOf } from './relationships.js';

export function queryBatches(
  block: Block,
  conn: HostConnection,
  opts: {
    since: string | null;
    batchSize: number;
    fields?: string[];
    signal: AbortSignal;
    orderBy?: OrderBy[];
    filter?: Filter;
  },
): AsyncIterable<RecordBatch> {
  const netChange = block.netChange && opts.since ? { field: block.netChange.fieldName, since: opts.since } : undefined;
  // Asked for an order, the run reads in it (a resumed run, a first copy in key order); else a net
  // change without a watermark reads everything ascending by its field, so it can checkpoint as it goes.
  const orderBy =
    opts.orderBy ??
    (block.netChange && !netChange ? [{ field: block.netChange.fieldName, direction: 'asc' as const }] : undefined);
  const filter = opts.filter && block.filter ? and(block.filter, opts.filter) : (opts.filter ?? block.filter);
  return conn.query(block.entity ?? '', filter, {
    batchSize: opts.batchSize,
    signal: opts.signal,
    ...(netChange ? { netChange } : {}),
    ...(orderBy ? { orderBy } : {}),
    ...(opts.fields ? { fields: opts.fields } : {}),
  });
}

export const queryKind: BlockKind = {
  type: 'Query',
  connection: 'entity',
  entityAction: 'Query',
  readsNetChange: true,
  readsRelationships: true,
  checkEntity: checkRelationships,
  source: (block, relationships) => ({
    block,
    readsConnection: true,
    batches: (conn, opts) => queryBatches(block, openConnection(block, conn), opts),
    ...childrenOf(block, relationships),
  }),
};
