import type { FastifyBaseLogger } from 'fastify';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';
import type { PreconnectCommand, TestConnectionCommand } from '../../src/protocol/channel.js';
import { encryptProperty } from '../crypto/connection-crypto.js';
import { completeConnectionTest, insertConnectionTest, pruneConnectionTests } from '../store/repos/connections.repo.js';
import type { ConnectionCommandKind, ConnectionTestRow, OrgRow } from '../store/schema.js';
import { newId, nowIso } from '../util/values.js';
import { requireAgent } from './agent-model.js';
import { cryptoTokenOf } from './connection-model.js';
import type { ServiceDeps } from './deps.js';
import type { TestStatus } from './schemas/connection.schema.js';

/** Test and preconnect results are kept this long after they were requested. */
const RETENTION_MS = 24 * 60 * 60 * 1000;

type Command = Omit<TestConnectionCommand, 'id'> | Omit<PreconnectCommand, 'id'>;

/**
 * Records a Requested command (a Connection test or a Connector's preconnect step), sends it to
 * the Agent and answers with the commandId at once; the Agent's reply completes the record
 * (SUCCESS or the plugin's reply, or the error's message; properties the plugin answered with are
 * kept sealed). An Agent that is not connected fails the request itself (409 AGT_NOT_CONNECTED).
 */
export async function startConnectionCommand(
  deps: ServiceDeps,
  log: FastifyBaseLogger,
  orgId: number,
  agentId: string,
  what: { kind: ConnectionCommandKind; connectionId: string | null; name: string },
  command: Command,
): Promise<{ commandId: string }> {
  const { db } = deps.store;
  const agent = await requireAgent(db, orgId, agentId);
  if (!deps.agents.commands.isConnected(agent.id)) {
    throw new FerryError('AGT_NOT_CONNECTED', `Agent ${agent.name} is not connected; start it (or wait until its status is Running) and try again.`, { details: { agentId: agent.id } });
  }
  const id = newId();
  await pruneConnectionTests(db, new Date(Date.now() - RETENTION_MS).toISOString());
  await insertConnectionTest(db, { id, orgId, agentId: agent.id, connectionId: what.connectionId, name: what.name, status: 'Requested', reply: null, requestedAt: nowIso(), completedAt: null, kind: what.kind });
  log.info({ commandId: id, kind: what.kind, agentId: agent.id, connectionId: what.connectionId, connectorId: command.connectorId }, `${what.kind} requested`);
  void deps.agents.commands
    .send(agent.id, command)
    .then(
      (result) => outcome(deps, result),
      (err: unknown) => ({ reply: failure(err), replyData: null }),
    )
    .then(({ reply, replyData }) => completeConnectionTest(db, id, reply, nowIso(), replyData))
    .catch((err: unknown) => log.error({ err, commandId: id }, `${what.kind} result not stored`));
  return { commandId: id };
}

/** The API model of a stored test or preconnect; replyData values encrypted with the crypto token. */
export function commandStatus(deps: Pick<ServiceDeps, 'secrets'>, org: OrgRow, row: ConnectionTestRow): TestStatus {
  let replyData: Array<{ key: string; value: string }> = [];
  if (row.replyData) {
    const token = cryptoTokenOf(deps.secrets, org);
    const plain = JSON.parse(deps.secrets.open(row.replyData)) as Record<string, string>;
    replyData = Object.entries(plain).map(([key, value]) => ({ key, value: encryptProperty(value, token) }));
  }
  return { id: row.id, commandId: row.id, name: row.name, status: row.status, reply: row.reply, replyData };
}

/** A testConnection reply is `{ok: true}`; a preconnect reply is the plugin's PreconnectResult. */
function outcome(deps: Pick<ServiceDeps, 'secrets'>, result: unknown): { reply: string; replyData: string | null } {
  const r = result !== null && typeof result === 'object' ? (result as { reply?: unknown; properties?: unknown; authorizationUrl?: unknown }) : {};
  const data: Record<string, string> = {};
  if (r.properties !== null && typeof r.properties === 'object') {
    for (const [k, v] of Object.entries(r.properties as Record<string, unknown>)) if (typeof v === 'string') data[k] = v;
  }
  if (typeof r.authorizationUrl === 'string') data['authorizationUrl'] = r.authorizationUrl;
  return { reply: typeof r.reply === 'string' ? r.reply : 'SUCCESS', replyData: Object.keys(data).length > 0 ? deps.secrets.seal(JSON.stringify(data)) : null };
}

/** The reply of a failed command: the Agent's own message when it answered, else why it did not. */
function failure(err: unknown): string {
  if (isFerryError(err)) {
    const agentMessage = err.details?.agentMessage;
    return typeof agentMessage === 'string' ? agentMessage : err.message;
  }
  return err instanceof Error ? err.message : String(err);
}
