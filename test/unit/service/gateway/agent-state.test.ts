import { describe, expect, it } from 'vitest';
import {
  heartbeatPatch,
  helloPatch,
  isoOr,
  reportPatch,
  sweepStatus,
} from '../../../../service/gateway/agent-state.js';
import type { Hello } from '../../../../src/protocol/channel.js';

const NOW = '2026-03-01T12:00:00.000Z';
const hello: Hello = {
  id: 'h1',
  type: 'hello',
  protocolVersion: 1,
  version: '1.0.0',
  machineName: 'm',
  serviceName: 'ferry-agent-1',
  fingerprint: 'fp-1',
  pid: 1,
  startedAt: '2026-03-01T11:59:00Z',
  status: 'Running',
  installedConnectors: [{ connectorId: 'csv', version: '1' }],
};
const onPrem = {
  isCloudAgent: 0,
  status: 'Running',
  fingerprint: 'fp-1',
  lastStartTime: '2026-03-01T11:00:00.000Z',
  lastShutdownTime: null,
};

describe('agent state moves', () => {
  it('normalizes Agent times and falls back for non-dates', () => {
    expect(isoOr('2026-03-01T11:59:00+01:00', NOW)).toBe('2026-03-01T10:59:00.000Z');
    expect(isoOr('yesterday', NOW)).toBe(NOW);
    expect(isoOr(undefined, NOW)).toBe(NOW);
  });

  it('records a hello, and adopts the fingerprint only when none is registered', () => {
    expect(helloPatch(onPrem, hello, NOW)).toEqual({
      status: 'Running',
      version: '1.0.0',
      machineName: 'm',
      serviceName: 'ferry-agent-1',
      installedConnectors: '[{"connectorId":"csv","version":"1"}]',
      lastStartTime: '2026-03-01T11:59:00.000Z',
      lastContactTime: NOW,
      modifiedAt: NOW,
    });
    expect(helloPatch({ isCloudAgent: 1, fingerprint: null }, hello, NOW)).toMatchObject({ fingerprint: 'fp-1' });
  });

  it('takes the status a heartbeat states, ShutdownCloud for a Cloud Agent that says Shutdown', () => {
    const hb = {
      id: 'b',
      type: 'heartbeat' as const,
      at: NOW,
      status: 'Shutdown' as const,
      rssBytes: 1,
      runningWork: 0,
    };
    expect(heartbeatPatch({ isCloudAgent: 0, status: 'Running' }, hb, NOW)).toEqual({
      status: 'Shutdown',
      lastContactTime: NOW,
    });
    expect(heartbeatPatch({ isCloudAgent: 1, status: 'Running' }, hb, NOW)).toEqual({
      status: 'ShutdownCloud',
      lastContactTime: NOW,
    });
  });

  it('applies report statuses of the current run only, and keeps the newest shutdown time', () => {
    const current = '2026-03-01T11:30:00.000Z';
    const previous = '2026-03-01T10:00:00.000Z';
    expect(reportPatch(onPrem, { kind: 'shutdown', at: current, status: 'Shutdown' }, NOW)).toEqual({
      status: 'Shutdown',
      lastShutdownTime: current,
      lastContactTime: NOW,
    });
    expect(reportPatch(onPrem, { kind: 'shutdown', at: previous, status: 'Shutdown' }, NOW)).toEqual({
      lastShutdownTime: previous,
      lastContactTime: NOW,
    });
    expect(
      reportPatch(
        { ...onPrem, lastShutdownTime: current },
        { kind: 'shutdown', at: previous, status: 'Shutdown' },
        NOW,
      ),
    ).toEqual({ lastContactTime: NOW });
    expect(
      reportPatch(onPrem, { kind: 'status', at: current, status: 'WaitingToRestartAgentMemoryLimit' }, NOW),
    ).toMatchObject({ status: 'WaitingToRestartAgentMemoryLimit' });
    expect(reportPatch(onPrem, { kind: 'status', at: previous, status: 'Restarting' }, NOW)).toEqual({
      lastContactTime: NOW,
    });
    expect(reportPatch(onPrem, { kind: 'started', at: current, version: '2.0' }, NOW)).toEqual({
      lastStartTime: current,
      version: '2.0',
      lastContactTime: NOW,
    });
    expect(
      reportPatch({ ...onPrem, isCloudAgent: 1 }, { kind: 'shutdown', at: current, status: 'Shutdown' }, NOW),
    ).toMatchObject({ status: 'ShutdownCloud' });
  });

  it('keeps an Obsolete Agent so while it says Running, and lets it stop', () => {
    const obsolete = { ...onPrem, status: 'Obsolete, install new Agent' };
    const hb = {
      id: 'b',
      type: 'heartbeat' as const,
      at: NOW,
      status: 'Running' as const,
      rssBytes: 1,
      runningWork: 0,
    };
    expect(heartbeatPatch(obsolete, hb, NOW)).toEqual({ lastContactTime: NOW });
    expect(heartbeatPatch(obsolete, { ...hb, status: 'Shutdown' }, NOW)).toEqual({
      status: 'Shutdown',
      lastContactTime: NOW,
    });
    const at = '2026-03-01T11:30:00.000Z';
    expect(reportPatch(obsolete, { kind: 'status', at, status: 'Running' }, NOW)).toEqual({ lastContactTime: NOW });
  });

  it('an update that ended without the new version clears isUpdating and keeps the failed version and why', () => {
    const error = { code: 'AGT_UPDATE_FAILED', kind: 'transient' as const, message: 'it did not connect within 60 s' };
    const at = '2026-03-01T11:30:00.000Z';
    expect(
      reportPatch(onPrem, { kind: 'agentUpdate', version: '2.0.0', status: 'RolledBack', at, error }, NOW),
    ).toEqual({
      isUpdating: 0,
      updateVersion: null,
      updateFailedVersion: '2.0.0',
      updateError: 'Rolled back: it did not connect within 60 s',
      lastContactTime: NOW,
    });
    expect(
      reportPatch(onPrem, { kind: 'agentUpdate', version: '2.0.0', status: 'Failed', at, error }, NOW),
    ).toMatchObject({ updateError: 'Failed: it did not connect within 60 s', updateFailedVersion: '2.0.0' });
  });

  it('derives HeartbeatLate and HeartbeatFailed from the silence, and leaves stopped or never-seen Agents', () => {
    const now = Date.parse(NOW);
    const ago = (s: number) => new Date(now - s * 1000).toISOString();
    const late = 15 * 60_000;
    const failed = 60 * 60_000;
    expect(sweepStatus('Running', ago(14 * 60), now, late, failed)).toBeUndefined();
    expect(sweepStatus('Running', ago(15 * 60), now, late, failed)).toBe('HeartbeatLate');
    expect(sweepStatus('HeartbeatLate', ago(59 * 60), now, late, failed)).toBeUndefined();
    expect(sweepStatus('HeartbeatLate', ago(60 * 60), now, late, failed)).toBe('HeartbeatFailed');
    expect(sweepStatus('WaitingToUpdateAgent', ago(61 * 60), now, late, failed)).toBe('HeartbeatFailed');
    expect(sweepStatus('HeartbeatFailed', ago(600 * 60), now, late, failed)).toBeUndefined();
    expect(sweepStatus('Shutdown', ago(600 * 60), now, late, failed)).toBeUndefined();
    expect(sweepStatus('ShutdownCloud', ago(600 * 60), now, late, failed)).toBeUndefined();
    expect(sweepStatus('Unknown', null, now, late, failed)).toBeUndefined();
  });
});
