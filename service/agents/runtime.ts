import type { CloudAgentHost } from '../jobs/cloud-agents.js';
import type { LogArchiveFiles } from '../store/log-archives.js';
import type { AgentCommands } from './commands.js';

/** What the Agent routes need beyond the store: reaching Agents, log archive files, Cloud Agents. */
export interface AgentRuntime {
  readonly commands: AgentCommands;
  readonly logArchives: LogArchiveFiles;
  readonly cloudAgents: CloudAgentHost;
}
