import { OBSOLETE_STATUS, type AgentStatus } from '../../src/protocol/agent-status.js';
import type { Heartbeat, Hello, InstalledConnector, ReportBody } from '../../src/protocol/channel.js';
import type { AgentRow, AgentUpdate } from '../store/schema.js';

/**
 * How what an Agent says moves its record: pure functions from (record, message, now) to a
 * patch, so the rules are read and tested in one place.
 *
 * Implemented status moves (SPEC.md "Agent status"):
 *   (new)        → Unknown                           registered or provisioned, never connected
 *   any          → the status the hello states       (usually Running) on connect
 *   any          → the status a heartbeat states     every heartbeat
 *   any          → status / Shutdown / ShutdownCloud from durable reports
 *   any          → WaitingToRestartAgentUserRequest  POST restart, once the Agent accepted it
 *   any but Shutdown, ShutdownCloud → HeartbeatLate / HeartbeatFailed  by the sweeper
 *   any          → WaitingToUpdateAgent / UpdatingAgent / AgentUpdating  as the Agent reports its update
 *   any          → Obsolete, install new Agent       on connect, when too old (agents/agent-updates.ts);
 *                                                    kept while the Agent says Running
 */

/** Statuses the sweeper leaves alone: the Agent said goodbye, so silence is expected. */
export const STOPPED_STATUSES: readonly AgentStatus[] = ['Shutdown', 'ShutdownCloud'];

/** An Agent-supplied time as ISO-8601 UTC, or `fallback` when it is not a date. */
export function isoOr(value: string | undefined, fallback: string): string {
  if (value === undefined) return fallback;
  const ms = Date.parse(value);
  return Number.isFinite(ms) ? new Date(ms).toISOString() : fallback;
}

/** A Cloud Agent that says Shutdown means ShutdownCloud (SPEC: "Cloud Agent shut down"). */
function shutdownStatus(agent: Pick<AgentRow, 'isCloudAgent'>, status: AgentStatus): AgentStatus {
  return status === 'Shutdown' && agent.isCloudAgent === 1 ? 'ShutdownCloud' : status;
}

export function connectorsJson(list: readonly InstalledConnector[]): string {
  return JSON.stringify(list.map((c) => ({ connectorId: c.connectorId, version: c.version })));
}

export function helloPatch(
  agent: Pick<AgentRow, 'isCloudAgent' | 'fingerprint'>,
  hello: Hello,
  now: string,
): AgentUpdate {
  return {
    status: shutdownStatus(agent, hello.status),
    version: hello.version,
    machineName: hello.machineName,
    serviceName: hello.serviceName,
    installedConnectors: connectorsJson(hello.installedConnectors),
    lastStartTime: isoOr(hello.startedAt, now),
    lastContactTime: now,
    // Trust on first use when the record has none (a Cloud Agent the Service provisioned).
    ...(agent.fingerprint === null ? { fingerprint: hello.fingerprint } : {}),
    modifiedAt: now,
  };
}

export function heartbeatPatch(
  agent: Pick<AgentRow, 'isCloudAgent' | 'status'>,
  hb: Heartbeat,
  now: string,
): AgentUpdate {
  return keepObsolete(agent, { status: shutdownStatus(agent, hb.status), lastContactTime: now });
}

/** An Obsolete Agent stays so while it says Running: the Service, not the Agent, knows it is too old. */
function keepObsolete(agent: Pick<AgentRow, 'status'>, patch: AgentUpdate): AgentUpdate {
  if (agent.status !== OBSOLETE_STATUS || patch.status !== 'Running') return patch;
  const { status: _running, ...rest } = patch;
  return rest;
}

/**
 * The effect of a durable report. Reports can arrive late (the outbox of a previous run is sent
 * after the next hello), so a status change older than the Agent's current start is history and
 * moves nothing; its times are still kept when they are newer than what the record has.
 */
export function reportPatch(
  agent: Pick<AgentRow, 'isCloudAgent' | 'lastStartTime' | 'lastShutdownTime' | 'status'>,
  report: ReportBody,
  now: string,
): AgentUpdate | undefined {
  const current = (at: string) => agent.lastStartTime === null || at >= agent.lastStartTime;
  switch (report.kind) {
    case 'status': {
      const at = isoOr(report.at, now);
      return current(at)
        ? keepObsolete(agent, { status: shutdownStatus(agent, report.status), lastContactTime: now })
        : { lastContactTime: now };
    }
    case 'started': {
      const at = isoOr(report.at, now);
      return current(at)
        ? { lastStartTime: at, version: report.version, lastContactTime: now }
        : { lastContactTime: now };
    }
    case 'shutdown': {
      const at = isoOr(report.at, now);
      const patch: AgentUpdate = { lastContactTime: now };
      if (agent.lastShutdownTime === null || at > agent.lastShutdownTime) patch.lastShutdownTime = at;
      if (current(at)) patch.status = shutdownStatus(agent, report.status);
      return patch;
    }
    case 'logArchiveFailed':
      return { lastContactTime: now };
    case 'agentUpdate':
      // The update ended without the new version: the Agent runs the one it ran (Failed) or went back to it.
      return {
        isUpdating: 0,
        updateVersion: null,
        updateFailedVersion: report.version,
        updateError: `${report.status === 'RolledBack' ? 'Rolled back' : 'Failed'}: ${report.error.message}`.slice(
          0,
          2000,
        ),
        lastContactTime: now,
      };
    case 'connectorInstall':
      return { installedConnectors: connectorsJson(report.installed), lastContactTime: now };
  }
}

/**
 * The status the sweeper gives an Agent silent since `lastContact`, or undefined to leave it:
 * HeartbeatLate after `lateAfterMs`, HeartbeatFailed after `failedAfterMs`; stopped Agents and
 * Agents that never made contact keep theirs.
 */
export function sweepStatus(
  status: string,
  lastContact: string | null,
  nowMs: number,
  lateAfterMs: number,
  failedAfterMs: number,
): AgentStatus | undefined {
  if (lastContact === null || (STOPPED_STATUSES as readonly string[]).includes(status)) return undefined;
  const silent = nowMs - Date.parse(lastContact);
  if (!Number.isFinite(silent)) return undefined;
  if (silent >= failedAfterMs) return status === 'HeartbeatFailed' ? undefined : 'HeartbeatFailed';
  if (silent >= lateAfterMs) return status === 'HeartbeatLate' ? undefined : 'HeartbeatLate';
  return undefined;
}
