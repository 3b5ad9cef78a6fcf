import type { UninstallConnectorCommand } from '../../protocol/channel.js';
import type { ConnectorInstaller } from '../connector-installer.js';

/** `uninstallConnector`: queued on the installer and acknowledged at once; the outcome follows as a `connectorInstall` report. */
export function uninstallConnectorCommand(deps: { installer: ConnectorInstaller }) {
  return (command: UninstallConnectorCommand): Promise<{ received: true }> => {
    void deps.installer.uninstall(command);
    return Promise.resolve({ received: true });
  };
}
