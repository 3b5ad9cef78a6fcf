import type { CloudAgentHost } from '../jobs/cloud-agents.js';
import type { LogArchiveFiles } from '../store/log-archives.js';
import type { CommandBus } from './command-bus.js';

/** What the Agent routes need beyond the store: reaching Agents, log archive files, Cloud Agents. */
export interface AgentRuntime {
  readonly commands: CommandBus;
  readonly logArchives: LogArchiveFiles;
  readonly cloudAgents: CloudAgentHost;
}
