import type { Logger } from 'pino';
import type { ConnectorHost } from '../../connectors/host.js';
import type { RecordBatch } from '../../connectors/sdk.js';
import { FerryError } from '../../errors/ferry-error.js';
import {
  PREVIEW_MAX_BYTES,
  type PreviewQueryCommand,
  type PreviewRecord,
  type PreviewResult,
} from '../../protocol/previews.js';
import type { WorkRegistry } from '../work.js';

/** What the previewQuery and nativeQueryTest commands need. */
export interface PreviewDeps {
  readonly work: WorkRegistry;
  readonly log: Logger;
  /** The plugin host with the installed plugins loaded (loaded once, at first use). */
  readonly host: () => Promise<ConnectorHost>;
  /** Time-out of the whole read (open, read, close); default 60 s. */
  readonly timeoutMs?: number;
}

/** Default time-out of a preview or a native query test on the Agent. */
export const PREVIEW_TIMEOUT_MS = 60_000;

/**
 * The first `limit` records of `batches`, within {@link PREVIEW_MAX_BYTES} of JSON. Reads one
 * record past the limit to tell whether there are more, then stops pulling (the iterator is
 * returned, so the Connector closes its cursor).
 */
export async function collectPreview(
  batches: AsyncIterable<RecordBatch>,
  limit: number,
  maxBytes = PREVIEW_MAX_BYTES,
): Promise<PreviewResult> {
  const records: PreviewRecord[] = [];
  let bytes = 0;
  let truncated = false;
  outer: for await (const batch of batches) {
    for (const rec of batch) {
      if (records.length >= limit) {
        truncated = true;
        break outer;
      }
      const size = Buffer.byteLength(JSON.stringify(rec));
      if (bytes + size > maxBytes) {
        truncated = true;
        break outer;
      }
      bytes += size;
      records.push(rec);
    }
  }
  const first = records[0];
  return { records, fields: first ? Object.keys(first) : [], truncated };
}

/**
 * `previewQuery`: opens the Connection with its plain properties, reads the first records of the
 * entity with the Block's filter (at most `limit`), closes it and answers them. A Connector's
 * error is the command's error (plain data: the Service shows it as the preview's result).
 * Properties are never logged.
 */
export function previewQueryCommand(deps: PreviewDeps) {
  return async (command: PreviewQueryCommand): Promise<PreviewResult> => {
    if (deps.work.draining)
      throw new FerryError(
        'AGT_DRAINING',
        'The Agent is waiting to restart and starts no new work; ask again after the restart.',
      );
    const host = await deps.host();
    const log = deps.log.child({
      commandId: command.id,
      connectorId: command.connectorId,
      connectionId: command.connectionId,
    });
    log.info({ entity: command.entity, limit: command.limit }, 'previewing records');
    const result = await deps.work.run('previewQuery', async (work) => {
      const opts = { signal: work.signal, timeoutMs: deps.timeoutMs ?? PREVIEW_TIMEOUT_MS };
      const conn = await host.open(
        { connectorId: command.connectorId, connectionId: command.connectionId, properties: command.properties },
        opts,
      );
      try {
        // One past the limit: tells whether more records match.
        const batches = conn.query(command.entity, command.filter, {
          ...opts,
          limit: command.limit + 1,
          batchSize: Math.min(command.limit + 1, conn.bulkLimit),
        });
        return await collectPreview(batches, command.limit);
      } finally {
        await conn.close();
      }
    });
    log.info({ records: result.records.length, truncated: result.truncated }, 'records previewed');
    return result;
  };
}
