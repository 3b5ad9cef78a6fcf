import type { Logger } from 'pino';
import { FerryError } from '../../errors/ferry-error.js';
import type { ConnectorHost } from '../../connectors/host.js';
import type { TestConnectionCommand } from '../../protocol/channel.js';
import type { WorkRegistry } from '../work.js';

/** What the testConnection command needs. */
export interface TestConnectionDeps {
  readonly work: WorkRegistry;
  readonly log: Logger;
  /** The plugin host with the installed plugins loaded (loaded once, at first use). */
  readonly host: () => Promise<ConnectorHost>;
  /** Time-out of the whole test (open, test, close); default 60 s. */
  readonly timeoutMs?: number;
}

/**
 * `testConnection`: loads the Connector's plugin with the host, opens a connection with the plain
 * properties, calls `test` and closes it. Answers when the test is done: `{ok: true}`, or the
 * error (its message is what the user sees as the test's reply). Properties are never logged.
 */
export function testConnectionCommand(deps: TestConnectionDeps) {
  return async (command: TestConnectionCommand): Promise<{ ok: true }> => {
    if (deps.work.draining)
      throw new FerryError(
        'AGT_DRAINING',
        'The Agent is waiting to restart and starts no new work; ask again after the restart.',
      );
    const host = await deps.host();
    const log = deps.log.child({ commandId: command.id, connectorId: command.connectorId });
    log.info('testing a connection');
    await deps.work.run('testConnection', (work) =>
      host.testConnection(
        { connectorId: command.connectorId, connectionId: `test-${command.id}`, properties: command.properties },
        { signal: work.signal, timeoutMs: deps.timeoutMs ?? 60_000 },
      ),
    );
    log.info('connection test passed');
    return { ok: true };
  };
}
