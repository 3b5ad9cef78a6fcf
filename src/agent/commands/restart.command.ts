import type { Logger } from 'pino';
import type { RestartCommand } from '../../protocol/channel.js';
import type { RestartController } from '../restart.js';

/**
 * `restart`: accepted at once (the reply says so), carried out in the background: the status
 * moves to WaitingToRestartAgentUserRequest at once, the process is replaced when work allows.
 */
export function restartCommand(deps: { restart: RestartController; log: Logger }) {
  return async (command: RestartCommand): Promise<{ accepted: true; restartNow: boolean }> => {
    deps.restart.request('user', command.restartNow).catch((err: unknown) => deps.log.error({ err }, 'restart failed'));
    return { accepted: true, restartNow: command.restartNow };
  };
}
