import type { FastifyBaseLogger, FastifyRequest } from 'fastify';
import { FerryError } from '../../src/errors/ferry-error.js';
import { authenticateAgent } from '../auth/agent-auth.js';
import { AgentStatus } from '../../src/protocol/agent-status.js';
import { CLOSE } from '../../src/protocol/channel.js';
import { listAgentLogIds } from '../store/repos/agent-logs.repo.js';
import type { ServiceConfig } from '../config.js';
import { deleteAgent, getAgent } from '../store/repos/agents.repo.js';
import type { Db } from '../store/sql.js';
import type { AgentRow } from '../store/schema.js';
import { fromFlag } from '../util/values.js';
import type { ServiceDeps } from './deps.js';
import type { Agent } from './schemas/agent.schema.js';

/**
 * Bearer authentication of the Agent-facing HTTP routes (log upload, package download): an
 * `onRequest` hook that checks `Authorization: Bearer <agentId>.<secret>` before the body is read,
 * and `agentOf` for the handler.
 */
export function agentBearer(db: Db): { onRequest: (req: FastifyRequest) => Promise<void>; agentOf: (req: FastifyRequest) => AgentRow } {
  const agents = new WeakMap<FastifyRequest, AgentRow>();
  return {
    onRequest: async (req) => {
      const agent = await authenticateAgent(db, req.headers.authorization);
      if (!agent) throw new FerryError('AGT_UNAUTHORIZED', 'Send Authorization: Bearer <agentId>.<secret> with the credentials the Agent received at registration.');
      agents.set(req, agent);
    },
    agentOf: (req) => {
      const agent = agents.get(req);
      if (!agent) throw new FerryError('AGT_UNAUTHORIZED', 'Agent credentials are required.');
      return agent;
    },
  };
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

/**
 * The API model of an Agent. `connected`: whether its channel is open to this Service now
 * (`CommandBus.isConnected`, the same source that decides AGT_NOT_CONNECTED for commands).
 */
export function toAgent(row: AgentRow, connected: boolean, usedInSolutions: readonly string[] = []): Agent {
  return {
    id: row.id,
    name: row.name,
    machineName: row.machineName,
    serviceName: row.serviceName,
    isCloudAgent: fromFlag(row.isCloudAgent),
    isUpdating: fromFlag(row.isUpdating),
    status: shownStatus(row.status, connected),
    isConnected: connected,
    lastContactTime: row.lastContactTime,
    lastShutdownTime: row.lastShutdownTime,
    lastStartTime: row.lastStartTime,
    version: row.version,
    installedConnectors: installedConnectors(row),
    usedInSolutions: usedInSolutions.join(', '),
  };
}

export function installedConnectors(row: Pick<AgentRow, 'installedConnectors'>): Array<{ connectorId: string; version: string }> {
  try {
    const list: unknown = JSON.parse(row.installedConnectors);
    if (!Array.isArray(list)) return [];
    return list.flatMap((c: unknown) => {
      if (c === null || typeof c !== 'object') return [];
      const { connectorId, version } = c as Record<string, unknown>;
      return typeof connectorId === 'string' ? [{ connectorId, version: typeof version === 'string' ? version : '' }] : [];
    });
  } catch {
    return [];
  }
}

/**
 * Names of the Solutions that use the Agent; a used Agent cannot be deleted (SPEC.md). Solutions
 * do not exist yet: the Solutions issue fills this in with a query on its table.
 */
export async function solutionsUsingAgent(_db: Db, _agentId: string): Promise<string[]> {
  return [];
}

export async function requireAgent(db: Db, orgId: number, agentId: string): Promise<AgentRow> {
  const agent = await getAgent(db, orgId, agentId);
  if (!agent) throw new FerryError('API_NOT_FOUND', `Agent ${agentId} was not found in Organization ${orgId}.`);
  return agent;
}

const HOST_RE = /^[A-Za-z0-9.-]{1,253}(:\d{1,5})?$|^\[[0-9A-Fa-f:.]{2,45}\](:\d{1,5})?$/;

/**
 * The Service's base URL for links it hands out (installer, package): FERRY_PUBLIC_URL, else the
 * scheme and host the request came in on. The host is checked, because it ends up in a script.
 */
export function serviceBaseUrl(req: FastifyRequest, config: ServiceConfig): string {
  if (config.publicUrl) return config.publicUrl.replace(/\/+$/, '');
  const host = req.host;
  if (!HOST_RE.test(host)) {
    throw new FerryError('API_VALIDATION', 'The Host header is not a host name; call the Service by its name or address, or set FERRY_PUBLIC_URL.', {
      errors: [{ path: 'header.host', message: 'not a host name' }],
    });
  }
  return `${req.protocol === 'https' ? 'https' : 'http'}://${host}`;
}

/**
 * Removes an Agent for good: stops its Cloud Agent process, deletes its record, closes its channel
 * (close 4404, so the Agent stops instead of reconnecting) and deletes its log archives.
 */
export async function retireAgent(deps: Pick<ServiceDeps, 'store' | 'agents'>, agent: AgentRow, log: FastifyBaseLogger): Promise<void> {
  const { db } = deps.store;
  if (agent.isCloudAgent === 1) await deps.agents.cloudAgents.remove(agent.id);
  const logIds = await listAgentLogIds(db, agent.id);
  await deleteAgent(db, agent.id);
  deps.agents.commands.disconnect(agent.id, CLOSE.agentDeleted, 'agent deleted');
  await Promise.all(logIds.map((id) => deps.agents.logArchives.remove(id).catch((err: unknown) => log.warn({ err, logId: id }, 'log archive not removed'))));
}
