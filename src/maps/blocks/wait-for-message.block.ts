/**
 * Wait For Message (starter): the Map's single record is the event message handed to the run, a
 * JSON object. Its top-level properties are the record's fields; a nested object or array becomes
 * its JSON text. Formulas read the fields of the Block's entity (when it names a Connection) or the
 * Block's `fields`.
 */
import type { ConnectorRecord, RecordBatch } from '../../connectors/sdk.js';
import { FerryError } from '../../errors/ferry-error.js';
import type { Block } from '../../protocol/map.js';
import type { BlockKind } from './registry.js';

/** The message as a record; RUN_MESSAGE_MISSING / RUN_MESSAGE_INVALID when there is none or it is not an object. */
export function messageRecord(block: Block, message: unknown): ConnectorRecord {
  if (message === undefined || message === null) {
    throw new FerryError(
      'RUN_MESSAGE_MISSING',
      `The Map starts with ${block.name} (${block.blockType}) and the run was given no message.`,
      { details: { blockId: block.blockId } },
    );
  }
  if (typeof message !== 'object' || Array.isArray(message)) {
    throw new FerryError(
      'RUN_MESSAGE_INVALID',
      `The message for ${block.name} must be a JSON object, not ${Array.isArray(message) ? 'an array' : typeof message}.`,
      { details: { blockId: block.blockId } },
    );
  }
  const rec: ConnectorRecord = {};
  for (const [k, v] of Object.entries(message as Record<string, unknown>)) {
    rec[k] =
      v === null || typeof v === 'string' || typeof v === 'boolean' || (typeof v === 'number' && Number.isFinite(v))
        ? v
        : v === undefined
          ? null
          : JSON.stringify(v);
  }
  return rec;
}

/** The message as the starter's one batch. */
export function messageBatches(block: Block, message: unknown): AsyncIterable<RecordBatch> {
  const rec = messageRecord(block, message);
  return (async function* () {
    yield [rec];
  })();
}

/** Without a Connection, the message's fields are the Block's `fields`; with one, its entity's (the validator's scope). */
export const messageFields = (block: Block): readonly string[] | undefined =>
  block.connectionId ? undefined : (block.fields ?? []);

export const waitForMessageKind: BlockKind = {
  type: 'WaitForMessage',
  connection: 'entity-if-named',
  fields: messageFields,
  source: (block) => ({ block, readsConnection: false, batches: (_conn, opts) => messageBatches(block, opts.message) }),
};
