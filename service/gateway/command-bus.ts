import { notConnected, type AgentCommand } from './agent-command.js';
import type { AgentSession } from './agent-session.js';

export { notConnected, type AgentCommand } from './agent-command.js';

/**
 * How the REST layer reaches an Agent: send a command, get its reply or a clear error.
 *
 * Today one Service process holds every channel, so {@link LocalCommandBus} finds the Agent's
 * session in memory. With several replicas behind a load balancer the socket may live on another
 * replica: a `PgCommandBus` implementing this same interface would NOTIFY the channel
 * `ferry_agent_commands` with `{replica, agentId, command}` and LISTEN for the reply, each replica
 * recording the Agents it holds in a table. Callers do not change.
 */
export interface CommandBus {
  /**
   * Sends `command` to the Agent and resolves with the `result` of its `{ok: true}` reply.
   * Rejects with AGT_NOT_CONNECTED (no channel, or it closed before the reply), CHN_TIMEOUT (no
   * reply within `timeoutMs`) or AGT_COMMAND_FAILED (the Agent answered with an error).
   */
  send(agentId: string, command: AgentCommand, timeoutMs: number): Promise<unknown>;
  /** Whether the Agent has an open channel (that said hello) right now. */
  isConnected(agentId: string): boolean;
  /**
   * The Agent's current channel as an opaque token, undefined when it has none. It changes when
   * the Agent reconnects: a command sent on a channel that is no longer the current one will get
   * no answer, even if the old socket has not finished closing.
   */
  channelOf(agentId: string): object | undefined;
  /** Closes the Agent's channel with an application close code (4404 when it was deleted). */
  disconnect(agentId: string, code: number, reason: string): void;
}

/** The open, greeted sessions of this process, one per Agent. */
export class SessionRegistry {
  readonly #sessions = new Map<string, AgentSession>();

  get(agentId: string): AgentSession | undefined {
    return this.#sessions.get(agentId);
  }

  /** Makes `session` the Agent's session; returns the one it replaces, for the caller to close. */
  attach(session: AgentSession): AgentSession | undefined {
    const previous = this.#sessions.get(session.agentId);
    this.#sessions.set(session.agentId, session);
    return previous === session ? undefined : previous;
  }

  /** Forgets `session` if it is still the Agent's current one. */
  detach(session: AgentSession): void {
    if (this.#sessions.get(session.agentId) === session) this.#sessions.delete(session.agentId);
  }

  get size(): number {
    return this.#sessions.size;
  }

  all(): AgentSession[] {
    return [...this.#sessions.values()];
  }
}

export class LocalCommandBus implements CommandBus {
  constructor(private readonly registry: SessionRegistry) {}

  async send(agentId: string, command: AgentCommand, timeoutMs: number): Promise<unknown> {
    const session = this.registry.get(agentId);
    if (!session) throw notConnected(agentId);
    return session.request(command, timeoutMs);
  }

  isConnected(agentId: string): boolean {
    return this.registry.get(agentId) !== undefined;
  }

  channelOf(agentId: string): object | undefined {
    return this.registry.get(agentId);
  }

  disconnect(agentId: string, code: number, reason: string): void {
    this.registry.get(agentId)?.close(code, reason);
  }
}
