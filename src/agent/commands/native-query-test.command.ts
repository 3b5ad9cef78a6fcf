import { FerryError } from '../../errors/ferry-error.js';
import type { NativeQueryTestCommand, PreviewResult } from '../../protocol/previews.js';
import { collectPreview, PREVIEW_TIMEOUT_MS, type PreviewDeps } from './preview-query.command.js';

/**
 * `nativeQueryTest`: opens the Connection with its plain properties, runs the Native Query Block's
 * statement through the Connector's nativeQuery as written (a statement that changes data changes
 * it, as in a run), answers its first rows (at most `limit`) and closes it. A Connector without a
 * native query answers CON_UNSUPPORTED; the statement's own error is the command's error.
 */
export function nativeQueryTestCommand(deps: PreviewDeps) {
  return async (command: NativeQueryTestCommand): Promise<PreviewResult> => {
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
    log.info({ limit: command.limit }, 'testing a native query');
    const result = await deps.work.run('nativeQueryTest', async (work) => {
      const opts = { signal: work.signal, timeoutMs: deps.timeoutMs ?? PREVIEW_TIMEOUT_MS };
      const conn = await host.open(
        { connectorId: command.connectorId, connectionId: command.connectionId, properties: command.properties },
        opts,
      );
      try {
        return await collectPreview(
          conn.nativeQuery(command.statement, [], { ...opts, batchSize: Math.min(command.limit + 1, conn.bulkLimit) }),
          command.limit,
        );
      } finally {
        await conn.close();
      }
    });
    log.info({ records: result.records.length, truncated: result.truncated }, 'native query tested');
    return result;
  };
}
