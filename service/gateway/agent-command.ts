import type { CommandKind, CommandRequest } from '../../src/protocol/commands.js';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';

/** A command to an Agent of kind `K` (any kind by default), without its message ID (the bus assigns one). */
export type AgentCommand<K extends CommandKind = CommandKind> = K extends CommandKind ? Omit<CommandRequest<K>, 'id'> : never;

/** AGT_NOT_CONNECTED for `agentId`: it has no channel, or the channel closed before the reply. */
export const notConnected = (agentId: string, detail = 'is not connected'): FerryError =>
  new FerryError('AGT_NOT_CONNECTED', `Agent ${agentId} ${detail}; start it (or wait until its status is Running) and try again.`, { details: { agentId } });

/**
 * The code of the Agent's own error when `err` is its error reply to a command (AGT_COMMAND_FAILED
 * carries it in `details.agentErrorCode`), else undefined: the Agent did not answer.
 */
export function agentErrorCode(err: unknown): string | undefined {
  if (!isFerryError(err)) return undefined;
  const code = err.details?.['agentErrorCode'];
  return typeof code === 'string' ? code : undefined;
}

/**
 * What a command about a Solution the Agent must hold at the Service's version (startSolution,
 * reprocessRun) needs from its caller: how to bring the Agent's copies up to date, and what the
 * user reads when the Agent is draining.
 */
export interface SolutionCommandPolicy {
  /** Brings the Agent's copies of its Solutions up to date (the Solutions' assignments). */
  readonly sync: (agentId: string) => Promise<void>;
  /** The message of the AGT_DRAINING refusal: what was not started and when to try again. */
  readonly draining: string;
  /** Details of that refusal beside `agentId` (the Solution's ID). */
  readonly details?: Readonly<Record<string, unknown>>;
}
