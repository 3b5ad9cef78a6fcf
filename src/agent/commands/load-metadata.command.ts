import type { Logger } from 'pino';
import { FerryError } from '../../errors/ferry-error.js';
import type { ConnectorHost } from '../../connectors/host.js';
import type { LoadMetadataCommand } from '../../protocol/channel.js';
import {
  MAX_METADATA_ANSWER_BYTES,
  MAX_METADATA_ENTITIES,
  packMetadata,
  type MetadataAnswer,
} from '../../protocol/metadata.js';
import type { WorkRegistry } from '../work.js';

/** What the loadMetadata command needs. */
export interface LoadMetadataDeps {
  readonly work: WorkRegistry;
  readonly log: Logger;
  /** The plugin host with the installed plugins loaded (loaded once, at first use). */
  readonly host: () => Promise<ConnectorHost>;
  /** Time-out of the metadata call; default 10 minutes (the host's own default). */
  readonly timeoutMs?: number;
  /** Most entities answered; default {@link MAX_METADATA_ENTITIES} (tests lower it). */
  readonly maxEntities?: number;
  /** Largest answer in bytes, compressed or not; default what fits in one channel message (tests lower it). */
  readonly maxBytes?: number;
}

/**
 * `loadMetadata`: opens the Connection with the host (keyed by the Service's connectionId, so the
 * host's metadata cache serves repeated loads), reads its metadata (reloaded when asked), closes
 * it and answers with the ConnectionMetadata — compressed (PackedMetadata) when its JSON does not
 * fit in one channel message. Refuses answers that are too large even so with
 * CON_METADATA_TOO_LARGE rather than sending a message the channel would drop.
 */
export function loadMetadataCommand(deps: LoadMetadataDeps) {
  return async (command: LoadMetadataCommand): Promise<MetadataAnswer> => {
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
    log.info({ reload: command.reload === true }, 'loading connection metadata');
    const md = await deps.work.run('loadMetadata', async (work) => {
      const opts = { signal: work.signal, ...(deps.timeoutMs !== undefined ? { timeoutMs: deps.timeoutMs } : {}) };
      const conn = await host.open(
        { connectorId: command.connectorId, connectionId: command.connectionId, properties: command.properties },
        opts,
      );
      try {
        return await conn.metadata({ ...opts, reload: command.reload === true });
      } finally {
        await conn.close();
      }
    });
    const maxEntities = deps.maxEntities ?? MAX_METADATA_ENTITIES;
    if (md.entities.length > maxEntities) {
      throw new FerryError(
        'CON_METADATA_TOO_LARGE',
        `The datastore has ${md.entities.length} entities; Ferry loads the metadata of at most ${maxEntities}.`,
        {
          details: { entities: md.entities.length, limit: maxEntities },
        },
      );
    }
    const maxBytes = deps.maxBytes ?? MAX_METADATA_ANSWER_BYTES;
    const out = packMetadata(md, maxBytes);
    if (out.packed && !out.fits) {
      throw new FerryError(
        'CON_METADATA_TOO_LARGE',
        `The metadata of ${md.entities.length} entities takes ${out.bytes} bytes (${out.compressed} compressed); Ferry loads at most ${maxBytes} bytes of compressed metadata.`,
        {
          details: { entities: md.entities.length, bytes: out.bytes, compressed: out.compressed, limit: maxBytes },
        },
      );
    }
    if (out.packed)
      log.info(
        { entities: md.entities.length, bytes: out.bytes, compressed: out.compressed },
        'connection metadata loaded (compressed)',
      );
    else log.info({ entities: md.entities.length, bytes: out.bytes }, 'connection metadata loaded');
    return out.answer;
  };
}
