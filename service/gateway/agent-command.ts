import type { CommandKind, CommandRequest } from '../../src/protocol/commands.js';
import type { ErrorCode } from '../../src/errors/codes.js';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';

/** A command to an Agent of kind `K` (any kind by default), without its message ID (the bus assigns one). */
export type AgentCommand<K extends CommandKind = CommandKind> = K extends CommandKind
  ? Omit<CommandRequest<K>, 'id'>
  : never;

/** AGT_NOT_CONNECTED for `agentId`: it has no channel, or the channel closed before the reply. */
export const notConnected = (agentId: string, detail = 'is not connected'): FerryError =>
  new FerryError(
    'AGT_NOT_CONNECTED',
    `Agent ${agentId} ${detail}; start it (or wait until its status is Running) and try again.`,
    { details: { agentId } },
  );

/** The Agent's own error, as its error reply to a command carried it. */
export interface AgentErrorReply {
  readonly code: string;
  readonly kind?: string;
  /** Absent when the Service, not the Agent, put the code there (the AGT_DRAINING of a command about a Solution). */
  readonly message?: string;
}

/**
 * AGT_COMMAND_FAILED: Agent `agentId` answered the `type` command with `error`. The Agent's code,
 * kind and message travel in `details` (agentErrorCode, agentErrorKind, agentMessage): read them
 * with {@link agentError}, match them with {@link isAgentError}.
 */
export function commandFailed(agentId: string, type: string, error: Required<AgentErrorReply>): FerryError {
  return new FerryError(
    'AGT_COMMAND_FAILED',
    `Agent ${agentId} could not carry out the ${type} command: ${error.message}`,
    {
      details: { agentId, agentErrorCode: error.code, agentErrorKind: error.kind, agentMessage: error.message },
    },
  );
}

/** The Agent's own error when `err` is its error reply to a command, else undefined: the Agent did not answer. */
export function agentError(err: unknown): AgentErrorReply | undefined {
  if (!isFerryError(err)) return undefined;
  const { agentErrorCode: code, agentErrorKind: kind, agentMessage: message } = err.details ?? {};
  if (typeof code !== 'string') return undefined;
  return { code, ...(typeof kind === 'string' ? { kind } : {}), ...(typeof message === 'string' ? { message } : {}) };
}

/** Whether `err` is the Agent's error reply to a command with the error `code`. */
export function isAgentError(err: unknown, code: ErrorCode): boolean {
  return agentError(err)?.code === code;
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
