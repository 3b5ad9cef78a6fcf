import { FerryError } from '../../src/errors/ferry-error.js';
import type { AgentCommand } from '../gateway/agent-command.js';
import type { AgentRow } from '../store/schema.js';
import type { CommandBus } from '../gateway/command-bus.js';

export { notConnected, type AgentCommand } from '../gateway/agent-command.js';

/**
 * How long the Service waits for an Agent's answer to each kind of command. One table, so that a
 * command's patience is decided once:
 *
 * - `restart`, `zipLogs`: the Agent only acknowledges; the work goes on after (10 s).
 * - `installConnector`, `uninstallConnector`: acknowledged once the Agent queued the change; the
 *   outcome arrives as a report (30 s).
 * - `testConnection`, `preconnect`: the answer is the plugin's, whose own time-out is 60 s (90 s).
 * - `loadMetadata`: the plugin may take 10 minutes to read a large datastore's schema (11 min).
 * - `assignSolutions`, `putSolution`: the Agent stores the list or the definition locally (30 s).
 * - `startSolution`, `stopSolution`, `monitorSolution`: answered from the Agent's run queue at
 *   once; the run itself reports through the outbox (10 s).
 * - `previewQuery`, `nativeQueryTest`: the answer is the first records, read within the Agent's
 *   own time-out of 60 s (90 s).
 * - `reprocessRun`: answered from the Agent's run queue at once, like startSolution (10 s).
 * - `knownRuns`: answered from the Agent's open runs and outbox at once (10 s).
 * - `pruneFailedRecords`: answered once the Agent removed its local failed records past the
 *   History window, a large store in chunks (5 min).
 */
export const COMMAND_TIMEOUTS_MS: Readonly<Record<AgentCommand['type'], number>> = {
  restart: 10_000,
  zipLogs: 10_000,
  installConnector: 30_000,
  uninstallConnector: 30_000,
  testConnection: 90_000,
  preconnect: 90_000,
  loadMetadata: 11 * 60_000,
  assignSolutions: 30_000,
  putSolution: 30_000,
  startSolution: 10_000,
  stopSolution: 10_000,
  monitorSolution: 10_000,
  previewQuery: 90_000,
  nativeQueryTest: 90_000,
  reprocessRun: 10_000,
  knownRuns: 10_000,
  pruneFailedRecords: 5 * 60_000,
};

/**
 * Every command the Service sends to an Agent goes through here: it picks the command's time-out
 * from {@link COMMAND_TIMEOUTS_MS} and says AGT_NOT_CONNECTED the same way everywhere. The
 * transport underneath is the gateway's {@link CommandBus}.
 */
export class AgentCommands {
  constructor(private readonly bus: CommandBus) {}

  /**
   * Sends `command` and resolves with the Agent's result. Rejects with AGT_NOT_CONNECTED (no
   * channel, or it closed before the answer), CHN_TIMEOUT or AGT_COMMAND_FAILED (the Agent's error).
   */
  send(agentId: string, command: AgentCommand): Promise<unknown> {
    return this.bus.send(agentId, command, COMMAND_TIMEOUTS_MS[command.type]);
  }

  /** Whether the Agent has an open channel to this Service now. */
  isConnected(agentId: string): boolean {
    return this.bus.isConnected(agentId);
  }

  /** Throws AGT_NOT_CONNECTED, naming the Agent, unless it has an open channel now. */
  requireConnected(agent: Pick<AgentRow, 'id' | 'name'>): void {
    if (!this.bus.isConnected(agent.id)) {
      throw new FerryError('AGT_NOT_CONNECTED', `Agent ${agent.name} is not connected; start it (or wait until its status is Running) and try again.`, { details: { agentId: agent.id } });
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
