import { installedConnectors, shownStatus } from '../../agents/agents.js';
import type { AgentRow } from '../../store/schema.js';
import { fromFlag } from '../../util/values.js';
import type { Agent } from '../schemas/agent.schema.js';

/**
 * The API model of an Agent. `connected`: whether its channel is open to this Service now
 * (`AgentCommands.isConnected`, the same source that decides AGT_NOT_CONNECTED for commands).
 */
export function toAgent(row: AgentRow, connected: boolean, usedInSolutions: readonly string[] = []): Agent {
  return {
    id: row.id,
    name: row.name,
    machineName: row.machineName,
    serviceName: row.serviceName,
    isCloudAgent: fromFlag(row.isCloudAgent),
    isUpdating: fromFlag(row.isUpdating),
    status: shownStatus(row.status, connected),
    isConnected: connected,
    lastContactTime: row.lastContactTime,
    lastShutdownTime: row.lastShutdownTime,
    lastStartTime: row.lastStartTime,
    version: row.version,
    installedConnectors: installedConnectors(row),
    usedInSolutions: usedInSolutions.join(', '),
    versionHold: fromFlag(row.versionHold),
    updateVersion: row.updateVersion,
    updateError: row.updateError,
  };
}
