import { z } from 'zod';
import { acknowledgement } from './acknowledgement.js';
import { AgentStatus } from './agent-status.js';
import {
  RunErrorsReport,
  RunFailedRecordsReport,
  RunCommittedReport,
  RunFinishedReport,
  RunProgressReport,
  RunStartedReport,
  ScheduleSkippedReport,
} from './solutions.js';

/**
 * The messages of the Agent ↔ Service WebSocket (`/v1/agent/channel`), validated on both sides.
 *
 *   Agent                                   Service
 *     │ ── HTTP upgrade, Authorization: Bearer <agentId>.<secret> ──▶ │
 *     │ ── {id, type:'hello', …} ─────────────────────────────────▶ │ records version, start time
 *     │ ◀──────────────────────── {re, ok:true, heartbeatMs, …} ─── │
 *     │ ── {id, type:'heartbeat', …}  every heartbeatMs ──────────▶ │ lastContactTime
 *     │ ── {id, type:'report', report} (from the durable outbox) ─▶ │ stored once per id
 *     │ ◀──────────────────────────────────────── {re, ok:true} ── │ = acknowledged: outbox deletes it
 *     │ ◀── {id, type:<command kind>, …} ────────────────────────── │ ./commands.ts: one table binds
 *     │ ── {re, ok, result | error} ──────────────────────────────▶ │ each kind to its request,
 *     │                                                              │ result and time-out
 *     │ ◀──▶ {type:'ping'|'pong', at}  application-level keepalive    │
 *
 * Requests carry `id` (a GUID) and `type`; replies carry `re` (the request's id) and `ok`.
 * A report's `id` is its durable message ID: the Service deduplicates by it, so a report sent
 * again after a lost acknowledgement is stored once.
 */

export const CHANNEL_PATH = '/v1/agent/channel';
/** Largest message either side accepts (bytes); bulk data travels over HTTP, never here. */
export const MAX_MESSAGE_BYTES = 1024 * 1024;
export const PROTOCOL_VERSION = 1;

const Id = z.string().min(1).max(100);
const Timestamp = z.string().max(40);

/** An error as it crosses the channel: plain data, tested by code. */
export const ErrorData = z.object({
  code: z.string().max(100),
  kind: z.enum(['config', 'transient', 'system']),
  message: z.string().max(10_000),
  details: z.record(z.string(), z.unknown()).optional(),
});
export type ErrorData = z.infer<typeof ErrorData>;

export const InstalledConnector = z.object({ connectorId: z.string().max(100), version: z.string().max(50) });
export type InstalledConnector = z.infer<typeof InstalledConnector>;

// ── Agent → Service requests ───────────────────────────────────────────────────

export const Hello = z.object({
  id: Id,
  type: z.literal('hello'),
  protocolVersion: z.number().int(),
  version: z.string().max(50),
  machineName: z.string().max(255),
  serviceName: z.string().max(255),
  /** Identifies the installation on its machine; a different value for the same agent is a clone. */
  fingerprint: z.string().max(200),
  pid: z.number().int(),
  startedAt: Timestamp,
  status: AgentStatus,
  installedConnectors: z.array(InstalledConnector).max(1000),
});
export type Hello = z.infer<typeof Hello>;

export const Heartbeat = z.object({
  id: Id,
  type: z.literal('heartbeat'),
  at: Timestamp,
  status: AgentStatus,
  rssBytes: z.number().int().nonnegative(),
  runningWork: z.number().int().nonnegative(),
  /** Reports waiting in the Agent's outbox (optional: Agents before it send none; docs/metrics.md). */
  outboxDepth: z.number().int().nonnegative().optional(),
  /** Seconds the oldest of them has waited (0 when the outbox is empty). */
  outboxAgeSeconds: z.number().nonnegative().optional(),
});
export type Heartbeat = z.infer<typeof Heartbeat>;

/** What an Agent reports durably. New kinds are added here as executions and connectors land. */
export const ReportBody = z.discriminatedUnion('kind', [
  z.object({ kind: z.literal('status'), status: AgentStatus, at: Timestamp, reason: z.string().max(1000).optional() }),
  z.object({ kind: z.literal('started'), at: Timestamp, version: z.string().max(50) }),
  z.object({ kind: z.literal('shutdown'), at: Timestamp, status: z.enum(['Shutdown', 'ShutdownCloud']) }),
  z.object({ kind: z.literal('logArchiveFailed'), logId: z.string().max(100), error: ErrorData }),
  /**
   * Progress and outcome of an installConnector / uninstallConnector command. `status` is one of
   * the Marketplace install statuses (SPEC.md); `installed` is the Agent's list afterwards.
   */
  z.object({
    kind: z.literal('connectorInstall'),
    operation: z.enum(['install', 'uninstall']),
    connectorId: z.string().max(100),
    version: z.string().max(50),
    status: z.enum(['AgentDownloadingConnectorUpdate', 'AgentServiceRestarting', 'InstallFailed', 'Installed']),
    error: ErrorData.optional(),
    installed: z.array(InstalledConnector).max(1000),
  }),
  /**
   * An Agent update that did not happen: `Failed` before the restart (download, checksum, unpack:
   * the running version goes on), `RolledBack` when the new version did not start and connect and
   * the supervisor went back to the previous one.
   */
  z.object({
    kind: z.literal('agentUpdate'),
    version: z.string().max(50),
    status: z.enum(['Failed', 'RolledBack']),
    at: Timestamp,
    error: ErrorData,
  }),
  // Solution runs (./solutions.ts): idempotent by run ID.
  RunStartedReport,
  RunProgressReport,
  RunErrorsReport,
  RunFailedRecordsReport,
  RunFinishedReport,
  RunCommittedReport,
  ScheduleSkippedReport,
]);
export type ReportBody = z.infer<typeof ReportBody>;

export const Report = z.object({ id: Id, type: z.literal('report'), at: Timestamp, report: ReportBody });
export type Report = z.infer<typeof Report>;

export const AgentRequest = z.discriminatedUnion('type', [Hello, Heartbeat, Report]);
export type AgentRequest = z.infer<typeof AgentRequest>;

// ── Service → Agent requests (commands; their table is ./commands.ts) ──────────

export const RestartCommand = z.object({ id: Id, type: z.literal('restart'), restartNow: z.boolean() });
/** Reply of restart: accepted; the restart itself happens when work allows. */
export const RestartResult = acknowledgement<{ accepted: true; restartNow: boolean }>();
export const ZipLogsCommand = z.object({
  id: Id,
  type: z.literal('zipLogs'),
  logId: z.string().max(100),
  /** Absolute URL the Agent PUTs the zip to, with its own bearer credentials. */
  uploadUrl: z.string().max(2000),
  /** A Solution's logs: only the lines of its runs (each carries `solutionId` and `runId`). */
  solutionId: z.string().max(100).optional(),
  /**
   * With solutionId: only the lines of this run, and only lines logged at or after `since`.
   * Added in protocol version 1 without a bump: an older Agent ignores them and sends every line
   * of the Solution.
   */
  runId: z.string().max(100).optional(),
  since: Timestamp.refine((s) => !Number.isNaN(Date.parse(s)), 'an ISO-8601 date-time').optional(),
});
/** Reply of zipLogs: accepted; the upload, or a `logArchiveFailed` report, follows. */
export const ZipLogsResult = acknowledgement<{ accepted: true }>();
/**
 * `testConnection`: open a connection with these plain properties (the channel is authenticated
 * and, in production, TLS), test it and close it. The reply is `{ok: true}` when the test passed,
 * else the error. Added in protocol version 1 without a bump: an older Agent answers it with a
 * validation error, which the Service reports as the test's reply.
 */
export const TestConnectionCommand = z.object({
  id: Id,
  type: z.literal('testConnection'),
  connectorId: z.string().max(100),
  properties: z.record(z.string().max(200), z.string().max(100_000)),
});
/** Reply of testConnection when the test passed (a failed test is an error reply). */
export const TestConnectionResult = acknowledgement<{ ok: true }>();
/**
 * `loadMetadata`: open the Connection with these plain properties and answer with its
 * ConnectionMetadata (`./metadata.ts`: the document, packed when it would not fit in a channel
 * message), from the Agent's cache unless `reload`. Bounded: an answer with more entities than
 * MAX_METADATA_ENTITIES, or one that would not fit in a channel message even packed, is refused
 * with CON_METADATA_TOO_LARGE. Added in protocol version 1 without a bump, like testConnection.
 */
export const LoadMetadataCommand = z.object({
  id: Id,
  type: z.literal('loadMetadata'),
  connectionId: z.string().max(100),
  connectorId: z.string().max(100),
  properties: z.record(z.string().max(200), z.string().max(100_000)),
  reload: z.boolean().optional(),
});
/**
 * `installConnector`: download the package at `packageUrl` (with the Agent's bearer credentials),
 * check its SHA-256, and load it, replacing any other version once running work has finished.
 * The reply only acknowledges the command (AgentReceivedCommand); progress and the outcome come
 * as `connectorInstall` reports.
 */
export const InstallConnectorCommand = z.object({
  id: Id,
  type: z.literal('installConnector'),
  connectorId: z.string().max(100),
  name: z.string().max(100),
  version: z.string().max(50),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  size: z.number().int().positive(),
  packageUrl: z.string().max(2000),
});
/**
 * `updateAgent`: download the Agent package of `version` at `packageUrl` (bearer credentials),
 * check its SHA-256 and size, and once running work has finished install it beside the running
 * version and restart into it (src/agent/agent-update.ts). The reply only acknowledges the command;
 * the outcome is the next hello's version, or an `agentUpdate` report when it failed.
 */
export const UpdateAgentCommand = z.object({
  id: Id,
  type: z.literal('updateAgent'),
  version: z.string().max(50),
  sha256: z.string().regex(/^[0-9a-f]{64}$/),
  size: z.number().int().positive(),
  packageUrl: z.string().max(2000),
});
/** Reply of updateAgent: the Agent took the update in hand. */
export const UpdateAgentResult = acknowledgement<{ accepted: true }>();
/** Reply of installConnector and uninstallConnector: the Agent queued the change (AgentReceivedCommand). */
export const ConnectorCommandReceived = acknowledgement<{ received: true }>();
/** `uninstallConnector`: unload and delete the plugin once running work has finished; the outcome comes as a report. */
export const UninstallConnectorCommand = z.object({
  id: Id,
  type: z.literal('uninstallConnector'),
  connectorId: z.string().max(100),
});
/**
 * `preconnect`: run the plugin's preconnect step (a form step, or the start of an OAuth flow) with
 * these plain properties; the reply's result is the plugin's PreconnectResult.
 */
export const PreconnectCommand = z.object({
  id: Id,
  type: z.literal('preconnect'),
  connectorId: z.string().max(100),
  isOauth: z.boolean(),
  properties: z.record(z.string().max(200), z.string().max(100_000)),
});
/**
 * Reply of preconnect: the plugin's PreconnectResult (src/connectors/sdk.ts). Read leniently, as
 * plugins write it: no result or no `reply` means SUCCESS, and only string properties are kept.
 */
export const PreconnectResult = z
  .object({
    reply: z.string().optional(),
    properties: z.record(z.string(), z.unknown()).optional(),
    authorizationUrl: z.string().optional(),
  })
  .optional();
export type RestartCommand = z.infer<typeof RestartCommand>;
export type ZipLogsCommand = z.infer<typeof ZipLogsCommand>;
export type TestConnectionCommand = z.infer<typeof TestConnectionCommand>;
export type LoadMetadataCommand = z.infer<typeof LoadMetadataCommand>;
export type InstallConnectorCommand = z.infer<typeof InstallConnectorCommand>;
export type UpdateAgentCommand = z.infer<typeof UpdateAgentCommand>;
export type UninstallConnectorCommand = z.infer<typeof UninstallConnectorCommand>;
export type PreconnectCommand = z.infer<typeof PreconnectCommand>;

// ── Replies, both ways ─────────────────────────────────────────────────────────

export const HelloResult = z.object({
  serverTime: Timestamp,
  heartbeatMs: z.number().int().positive(),
  agentName: z.string(),
  orgId: z.number().int(),
  /**
   * What this Service takes beyond protocol version 1 as first published (SHARED_ERRORS_FEATURE);
   * an older Service states none, and an Agent then sends as to that version.
   */
  features: z.array(z.string().max(100)).max(100).optional(),
});
export type HelloResult = z.infer<typeof HelloResult>;

export const Reply = z.union([
  z.object({ re: Id, ok: z.literal(true), result: z.unknown().optional() }),
  z.object({ re: Id, ok: z.literal(false), error: ErrorData }),
]);
export type Reply = z.infer<typeof Reply>;

// ── Keepalive ──────────────────────────────────────────────────────────────────

export const Ping = z.object({ type: z.literal('ping'), at: Timestamp });
export const Pong = z.object({ type: z.literal('pong'), at: Timestamp });

/** Anything the Service may receive. What the Agent may receive (`FromService`) is in ./commands.ts. */
export const FromAgent = z.union([AgentRequest, Reply, Ping, Pong]);
export type FromAgent = z.infer<typeof FromAgent>;

/** WebSocket close codes Ferry uses (4000–4999 are the application's). */
export const CLOSE = {
  /** Credentials missing or wrong: do not retry with them. */
  unauthorized: 4401,
  /** The agent was deleted. */
  agentDeleted: 4404,
  /** Another connection with the same identity but another installation: a clone. */
  clonedInstall: 4409,
  /** A newer connection of the same installation replaced this one. */
  replaced: 4000,
  /** Unparseable or invalid messages beyond tolerance. */
  protocolError: 4400,
  /**
   * The Service is going (a replica draining, a restart): reconnect at once, without back-off,
   * through the load balancer to a replica that stays (RFC 6455 "Service Restart").
   */
  serviceRestart: 1012,
} as const;
