import { getAgentById } from '../store/repos/agents.repo.js';
import type { AgentRow, ExecutionRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';

/** Whether an Agent holds a channel to the Service now (the source of AGT_NOT_CONNECTED for commands). */
export interface AgentPresence {
  isConnected(agentId: string): boolean;
}

/** Statuses that say the Agent has been silent past the heartbeat thresholds, connected or not. */
const SILENT = new Set<string>(['HeartbeatLate', 'HeartbeatFailed']);

/**
 * What History says of a run still going while the Agent that runs it is away: its `details`
 * names the Agent and when it was last in contact, since nothing about the run can arrive until it
 * reconnects (a killed Agent ends its open runs when it starts again). Undefined while the Agent is
 * reachable.
 *
 * Read when History is read, from the channel (connected to this Service now?) and the Agent's
 * record (status, lastContactTime), never stored: there is nothing to keep in step when the
 * channel drops, when the Agent comes back, or when the Service restarts, on either store.
 */
export function awayNote(
  agent: Pick<AgentRow, 'id' | 'name' | 'status' | 'lastContactTime'>,
  connected: boolean,
): string | undefined {
  const status = agent.status;
  if (connected && !SILENT.has(status)) return undefined;
  const since =
    agent.lastContactTime === null
      ? 'has not been in contact yet'
      : `has not been in contact since ${agent.lastContactTime}`;
  // A status other than the one it last stated when running says more (HeartbeatFailed, Restarting, …).
  const shown = status === 'Unknown' || status === 'Running' ? '' : ` (${status})`;
  return `The Agent ${agent.name} (${agent.id}) ${since}${shown}; the run's outcome is recorded when it reconnects.`;
}

/** The away notes of the executions still going among `rows`, by execution id. */
export async function awayNotes(
  db: Db,
  rows: readonly ExecutionRow[],
  presence: AgentPresence,
): Promise<Map<number, string>> {
  const going = rows.filter((r) => r.result === null);
  const notes = new Map<number, string>();
  if (going.length === 0) return notes;
  const byAgent = new Map<string, string | undefined>();
  for (const agentId of new Set(going.map((r) => r.agentId))) {
    const agent = await getAgentById(db, agentId);
    byAgent.set(agentId, agent ? awayNote(agent, presence.isConnected(agentId)) : undefined);
  }
  for (const r of going) {
    const note = byAgent.get(r.agentId);
    if (note !== undefined) notes.set(r.id, note);
  }
  return notes;
}
