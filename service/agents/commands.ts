import { FerryError } from '../../src/errors/ferry-error.js';
import { COMMANDS, type CommandKind, type CommandResult } from '../../src/protocol/commands.js';
import { isAgentError, type AgentCommand, type SolutionCommandPolicy } from '../gateway/agent-command.js';
import type { AgentRow } from '../store/schema.js';
import type { CommandBus } from '../gateway/command-bus.js';

export { notConnected, type AgentCommand, type SolutionCommandPolicy } from '../gateway/agent-command.js';

/**
 * Every command the Service sends to an Agent goes through here. The command table
 * (`COMMANDS`, src/protocol/commands.ts) gives each kind its time-out and the schema of its result;
 * this class sends through the gateway's {@link CommandBus}, parses the reply's result, says
 * AGT_NOT_CONNECTED the same way everywhere, and owns the one retry policy of the commands about a
 * Solution ({@link sendAboutSolution}).
 */
export class AgentCommands {
  constructor(private readonly bus: CommandBus) {}

  /**
   * Sends `command` and resolves with the Agent's result, parsed by its kind's schema. Rejects with
   * AGT_NOT_CONNECTED (no channel, or it closed before the answer), CHN_TIMEOUT (no answer within
   * the kind's time-out) or AGT_COMMAND_FAILED (the Agent's error, or a result that does not parse).
   */
  async send<C extends AgentCommand>(agentId: string, command: C): Promise<CommandResult<C['type']>> {
    const answer = await this.bus.send(agentId, command, COMMANDS[command.type].timeoutMs);
    return readResult<C['type']>(agentId, command.type, answer);
  }

  /**
   * Sends a command about a Solution that the Agent must hold at the Service's version. `build`
   * makes the command (it reads that version). An Agent that answers AGT_SOLUTION_NOT_HELD has its
   * copies brought up to date (`policy.sync`) and is asked once more with a command built again.
   * An Agent that answers AGT_DRAINING is waiting to restart or to update a Connector and starts
   * no new run: that is the 409 AGT_DRAINING with `policy.draining` (the Agent's state conflicts
   * with the request), not the 502 AGT_COMMAND_FAILED of an Agent that failed to carry it out.
   */
  async sendAboutSolution<C extends AgentCommand<'startSolution' | 'reprocessRun'>>(
    agentId: string,
    build: () => Promise<C>,
    policy: SolutionCommandPolicy,
  ): Promise<CommandResult<C['type']>> {
    try {
      try {
        return await this.send(agentId, await build());
      } catch (err) {
        if (!isAgentError(err, 'AGT_SOLUTION_NOT_HELD')) throw err;
        await policy.sync(agentId);
        return await this.send(agentId, await build());
      }
    } catch (err) {
      if (!isAgentError(err, 'AGT_DRAINING')) throw err;
      throw new FerryError('AGT_DRAINING', policy.draining, {
        details: { ...policy.details, agentId, agentErrorCode: 'AGT_DRAINING' },
      });
    }
  }

  /** Whether the Agent has an open channel to this Service now. */
  isConnected(agentId: string): boolean {
    return this.bus.isConnected(agentId);
  }

  /** Throws AGT_NOT_CONNECTED, naming the Agent, unless it has an open channel now. */
  requireConnected(agent: Pick<AgentRow, 'id' | 'name'>): void {
    if (!this.bus.isConnected(agent.id)) {
      throw new FerryError(
        'AGT_NOT_CONNECTED',
        `Agent ${agent.name} is not connected; start it (or wait until its status is Running) and try again.`,
        { details: { agentId: agent.id } },
      );
    }
  }

  /** The Agent's current channel as an opaque token (see {@link CommandBus.channelOf}). */
  channelOf(agentId: string): object | undefined {
    return this.bus.channelOf(agentId);
  }

  /** Closes the Agent's channel with an application close code. */
  disconnect(agentId: string, code: number, reason: string): void {
    this.bus.disconnect(agentId, code, reason);
  }
}

/**
 * The result of an Agent's `{ok: true}` reply to a command of `kind`, parsed by the kind's schema.
 * One that does not parse (an Agent of another version) is AGT_COMMAND_FAILED, naming the first
 * issues.
 */
export function readResult<K extends CommandKind>(agentId: string, kind: K, answer: unknown): CommandResult<K> {
  const parsed = COMMANDS[kind].result.safeParse(answer);
  if (parsed.success) return parsed.data as CommandResult<K>;
  const issues = parsed.error.issues
    .slice(0, 3)
    .map((i) => `${i.path.join('.') || '(result)'}: ${i.message}`)
    .join('; ');
  throw new FerryError(
    'AGT_COMMAND_FAILED',
    `Agent ${agentId} answered the ${kind} command with a result this Service cannot read (${issues}); update the Agent.`,
    {
      details: { agentId, command: kind },
    },
  );
}
