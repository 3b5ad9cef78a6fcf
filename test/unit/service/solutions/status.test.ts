import { describe, expect, it } from 'vitest';
import { AGENT_STATUSES, type AgentStatus } from '../../../../src/protocol/agent-status.js';
import { SOLUTION_STATUSES, solutionStatus } from '../../../../service/solutions/status.js';

const prepared = {
  isDisabled: 0,
  prepared: 1,
  inProgressStartTime: null,
  nextRunTime: null,
  solutionType: 'Integration',
};
const running: { status: AgentStatus } = { status: 'Running' };

describe('solutionStatus', () => {
  it('is Disabled first, whatever else holds', () => {
    expect(solutionStatus({ ...prepared, isDisabled: 1, prepared: 0 }, { status: 'HeartbeatFailed' })).toBe('Disabled');
  });

  it('is Incomplete until prepared, whatever the Agent does', () => {
    expect(solutionStatus({ ...prepared, prepared: 0 }, running)).toBe('Incomplete');
    expect(solutionStatus({ ...prepared, prepared: 0 }, { status: 'Shutdown' })).toBe('Incomplete');
  });

  it('shows what the Agent status means for a prepared Solution', () => {
    const cases: Array<[AgentStatus, string]> = [
      ['Shutdown', 'AgentShutdown'],
      ['ShutdownCloud', 'AgentShutdown'],
      ['HeartbeatLate', 'AgentHeartbeatLate'],
      ['HeartbeatFailed', 'AgentHeartbeatFailed'],
      ['AgentUpdating', 'AgentUpdating'],
      ['UpdatingAgent', 'AgentUpdating'],
      ['WaitingToUpdateAgent', 'WaitingToUpdateAgent'],
      ['WaitingToUpdateConnector', 'WaitingToUpdateConnector'],
      ['UpdatingConnector', 'UpdatingConnector'],
      ['WaitingToRestartAgentUserRequest', 'WaitingToRestartAgentUserRequest'],
      ['WaitingToRestartAgentMemoryLimit', 'WaitingToRestartAgentMemoryLimit'],
      ['Restarting', 'AgentRestarting'],
    ];
    for (const [agent, shown] of cases)
      expect(
        solutionStatus({ ...prepared, inProgressStartTime: '2026-01-01T00:00:00.000Z' }, { status: agent }),
        agent,
      ).toBe(shown);
  });

  it('leaves Running, Unknown and Obsolete Agents out of it', () => {
    for (const status of ['Running', 'Unknown', 'Obsolete, install new Agent'] as const)
      expect(solutionStatus(prepared, { status })).toBe('OnDemand');
    expect(solutionStatus(prepared, undefined)).toBe('OnDemand');
  });

  it('is InProgress during a run, then WaitingForEvent, Idle when scheduled, else OnDemand', () => {
    expect(solutionStatus({ ...prepared, inProgressStartTime: '2026-01-01T00:00:00.000Z' }, running)).toBe(
      'InProgress',
    );
    expect(solutionStatus({ ...prepared, solutionType: 'IntegrationEvent' }, running)).toBe('WaitingForEvent');
    expect(solutionStatus({ ...prepared, nextRunTime: '2026-01-02T00:00:00.000Z' }, running)).toBe('Idle');
    expect(solutionStatus({ ...prepared, solutionType: 'Replication' }, running)).toBe('OnDemand');
  });

  it("adds the last run's outcome to Idle and OnDemand, and to nothing else", () => {
    const scheduled = { ...prepared, nextRunTime: '2026-01-02T00:00:00.000Z' };
    for (const [result, idle, onDemand] of [
      ['FatalError', 'IdleLastRunFailed', 'OnDemandLastRunFailed'],
      ['RecordErrorsAndFatalErrors', 'IdleLastRunFailed', 'OnDemandLastRunFailed'],
      ['CompletedWithErrors', 'IdleLastRunRowErrors', 'OnDemandLastRunRowErrors'],
      ['CompletedSuccessfully', 'Idle', 'OnDemand'],
      [null, 'Idle', 'OnDemand'],
    ] as const) {
      expect(solutionStatus({ ...scheduled, lastRunResult: result }, running), String(result)).toBe(idle);
      expect(solutionStatus({ ...prepared, lastRunResult: result }, running), String(result)).toBe(onDemand);
    }
    const failed = { ...prepared, lastRunResult: 'FatalError' };
    expect(solutionStatus({ ...failed, inProgressStartTime: '2026-01-01T00:00:00.000Z' }, running)).toBe('InProgress');
    expect(solutionStatus({ ...failed, solutionType: 'IntegrationEvent' }, running)).toBe('WaitingForEvent');
    expect(solutionStatus({ ...failed, prepared: 0 }, running)).toBe('Incomplete');
    expect(solutionStatus(failed, { status: 'HeartbeatLate' })).toBe('AgentHeartbeatLate');
  });

  it('answers only statuses of the list, for every Agent status', () => {
    for (const status of AGENT_STATUSES) expect(SOLUTION_STATUSES).toContain(solutionStatus(prepared, { status }));
  });
});
