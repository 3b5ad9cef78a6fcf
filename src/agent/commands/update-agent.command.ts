import type { UpdateAgentCommand } from '../../protocol/channel.js';
import type { AgentUpdater } from '../agent-update.js';

/**
 * `updateAgent`: accepted at once (the reply says so), carried out in the background: the status
 * moves to WaitingToUpdateAgent while work runs, the new version is installed, the process restarts
 * into it. A failure comes as an `agentUpdate` report; a command while an update runs is refused.
 */
export function updateAgentCommand(deps: { updater: AgentUpdater }) {
  return async (command: UpdateAgentCommand): Promise<{ accepted: true }> => {
    deps.updater.request(command);
    return { accepted: true };
  };
}
