import { describe, expect, it } from 'vitest';
import { StatusMachine, type StatusChange } from '../../../src/agent/status.js';

describe('the Agent status machine', () => {
  it('starts Running and announces each move with its reason', () => {
    const sm = new StatusMachine();
    const seen: StatusChange[] = [];
    sm.onChange((c) => seen.push(c));
    expect(sm.status).toBe('Running');
    expect(sm.draining).toBe(false);
    expect(sm.move('WaitingToRestartAgentUserRequest', 'restart requested')).toBe(true);
    expect(sm.draining).toBe(true);
    expect(sm.move('Restarting')).toBe(true);
    expect(seen.map((c) => [c.from, c.to, c.reason])).toEqual([
      ['Running', 'WaitingToRestartAgentUserRequest', 'restart requested'],
      ['WaitingToRestartAgentUserRequest', 'Restarting', undefined],
    ]);
  });

  it('keeps the first restart reason: a memory restart does not replace a waiting user restart', () => {
    const sm = new StatusMachine();
    sm.move('WaitingToRestartAgentUserRequest');
    expect(sm.move('WaitingToRestartAgentMemoryLimit')).toBe(false);
    expect(sm.status).toBe('WaitingToRestartAgentUserRequest');
  });

  it('refuses moves the Agent cannot make on itself', () => {
    const sm = new StatusMachine();
    expect(sm.move('HeartbeatLate')).toBe(false);
    expect(sm.move('Running')).toBe(false);
    sm.move('Shutdown');
    expect(sm.draining).toBe(true);
    expect(sm.move('Running')).toBe(false);
    expect(sm.move('WaitingToRestartAgentMemoryLimit')).toBe(false);
  });

  it('stops from any own status, as Shutdown or ShutdownCloud', () => {
    for (const via of ['WaitingToRestartAgentMemoryLimit', 'Restarting'] as const) {
      const sm = new StatusMachine();
      sm.move(via);
      expect(sm.move('ShutdownCloud')).toBe(true);
    }
  });
});
