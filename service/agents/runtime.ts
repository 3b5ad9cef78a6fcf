import type { CloudAgentHost } from '../jobs/cloud-agents.js';
import type { LogArchives } from '../store/log-archives.js';
import type { AgentUpdates } from './agent-updates.js';
import type { AgentCommands } from './commands.js';

/** What the Agent routes need beyond the store: reaching Agents, log archives, Cloud Agents. */
export interface AgentRuntime {
  readonly commands: AgentCommands;
  readonly logArchives: LogArchives;
  readonly cloudAgents: CloudAgentHost;
  readonly updates: AgentUpdates;
}
