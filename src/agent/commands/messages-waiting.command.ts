import type { MessagesWaitingCommand, MessagesWaitingResult } from '../../protocol/events.js';
import type { SolutionRunner } from '../../solutions/runner.js';

/** `messagesWaiting`: a run takes the Event Solution's queued messages (src/solutions/event-runs.ts). */
export function messagesWaitingCommand(deps: { runner: SolutionRunner }) {
  return (command: MessagesWaitingCommand): Promise<MessagesWaitingResult> =>
    Promise.resolve(deps.runner.messagesWaiting(command.solutionId));
}
