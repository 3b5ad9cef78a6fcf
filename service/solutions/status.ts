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

/** What the result of the last run (a History result) adds to Idle and OnDemand. */
const LAST_RUN_SUFFIX: Readonly<Record<string, 'LastRunFailed' | 'LastRunRowErrors'>> = {
  FatalError: 'LastRunFailed',
  RecordErrorsAndFatalErrors: 'LastRunFailed',
  CompletedWithErrors: 'LastRunRowErrors',
};

/**
 * The status a Solution is shown with, derived and never stored: Disabled; else Incomplete until
 * prepared since its last change (Preparing while a prepare runs, ProvisionError when it failed); else what its Agent's status (as the API shows it) means for
 * it; else InProgress while a run is on; else WaitingForEvent (event Solutions), Idle (scheduled:
 * a next run time) or OnDemand — Idle and OnDemand with LastRunFailed when the last run ended with
 * a fatal error, or LastRunRowErrors when it completed with record errors.
 */
export function solutionStatus(
  row: Pick<SolutionRow, 'isDisabled' | 'prepared' | 'inProgressStartTime' | 'solutionType'> &
    Partial<Pick<SolutionRow, 'lastRunResult' | 'prepareState'>> & { readonly nextRunTime: string | null },
  agent: { status: AgentStatus } | undefined,
): SolutionStatus {
  if (row.isDisabled === 1) return 'Disabled';
  if (row.prepared !== 1) {
    // Prepare runs (Preparing) or its last run failed (ProvisionError); otherwise nothing prepared it since the change.
    if (row.prepareState === 'Preparing' || row.prepareState === 'ProvisionError') return row.prepareState;
    return 'Incomplete';
  }
  const fromAgent = agent ? FROM_AGENT[agent.status] : undefined;
  if (fromAgent) return fromAgent;
  if (row.inProgressStartTime !== null) return 'InProgress';
  if (row.solutionType === 'IntegrationEvent') return 'WaitingForEvent';
  const suffix = row.lastRunResult ? LAST_RUN_SUFFIX[row.lastRunResult] : undefined;
  if (row.nextRunTime !== null) return suffix === undefined ? 'Idle' : `Idle${suffix}`;
  return suffix === undefined ? 'OnDemand' : `OnDemand${suffix}`;
}
