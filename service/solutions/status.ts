import type { AgentStatus } from '../../src/protocol/agent-status.js';
import type { SolutionRow } from '../store/schema.js';

/** The types of Solution (DESIGN.md), spelled as the API returns them. */
export const SOLUTION_TYPES = ['Replication', 'Integration', 'IntegrationEvent', 'Migration'] as const;
export type SolutionType = (typeof SOLUTION_TYPES)[number];

/** Every Solution status clients know (DESIGN.md "Solution status"). */
export const SOLUTION_STATUSES = [
  'Disabled',
  'Idle',
  'IdleLastRunRowErrors',
  'IdleLastRunFailed',
  'InProgress',
  'Preparing',
  'Provisioning',
  'ProvisionError',
  'Starting',
  'Incomplete',
  'Stopping',
  'OnDemand',
  'OnDemandLastRunFailed',
  'OnDemandLastRunRowErrors',
  'AgentUpdating',
  'AgentShutdown',
  'AgentHeartbeatLate',
  'AgentHeartbeatFailed',
  'WaitingForEvent',
  'WaitingToUpdateAgent',
  'WaitingToUpdateConnector',
  'UpdatingConnector',
  'WaitingToRestartAgentUserRequest',
  'WaitingToRestartAgentMemoryLimit',
  'AgentRestarting',
] as const;
export type SolutionStatus = (typeof SOLUTION_STATUSES)[number];

/**
 * What an Agent status means for the Solutions it executes. Running, Unknown (a Running Agent
 * whose channel is gone, or one that never connected) and Obsolete leave the Solution's own
 * status shown.
 */
const FROM_AGENT: Partial<Record<AgentStatus, SolutionStatus>> = {
  Shutdown: 'AgentShutdown',
  ShutdownCloud: 'AgentShutdown',
  HeartbeatLate: 'AgentHeartbeatLate',
  HeartbeatFailed: 'AgentHeartbeatFailed',
  AgentUpdating: 'AgentUpdating',
  UpdatingAgent: 'AgentUpdating',
  WaitingToUpdateAgent: 'WaitingToUpdateAgent',
  WaitingToUpdateConnector: 'WaitingToUpdateConnector',
  UpdatingConnector: 'UpdatingConnector',
  WaitingToRestartAgentUserRequest: 'WaitingToRestartAgentUserRequest',
  WaitingToRestartAgentMemoryLimit: 'WaitingToRestartAgentMemoryLimit',
  Restarting: 'AgentRestarting',
};

/**
 * The status a Solution is shown with, derived and never stored: Disabled; else Incomplete until
 * prepared since its last change; else what its Agent's status (as the API shows it) means for
 * it; else InProgress while a run is on; else WaitingForEvent (event Solutions), Idle (scheduled:
 * a next run time) or OnDemand.
 */
export function solutionStatus(
  row: Pick<SolutionRow, 'isDisabled' | 'prepared' | 'inProgressStartTime' | 'solutionType'> & { readonly nextRunTime: string | null },
  agent: { status: AgentStatus } | undefined,
): SolutionStatus {
  if (row.isDisabled === 1) return 'Disabled';
  if (row.prepared !== 1) return 'Incomplete';
  const fromAgent = agent ? FROM_AGENT[agent.status] : undefined;
  if (fromAgent) return fromAgent;
  if (row.inProgressStartTime !== null) return 'InProgress';
  if (row.solutionType === 'IntegrationEvent') return 'WaitingForEvent';
  return row.nextRunTime !== null ? 'Idle' : 'OnDemand';
}
