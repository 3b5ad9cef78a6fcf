/**
 * What a run hands a failed source record to (the local store, store.ts, or the outbox for the
 * cloud store, capture.ts): the contract between the Map runtime, which reports failed records,
 * and the failed-record store below it, which imports nothing of the runtime.
 */
import type { ConnectorRecord } from '../connectors/sdk.js';
import type { ErrorData } from '../errors/ferry-error.js';

/** What a failed-record sink receives: the source fields the Map references. */
export interface FailedRecordInput {
  executionId: string;
  mapId?: number;
  mapName: string;
  entity: string;
  blockId: string;
  blockName: string;
  error: ErrorData;
  /** `error.details` as JSON when the caller has serialized it already (the record error's errorDetail). */
  errorDetail?: string;
  source: ConnectorRecord;
}

/** Where failed source records go (the local store, or the outbox for the cloud store); returns the record's id. */
export interface FailedRecordSink {
  capture(rec: FailedRecordInput): Promise<string>;
}
