import { z } from 'zod';

/** Every Agent status of SPEC.md, spelled as the API returns them. */
export const AGENT_STATUSES = [
  'AgentUpdating',
  'HeartbeatFailed',
  'HeartbeatLate',
  'Obsolete, install new Agent',
  'Restarting',
  'Running',
  'Shutdown',
  'ShutdownCloud',
  'Unknown',
  'UpdatingConnector',
  'UpdatingAgent',
  'WaitingToRestartAgentMemoryLimit',
  'WaitingToRestartAgentUserRequest',
  'WaitingToUpdateAgent',
  'WaitingToUpdateConnector',
] as const;

export const AgentStatus = z.enum(AGENT_STATUSES);
export type AgentStatus = z.infer<typeof AgentStatus>;

/** The status of an Agent too old to update itself: the Service's verdict, not the Agent's. */
export const OBSOLETE_STATUS: AgentStatus = 'Obsolete, install new Agent';

/** Statuses in which an Agent starts no new work. */
export const DRAINING_STATUSES: readonly AgentStatus[] = [
  'WaitingToRestartAgentMemoryLimit',
  'WaitingToRestartAgentUserRequest',
  'WaitingToUpdateAgent',
  'WaitingToUpdateConnector',
  'Restarting',
  'UpdatingAgent',
  'UpdatingConnector',
  'AgentUpdating',
];
