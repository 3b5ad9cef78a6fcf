/**
 * Wait For Request (starter of a request-response Map): the Map's single record is the request
 * message, read like Wait For Message's. The Map answers it with Build Reply and Send Reply.
 */
import type { RecordBatch } from '../../connectors/sdk.js';
import type { Block } from '../../protocol/map.js';
import type { BlockKind } from './registry.js';
import { messageBatches, messageFields } from './wait-for-message.block.js';

export function requestBatches(block: Block, request: unknown): AsyncIterable<RecordBatch> {
  return messageBatches(block, request);
}

export const waitForRequestKind: BlockKind = {
  type: 'WaitForRequest',
  connection: 'entity-if-named',
  fields: messageFields,
  source: (block) => ({
    block,
    readsConnection: false,
    answersRequest: true,
    batches: (_conn, opts) => requestBatches(block, opts.message),
  }),
};
