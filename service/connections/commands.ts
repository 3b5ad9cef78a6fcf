import type { FastifyBaseLogger } from 'fastify';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';
import type { CommandResult } from '../../src/protocol/commands.js';
import type { AgentCommand, AgentCommands } from '../agents/commands.js';
import { agentError } from '../gateway/agent-command.js';
import { requireAgent } from '../agents/agents.js';
import type { SecretBox } from '../crypto/master-key.js';
import type { ConnectorInstalls } from '../marketplace/installs.js';
import {
  completeConnectionTest,
  getConnectionTest,
  insertConnectionTest,
  pruneConnectionTests,
  setLastTestedAgent,
} from '../store/repos/connections.repo.js';
import type { ConnectionCommandKind, ConnectionRow, ConnectionTestRow, OrgRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { newId, nowIso } from '../util/values.js';
import { connectorOfInput } from './connections.js';
import {
  cryptoTokenOf,
  openProperties,
  preconnectProperties,
  resolveProperties,
  type PropertyInput,
} from './properties.js';

/** Test and preconnect results are kept this long after they were requested. */
const RETENTION_MS = 24 * 60 * 60 * 1000;

type Command = AgentCommand<'testConnection' | 'preconnect'>;

export interface ConnectionCommandsOptions {
  readonly db: Db;
  readonly secrets: SecretBox;
  readonly commands: AgentCommands;
  readonly marketplace: ConnectorInstalls;
}

/**
 * Connection tests and Connector preconnect steps run on an Agent: each is recorded Requested,
 * sent, and answered with its commandId at once; the Agent's reply completes the record (SUCCESS
 * or the plugin's reply, or the error's message; properties the plugin answered with are kept
 * sealed). An Agent that is not connected fails the request itself (409 AGT_NOT_CONNECTED).
 */
export class ConnectionCommands {
  constructor(private readonly opts: ConnectionCommandsOptions) {}

  async start(
    log: FastifyBaseLogger,
    orgId: number,
    agentId: string,
    what: { kind: ConnectionCommandKind; connectionId: string | null; name: string },
    command: Command,
  ): Promise<{ commandId: string }> {
    const { db, commands } = this.opts;
    const agent = await requireAgent(db, orgId, agentId);
    commands.requireConnected(agent);
    const id = newId();
    await pruneConnectionTests(db, new Date(Date.now() - RETENTION_MS).toISOString());
    await insertConnectionTest(db, {
      id,
      orgId,
      agentId: agent.id,
      connectionId: what.connectionId,
      name: what.name,
      status: 'Requested',
      reply: null,
      requestedAt: nowIso(),
      completedAt: null,
      kind: what.kind,
    });
    log.info(
      {
        commandId: id,
        kind: what.kind,
        agentId: agent.id,
        connectionId: what.connectionId,
        connectorId: command.connectorId,
      },
      `${what.kind} requested`,
    );
    void commands
      .send(agent.id, command)
      .then(
        (result) => this.#outcome(result),
        (err: unknown) => ({ reply: failure(err), replyData: null }),
      )
      .then(async ({ reply, replyData }) => {
        await completeConnectionTest(db, id, reply, nowIso(), replyData);
        if (what.kind === 'test' && what.connectionId !== null && reply === 'SUCCESS')
          await setLastTestedAgent(db, what.connectionId, agent.id);
      })
      .catch((err: unknown) => log.error({ err, commandId: id }, `${what.kind} result not stored`));
    return { commandId: id };
  }

  /** Tests a Connection model a client sent, without saving it. */
  async testModel(
    log: FastifyBaseLogger,
    org: OrgRow,
    agentId: string,
    input: { name: string; connectorId: string; properties?: PropertyInput },
  ): Promise<{ commandId: string }> {
    const manifest = connectorOfInput(this.opts.marketplace.catalogue, input.connectorId);
    const properties = resolveProperties(manifest, input.properties, cryptoTokenOf(this.opts.secrets, org));
    return this.start(
      log,
      org.id,
      agentId,
      { kind: 'test', connectionId: null, name: input.name },
      { type: 'testConnection', connectorId: manifest.id, properties },
    );
  }

  /** Tests a saved Connection on an Agent. */
  async testSaved(
    log: FastifyBaseLogger,
    org: OrgRow,
    agentId: string,
    row: ConnectionRow,
  ): Promise<{ commandId: string }> {
    return this.start(
      log,
      org.id,
      agentId,
      { kind: 'test', connectionId: row.id, name: row.name },
      { type: 'testConnection', connectorId: row.connectorId, properties: openProperties(this.opts.secrets, row) },
    );
  }

  /**
   * Runs the preconnect step (form check or OAuth start) of a Connector installed in the
   * Organization on an Agent; answers the recorded command, still Requested.
   */
  async preconnect(
    log: FastifyBaseLogger,
    org: OrgRow,
    agentId: string,
    connectorId: string,
    isOauth: boolean,
    input: NonNullable<PropertyInput>,
  ): Promise<ConnectionTestRow> {
    const { manifest } = await this.opts.marketplace.requireInstalled(org.id, connectorId);
    const properties = preconnectProperties(manifest, input, cryptoTokenOf(this.opts.secrets, org));
    const { commandId } = await this.start(
      log,
      org.id,
      agentId,
      { kind: 'preconnect', connectionId: null, name: manifest.name },
      { type: 'preconnect', connectorId: manifest.id, isOauth, properties },
    );
    return this.get(org.id, commandId, 'preconnect', `Preconnect ${commandId} was not found.`);
  }

  /** A recorded test or preconnect of the Organization; 404 naming `what` otherwise. */
  async get(
    orgId: number,
    commandId: string,
    kind: ConnectionCommandKind,
    notFound: string,
  ): Promise<ConnectionTestRow> {
    const row = await getConnectionTest(this.opts.db, orgId, commandId, kind);
    if (!row) throw new FerryError('API_NOT_FOUND', notFound);
    return row;
  }

  /** A testConnection reply is `{ok: true}`; a preconnect reply is the plugin's PreconnectResult. */
  #outcome(result: CommandResult<'testConnection' | 'preconnect'>): { reply: string; replyData: string | null } {
    if (!result) return { reply: 'SUCCESS', replyData: null };
    const data: Record<string, string> = {};
    for (const [k, v] of Object.entries(result.properties ?? {})) if (typeof v === 'string') data[k] = v;
    if (result.authorizationUrl !== undefined) data['authorizationUrl'] = result.authorizationUrl;
    return {
      reply: result.reply ?? 'SUCCESS',
      replyData: Object.keys(data).length > 0 ? this.opts.secrets.seal(JSON.stringify(data)) : null,
    };
  }
}

/** The reply of a failed command: the Agent's own message when it answered, else why it did not. */
function failure(err: unknown): string {
  if (isFerryError(err)) {
    return agentError(err)?.message ?? err.message;
  }
  return err instanceof Error ? err.message : String(err);
}
