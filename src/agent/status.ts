import { DRAINING_STATUSES, type AgentStatus } from '../protocol/agent-status.js';

/**
 * The statuses an Agent sets on itself, and the moves between them. The Service derives the
 * others (HeartbeatLate, HeartbeatFailed, Unknown) from silence.
 *
 *   Running ──restart(user)──▶ WaitingToRestartAgentUserRequest ─┐
 *      │   ──memory limit───▶ WaitingToRestartAgentMemoryLimit ──┼─ work done ─▶ Restarting ─▶ (new process) Running
 *      └──────────────── stop ──────────────────────────────────┴─────────────▶ Shutdown | ShutdownCloud
 *   Running ──connector update──▶ WaitingToUpdateConnector ── work done ─▶ UpdatingConnector ─▶ Running
 *   Running ──agent update──▶ WaitingToUpdateAgent ── work done ─▶ UpdatingAgent ─▶ AgentUpdating ─▶ (new version) Running
 *                                                                      └─ failed ─▶ Running
 */
const MOVES: Partial<Record<AgentStatus, readonly AgentStatus[]>> = {
  Running: [
    'WaitingToRestartAgentUserRequest',
    'WaitingToRestartAgentMemoryLimit',
    'Restarting',
    'Shutdown',
    'ShutdownCloud',
    'WaitingToUpdateConnector',
    'UpdatingConnector',
    'WaitingToUpdateAgent',
    'UpdatingAgent',
  ],
  WaitingToUpdateAgent: [
    'UpdatingAgent',
    'Running',
    'WaitingToRestartAgentUserRequest',
    'WaitingToRestartAgentMemoryLimit',
    'Shutdown',
    'ShutdownCloud',
  ],
  UpdatingAgent: ['AgentUpdating', 'Running', 'Shutdown', 'ShutdownCloud'],
  AgentUpdating: ['Shutdown', 'ShutdownCloud'],
  WaitingToUpdateConnector: [
    'UpdatingConnector',
    'Running',
    'WaitingToRestartAgentUserRequest',
    'WaitingToRestartAgentMemoryLimit',
    'Shutdown',
    'ShutdownCloud',
  ],
  UpdatingConnector: [
    'Running',
    'WaitingToRestartAgentUserRequest',
    'WaitingToRestartAgentMemoryLimit',
    'Shutdown',
    'ShutdownCloud',
  ],
  // A user's restart request while the memory restart waits (or the reverse) keeps the first reason.
  WaitingToRestartAgentUserRequest: ['Restarting', 'Shutdown', 'ShutdownCloud'],
  WaitingToRestartAgentMemoryLimit: ['Restarting', 'Shutdown', 'ShutdownCloud'],
  Restarting: ['Shutdown', 'ShutdownCloud'],
};

/** A status change, as handed to listeners. */
export interface StatusChange {
  readonly from: AgentStatus;
  readonly to: AgentStatus;
  readonly reason: string | undefined;
  readonly at: Date;
}

/** The Agent's own status; every accepted move is announced (the composition root reports it durably). */
export class StatusMachine {
  private current: AgentStatus;
  private readonly listeners = new Set<(change: StatusChange) => void>();

  constructor(
    initial: AgentStatus = 'Running',
    private readonly now: () => Date = () => new Date(),
  ) {
    this.current = initial;
  }

  get status(): AgentStatus {
    return this.current;
  }

  /** No new work starts in these statuses (SPEC: "Solutions due to start are paused"). */
  get draining(): boolean {
    return DRAINING_STATUSES.includes(this.current) || this.current === 'Shutdown' || this.current === 'ShutdownCloud';
  }

  canMove(to: AgentStatus): boolean {
    return MOVES[this.current]?.includes(to) ?? false;
  }

  /** Moves to `to` if that is a legal move; returns whether it moved. */
  move(to: AgentStatus, reason?: string): boolean {
    if (!this.canMove(to)) return false;
    const change: StatusChange = { from: this.current, to, reason, at: this.now() };
    this.current = to;
    for (const listener of this.listeners) listener(change);
    return true;
  }

  onChange(listener: (change: StatusChange) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }
}
