import type { InstallConnectorCommand } from '../../protocol/channel.js';
import type { ConnectorInstaller } from '../connector-installer.js';

/**
 * `installConnector`: queued on the installer and acknowledged at once (the Service records
 * AgentReceivedCommand); progress and the outcome follow as `connectorInstall` reports.
 */
export function installConnectorCommand(deps: { installer: ConnectorInstaller }) {
  return (command: InstallConnectorCommand): Promise<{ received: true }> => {
    void deps.installer.install(command);
    return Promise.resolve({ received: true });
  };
}
