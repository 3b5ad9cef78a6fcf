import { z } from 'zod';
import { AGENT_STATUSES } from '../../../src/protocol/agent-status.js';
import { Guid, Name, OrgParams, PageQuery, Timestamp, qbool } from './common.js';

export const AgentParams = OrgParams.extend({ agentId: Guid });
export const AgentLogParams = AgentParams.extend({ logId: Guid });

export const InstalledConnector = z.object({ connectorId: z.string(), version: z.string() });

/** The Agent model of SPEC.md. agentInstallationKey and agentInstallerLocation appear only in the provision answer. */
export const Agent = z.object({
  id: z.string(),
  name: z.string(),
  machineName: z.string(),
  serviceName: z.string(),
  isCloudAgent: z.boolean(),
  isUpdating: z.boolean(),
  status: z
    .enum(AGENT_STATUSES)
    .describe(
      'Running only while the Agent is connected: a Running Agent whose channel is gone is shown Unknown until HeartbeatLate or HeartbeatFailed apply',
    ),
  isConnected: z
    .boolean()
    .describe(
      'whether the Agent holds an open channel to the Service now; commands to an Agent that does not answer 409 AGT_NOT_CONNECTED',
    ),
  lastContactTime: Timestamp.nullable(),
  lastShutdownTime: Timestamp.nullable(),
  lastStartTime: Timestamp.nullable(),
  version: z.string().nullable(),
  installedConnectors: z.array(InstalledConnector),
  /** Names of the Solutions that use the Agent, comma-separated; empty when none. */
  usedInSolutions: z.string(),
  versionHold: z.boolean().describe('held at its version: no update is offered to it (docs/agents.md "Updates")'),
  updateVersion: z.string().nullable().describe('the version an update under way installs'),
  updateError: z.string().nullable().describe('why the last update did not happen; the Agent runs the version it ran'),
});
export type Agent = z.infer<typeof Agent>;

/**
 * The Agent model clients send on modify. Only `name` can change; the other fields the Service
 * or the Agent own are accepted so that a model read with GET can be sent back unchanged, and
 * ignored.
 */
export const AgentInput = z.strictObject({
  id: z.string().max(100).optional(),
  name: Name.optional(),
  machineName: z.string().max(255).nullable().optional(),
  serviceName: z.string().max(255).nullable().optional(),
  isCloudAgent: z.boolean().optional(),
  isUpdating: z.boolean().optional(),
  status: z.string().max(100).nullable().optional(),
  isConnected: z.boolean().nullable().optional(),
  lastContactTime: z.string().max(40).nullable().optional(),
  lastShutdownTime: z.string().max(40).nullable().optional(),
  lastStartTime: z.string().max(40).nullable().optional(),
  version: z.string().max(50).nullable().optional(),
  installedConnectors: z
    .array(z.object({ connectorId: z.string().max(100), version: z.string().max(50) }))
    .max(1000)
    .nullable()
    .optional(),
  usedInSolutions: z.string().max(10_000).nullable().optional(),
  /** Holds the Agent at its version (true) or lets updates reach it again (false). */
  versionHold: z.boolean().optional(),
  updateVersion: z.string().max(50).nullable().optional(),
  updateError: z.string().max(2000).nullable().optional(),
  agentInstallationKey: z.string().max(200).nullable().optional(),
  agentInstallerLocation: z.string().max(2000).nullable().optional(),
});

export const AgentListQuery = PageQuery.extend({
  /** Only Agents that have this Connector installed. */
  connectorId: z.string().max(100).optional(),
  /** Exact name, case-insensitive. */
  name: z.string().max(255).optional(),
});

export const RestartQuery = z.object({ restartNow: qbool(false) });
/** restartNow may also travel in the body; the body wins. */
export const RestartBody = z.strictObject({ restartNow: z.boolean().optional() }).nullish();

export const ProvisionedAgent = z.object({
  /** Single use; expires at expiresAt. Shown once: the Service keeps only its hash. */
  agentInstallationKey: z.string(),
  /** The installer script: `curl -fsSL <location> | sh -s -- <key>`. */
  agentInstallerLocation: z.string(),
  expiresAt: Timestamp,
  installCommand: z.string(),
});

export const LogRequested = z.object({ logId: z.string() });
