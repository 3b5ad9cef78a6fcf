import os from 'node:os';
import type { FastifyBaseLogger } from 'fastify';
import { FerryError } from '../../src/errors/ferry-error.js';
import { AgentStatus } from '../../src/protocol/agent-status.js';
import { CLOSE } from '../../src/protocol/channel.js';
import { listAgentLogIds } from '../store/repos/agent-logs.repo.js';
import {
  agentNameTaken,
  deleteAgent,
  getAgent,
  getAgentById,
  getCloudAgent,
  insertAgent,
  listAgents,
  updateAgent,
} from '../store/repos/agents.repo.js';
import { solutionNamesUsingAgent } from '../store/repos/solutions.repo.js';
import type { AgentRow, NewAgentRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import type { Store } from '../store/store.js';
import { newId, nowIso } from '../util/values.js';
import { CLOUD_AGENT_NAME } from './registration.js';
import type { AgentRuntime } from './runtime.js';

/** What the Agent operations use: the store, and the way to the Agents and their files. */
export interface AgentDeps {
  readonly store: Pick<Store, 'db'>;
  readonly agents: AgentRuntime;
}

/**
 * Agents of an Organization: the rules of their records (names, the Cloud Agent, status shown),
 * and the operations that reach the Agent itself (restart, retire).
 */

export async function requireAgent(db: Db, orgId: number, agentId: string): Promise<AgentRow> {
  const agent = await getAgent(db, orgId, agentId);
  if (!agent) throw new FerryError('API_NOT_FOUND', `Agent ${agentId} was not found in Organization ${orgId}.`);
  return agent;
}

/** The Organization's Agents by name, only those with `connectorId` installed when given. */
export async function listAgentsOf(
  db: Db,
  orgId: number,
  filter: { name?: string | undefined; connectorId?: string | undefined },
): Promise<AgentRow[]> {
  const rows = await listAgents(db, orgId, { name: filter.name });
  if (filter.connectorId === undefined) return rows;
  // An Organization has few Agents: the connector filter reads their JSON list here.
  const wanted = filter.connectorId.toLowerCase();
  return rows.filter((r) => installedConnectors(r).some((c) => c.connectorId.toLowerCase() === wanted));
}

/**
 * The status the API shows. The stored status is the last one the Agent stated; while it says
 * Running but its channel is gone (a frozen process, a pulled cable, a Service restart it has not
 * reconnected after) it is shown Unknown, since commands would answer AGT_NOT_CONNECTED. The
 * sweeper's HeartbeatLate and HeartbeatFailed, by lastContactTime, are stored and win as before;
 * the other statuses (restarting, updating, shut down) already say that the Agent may be away.
 */
export function shownStatus(stored: string, connected: boolean): AgentStatus {
  const status = AgentStatus.safeParse(stored);
  if (!status.success) return 'Unknown';
  return status.data === 'Running' && !connected ? 'Unknown' : status.data;
}

/** The Connectors the Agent last reported installed; an unreadable list is an empty one. */
export function installedConnectors(
  row: Pick<AgentRow, 'installedConnectors'>,
): Array<{ connectorId: string; version: string }> {
  try {
    const list: unknown = JSON.parse(row.installedConnectors);
    if (!Array.isArray(list)) return [];
    return list.flatMap((c: unknown) => {
      if (c === null || typeof c !== 'object') return [];
      const { connectorId, version } = c as Record<string, unknown>;
      return typeof connectorId === 'string'
        ? [{ connectorId, version: typeof version === 'string' ? version : '' }]
        : [];
    });
  } catch {
    return [];
  }
}

/** Names of the Solutions that use the Agent; a used Agent cannot be deleted (SPEC.md). */
export async function solutionsUsingAgent(db: Db, agentId: string): Promise<string[]> {
  return solutionNamesUsingAgent(db, agentId);
}

/** Renames an Agent: unique in the Organization, the Cloud Agent's name reserved and fixed. */
export async function renameAgent(db: Db, agent: AgentRow, name: string | undefined): Promise<AgentRow> {
  if (name === undefined || name === agent.name) return agent;
  if (agent.isCloudAgent === 1) {
    throw new FerryError('API_VALIDATION', `The Cloud Agent is always named ${CLOUD_AGENT_NAME}.`, {
      errors: [{ path: 'body.name', message: `must stay ${CLOUD_AGENT_NAME}` }],
    });
  }
  if (name.toLowerCase() === CLOUD_AGENT_NAME.toLowerCase()) {
    throw new FerryError('API_VALIDATION', `${CLOUD_AGENT_NAME} is the name of the Cloud Agent; choose another name.`, {
      errors: [{ path: 'body.name', message: 'reserved for the Cloud Agent' }],
    });
  }
  if (await agentNameTaken(db, agent.orgId, name, agent.id)) {
    throw new FerryError('API_DUPLICATE_NAME', `Another Agent of Organization ${agent.orgId} is named ${name}.`);
  }
  await updateAgent(db, agent.id, { name, nameKey: name.toLowerCase(), modifiedAt: nowIso() });
  return requireAgent(db, agent.orgId, agent.id);
}

/** Holds the Agent at its version, or releases it (`versionHold`); unchanged when absent. */
export async function holdVersion(db: Db, agent: AgentRow, hold: boolean | undefined): Promise<AgentRow> {
  if (hold === undefined || (agent.versionHold === 1) === hold) return agent;
  await updateAgent(db, agent.id, { versionHold: hold ? 1 : 0, modifiedAt: nowIso() });
  return requireAgent(db, agent.orgId, agent.id);
}

/**
 * Asks the Agent to restart; once it accepted it starts no new work, (interrupts or) waits for
 * running Solutions, then restarts. Answers the Agent's record with its new status.
 */
export async function restartAgent(
  deps: AgentDeps,
  agent: AgentRow,
  restartNow: boolean,
  log: FastifyBaseLogger,
): Promise<AgentRow> {
  const { db } = deps.store;
  await deps.agents.commands.send(agent.id, { type: 'restart', restartNow });
  await updateAgent(db, agent.id, { status: 'WaitingToRestartAgentUserRequest', modifiedAt: nowIso() });
  log.info({ agentId: agent.id, restartNow }, 'agent restart requested');
  const updated = await getAgentById(db, agent.id);
  if (!updated)
    throw new FerryError('API_NOT_FOUND', `Agent ${agent.id} was not found in Organization ${agent.orgId}.`);
  return updated;
}

/** Deletes an Agent that no Solution uses (SPEC.md); see {@link retireAgent}. */
export async function deleteUnusedAgent(deps: AgentDeps, agent: AgentRow, log: FastifyBaseLogger): Promise<void> {
  const usedIn = await solutionsUsingAgent(deps.store.db, agent.id);
  if (usedIn.length > 0) {
    throw new FerryError(
      'API_IN_USE',
      `Agent ${agent.name} is used by the Solutions ${usedIn.join(', ')}; move them to another Agent first.`,
    );
  }
  await retireAgent(deps, agent, log);
}

/**
 * Removes an Agent for good: stops its Cloud Agent process, deletes its record, closes its channel
 * (close 4404, so the Agent stops instead of reconnecting) and deletes its log archives.
 */
export async function retireAgent(deps: AgentDeps, agent: AgentRow, log: FastifyBaseLogger): Promise<void> {
  const { db } = deps.store;
  const runtime = deps.agents;
  if (agent.isCloudAgent === 1) await runtime.cloudAgents.remove(agent.id);
  const logIds = await listAgentLogIds(db, agent.id);
  await deleteAgent(db, agent.id);
  runtime.commands.disconnect(agent.id, CLOSE.agentDeleted, 'agent deleted');
  await Promise.all(
    logIds.map((id) =>
      runtime.logArchives.remove(id).catch((err: unknown) => log.warn({ err, logId: id }, 'log archive not removed')),
    ),
  );
}

const cloudExists = (orgId: number): FerryError =>
  new FerryError(
    'AGT_CLOUD_AGENT_EXISTS',
    `Organization ${orgId} already has its Cloud Agent (at most one per Organization).`,
  );

/** Creates the Organization's Cloud Agent (at most one) and starts its process beside the Service. */
export async function provisionCloudAgent(deps: AgentDeps, orgId: number, log: FastifyBaseLogger): Promise<AgentRow> {
  const { db } = deps.store;
  const runtime = deps.agents;
  if (!runtime.cloudAgents.enabled) {
    throw new FerryError(
      'AGT_CLOUD_AGENTS_OFF',
      'This Service runs no Cloud Agents (FERRY_CLOUD_AGENTS=off); install an On-Premise Agent instead.',
    );
  }
  if (await getCloudAgent(db, orgId)) throw cloudExists(orgId);
  const now = nowIso();
  const row: NewAgentRow = {
    id: newId(),
    orgId,
    name: CLOUD_AGENT_NAME,
    nameKey: CLOUD_AGENT_NAME.toLowerCase(),
    machineName: os.hostname(),
    serviceName: '',
    isCloudAgent: 1,
    isUpdating: 0,
    status: 'Unknown',
    lastContactTime: null,
    lastShutdownTime: null,
    lastStartTime: null,
    version: null,
    installedConnectors: '[]',
    secretHash: null,
    fingerprint: null,
    createdAt: now,
    modifiedAt: now,
  };
  let agent: AgentRow;
  try {
    agent = await insertAgent(db, row);
  } catch (err) {
    // Two calls at once: the unique index lets one through.
    if (await getCloudAgent(db, orgId)) throw cloudExists(orgId);
    throw err;
  }
  runtime.cloudAgents.start(agent.id);
  log.info({ orgId, agentId: agent.id }, 'cloud agent provisioned');
  return agent;
}
