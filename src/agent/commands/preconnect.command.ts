import type { Logger } from 'pino';
import { FerryError } from '../../errors/ferry-error.js';
import type { ConnectorHost } from '../../connectors/host.js';
import type { PreconnectResult } from '../../connectors/sdk.js';
import type { PreconnectCommand } from '../../protocol/channel.js';
import type { WorkRegistry } from '../work.js';

export interface PreconnectDeps {
  readonly work: WorkRegistry;
  readonly log: Logger;
  readonly host: () => Promise<ConnectorHost>;
}

/**
 * `preconnect`: the Connector's step before a Connection can be saved — a check of the form, or
 * the start of an OAuth flow (its reply carries the URL to visit). A plugin without a preconnect
 * step answers SUCCESS. Properties are never logged.
 */
export function preconnectCommand(deps: PreconnectDeps) {
  return async (command: PreconnectCommand): Promise<PreconnectResult> => {
    if (deps.work.draining)
      throw new FerryError(
        'AGT_DRAINING',
        'The Agent is waiting to restart and starts no new work; ask again after the restart.',
      );
    const host = await deps.host();
    const log = deps.log.child({ commandId: command.id, connectorId: command.connectorId });
    log.info({ isOauth: command.isOauth }, 'running a connector preconnect step');
    return deps.work.run('preconnect', (work) =>
      host.preconnect(command.connectorId, command.properties, { signal: work.signal }),
    );
  };
}
