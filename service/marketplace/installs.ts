import type { FastifyBaseLogger } from 'fastify';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';
import type { ReportBody } from '../../src/protocol/channel.js';
import type { ConnectorManifest } from '../../src/protocol/connector-manifest.js';
import { installedConnectors, requireAgent } from '../agents/agents.js';
import type { AgentCommands } from '../agents/commands.js';
import { agentError } from '../gateway/agent-command.js';
import { getAgentById, listAgents } from '../store/repos/agents.repo.js';
import { listSubscriptions } from '../store/repos/subscriptions.repo.js';
import {
  advanceAgentInstall,
  deleteAgentInstall,
  deleteOrgConnector,
  getOrgConnector,
  listInstallsOfAgent,
  listOrgConnectors,
  putAgentInstall,
  timeOutInstalls,
  updateOrgConnectorLock,
  upsertOrgConnector,
} from '../store/repos/connector-installs.repo.js';
import type { Db } from '../store/sql.js';
import type { AgentRow, OrgConnectorRow } from '../store/schema.js';
import type { Store } from '../store/store.js';
import { nowIso } from '../util/values.js';
import { canUse } from './access.js';
import type { ConnectorCatalogue } from './catalogue.js';
import type { ConnectorPackage, PackageStore } from './package-store.js';

/** A failed install is retried at the Agent's next connection only after this long. */
const RETRY_FAILED_AFTER_MS = 10 * 60_000;

/** A Connector as an Organization sees it. */
export interface OrgConnector {
  manifest: ConnectorManifest;
  /** The installed (or locked) version; the catalogue's current one when not installed. */
  version: string;
  /** Whether the Organization has as many Connections of it as its Subscriptions allow. */
  connectionLimitReached: boolean;
}

/** Which of an Organization's installed Connectors to list. */
export interface OrgConnectorFilter {
  /** Only those installed on this Agent of the Organization (404 when it is not one). */
  agentId?: string | undefined;
  /** Only the one of this name (ignoring case). */
  name?: string | undefined;
}

export interface ConnectorInstallsOptions {
  store: Store;
  commands: AgentCommands;
  catalogue: ConnectorCatalogue;
  packages: PackageStore;
  log: FastifyBaseLogger;
  /** Unfinished installs older than this become InstallTimedOut (ms). */
  timeoutMs: number;
  /** Told after a Connector was installed in or uninstalled from an Organization (notification mails); its failure is logged. */
  onOrgConnectorChanged?: ((change: OrgConnectorChange) => Promise<void>) | undefined;
}

/** A Connector installed in or uninstalled from an Organization. */
export interface OrgConnectorChange {
  orgId: number;
  connectorId: string;
  connectorName: string;
  /** The installed version; absent on uninstall. */
  version?: string | undefined;
  operation: 'install' | 'uninstall';
  /** Who did it, when known. */
  by: string | null;
}

/**
 * Connectors in Organizations and on their Agents: the desired state is `org_connectors` (which
 * Connector at which version), the actual state is what each Agent reports; this class sends the
 * commands that close the gap and records the Marketplace install statuses on the way.
 *
 *   POST …/connectors/{id}/install ─▶ org_connectors ─▶ per Agent: SendingCommandToTheAgent
 *        ─ installConnector acknowledged ─▶ AgentReceivedCommand
 *        ─ report AgentDownloadingConnectorUpdate ─▶ … ─ report Installed | InstallFailed
 *        ─ nothing in time ─▶ InstallTimedOut (sweep)
 *   Agent connects (hello) ─▶ reconcile: install what it lacks or runs at another version, uninstall what the Organization removed
 */
export class ConnectorInstalls {
  #timer: NodeJS.Timeout | undefined;

  constructor(private readonly opts: ConnectorInstallsOptions) {}

  get catalogue(): ConnectorCatalogue {
    return this.opts.catalogue;
  }

  get packages(): PackageStore {
    return this.opts.packages;
  }

  /** The catalogue entry of a Connector the Organization may use; 404 otherwise (private Connectors are not revealed). */
  async requireUsable(orgId: number, connectorId: string): Promise<ConnectorManifest> {
    const m = this.opts.catalogue.get(connectorId);
    if (!m || !(await canUse(this.opts.store.db, orgId, m)))
      throw new FerryError('API_NOT_FOUND', `Connector ${connectorId} was not found.`);
    return m;
  }

  /** The Connectors installed in the Organization (those of the catalogue), by name. */
  async listInOrg(orgId: number, filter: OrgConnectorFilter = {}): Promise<OrgConnector[]> {
    let list = (await listOrgConnectors(this.opts.store.db, orgId)).flatMap((row) => {
      const m = this.opts.catalogue.get(row.connectorId);
      return m ? [{ m, row }] : [];
    });
    const { agentId, name } = filter;
    if (agentId !== undefined) {
      const installed = new Set(
        installedConnectors(await requireAgent(this.opts.store.db, orgId, agentId)).map((c) =>
          c.connectorId.toLowerCase(),
        ),
      );
      list = list.filter(({ m }) => installed.has(m.id.toLowerCase()));
    }
    if (name !== undefined) list = list.filter(({ m }) => m.name.toLowerCase() === name.toLowerCase());
    list.sort((a, b) => a.m.name.localeCompare(b.m.name) || a.m.id.localeCompare(b.m.id));
    const reached = await this.#limitReached(orgId);
    return list.map(({ m, row }) => orgConnector(m, row, reached));
  }

  /** A Connector the Organization may use, installed or not, as it sees it. */
  async getInOrg(orgId: number, connectorId: string): Promise<OrgConnector> {
    const m = await this.requireUsable(orgId, connectorId);
    const row = await getOrgConnector(this.opts.store.db, orgId, m.id);
    return orgConnector(m, row, await this.#limitReached(orgId));
  }

  /** An installed Connector (the answer of {@link installInOrg}) as the Organization sees it. */
  async seenBy(orgId: number, row: OrgConnectorRow): Promise<OrgConnector> {
    return orgConnector(this.opts.catalogue.require(row.connectorId), row, await this.#limitReached(orgId));
  }

  /** Whether the Organization reached its Connection limit for a Connector. */
  async #limitReached(orgId: number): Promise<(m: ConnectorManifest) => boolean> {
    const limit = await this.connectionLimit(orgId);
    const counts = await this.connectionCounts(orgId);
    return (m) => limit !== null && (counts.get(m.id.toLowerCase()) ?? 0) >= limit;
  }

  /** The installed Connector of an Organization; CON_NOT_INSTALLED otherwise. */
  async requireInstalled(
    orgId: number,
    connectorId: string,
  ): Promise<{ manifest: ConnectorManifest; row: OrgConnectorRow }> {
    const manifest = await this.requireUsable(orgId, connectorId);
    const row = await getOrgConnector(this.opts.store.db, orgId, manifest.id);
    if (!row) throw notInstalled(manifest);
    return { manifest, row };
  }

  /**
   * Installs the Connector in the Organization and sends it to every Agent (a Cloud Agent only
   * when the Connector supports it). A locked Connector is re-sent at its locked version.
   */
  async installInOrg(orgId: number, connectorId: string, by: string | null): Promise<OrgConnectorRow> {
    const { db } = this.opts.store;
    const m = await this.requireUsable(orgId, connectorId);
    const existing = await getOrgConnector(db, orgId, m.id);
    const version = existing?.isLocked === 1 ? existing.version : m.version;
    await this.opts.packages.get(m.id, version);
    await upsertOrgConnector(db, {
      orgId,
      connectorId: m.id,
      version,
      isLocked: existing?.isLocked ?? 0,
      installedAt: nowIso(),
      installedBy: by,
    });
    this.opts.log.info({ orgId, connectorId: m.id, version, by }, 'connector installed in the organization');
    await this.#changed({ orgId, connectorId: m.id, connectorName: m.name, version, operation: 'install', by });
    for (const agent of await listAgents(db, orgId)) {
      if (agent.isCloudAgent === 1 && !m.isCloudSupported) continue;
      await this.installOnAgent(agent, m, version);
    }
    const row = await getOrgConnector(db, orgId, m.id);
    if (!row) throw notInstalled(m);
    return row;
  }

  /** Uninstalls the Connector from the Organization and all its Agents; refused while Connections use it. */
  async uninstallFromOrg(orgId: number, connectorId: string, by: string | null = null): Promise<void> {
    const { db } = this.opts.store;
    const { manifest } = await this.requireInstalled(orgId, connectorId);
    const using = await db
      .selectFrom('connections')
      .select(['id', 'name'])
      .where('orgId', '=', orgId)
      .where('connectorId', 'in', [manifest.id, manifest.id.toLowerCase(), manifest.id.toUpperCase()])
      .execute();
    if (using.length > 0) {
      throw new FerryError(
        'CON_IN_USE',
        `The ${manifest.name} connector is used by ${using.length} Connection(s) (${using
          .slice(0, 5)
          .map((c) => c.name)
          .join(', ')}); delete them first.`,
        {
          details: { connectorId: manifest.id, connections: using.map((c) => c.id) },
        },
      );
    }
    await deleteOrgConnector(db, orgId, manifest.id);
    this.opts.log.info({ orgId, connectorId: manifest.id }, 'connector uninstalled from the organization');
    await this.#changed({ orgId, connectorId: manifest.id, connectorName: manifest.name, operation: 'uninstall', by });
    for (const agent of await listAgents(db, orgId)) await this.uninstallOnAgent(agent, manifest.id);
  }

  async #changed(change: OrgConnectorChange): Promise<void> {
    try {
      await this.opts.onOrgConnectorChanged?.(change);
    } catch (err) {
      this.opts.log.warn(
        { err, orgId: change.orgId, connectorId: change.connectorId },
        'connector change notification not queued',
      );
    }
  }

  /**
   * Locks the installed Connector at `version` — only the current production version, and not a
   * hotfix (only its vendor may lock that) — or unlocks it, which moves its Agents to the current
   * version. Answers the Organization's install after the change.
   */
  async setVersionLock(
    orgId: number,
    connectorId: string,
    lock: { isLocked: boolean; version: string },
    by: string,
  ): Promise<OrgConnectorRow> {
    const { db } = this.opts.store;
    const { manifest, row } = await this.requireInstalled(orgId, connectorId);
    const now = nowIso();
    if (lock.isLocked) {
      if (lock.version !== manifest.version || manifest.isHotFix) {
        throw new FerryError(
          'CON_VERSION_NOT_LOCKABLE',
          manifest.isHotFix
            ? `${manifest.name} ${manifest.version} is a hotfix version; only its vendor can lock it.`
            : `Only the current production version of ${manifest.name} (${manifest.version}) can be locked, not ${lock.version}.`,
          { details: { connectorId: manifest.id, current: manifest.version, requested: lock.version } },
        );
      }
      await updateOrgConnectorLock(db, orgId, manifest.id, {
        isLocked: 1,
        version: lock.version,
        lockCreatedAt: row.lockCreatedAt ?? now,
        lockModifiedAt: now,
        lockModifiedBy: by,
      });
    } else {
      await updateOrgConnectorLock(db, orgId, manifest.id, {
        isLocked: 0,
        version: row.version,
        lockCreatedAt: row.lockCreatedAt,
        lockModifiedAt: now,
        lockModifiedBy: by,
      });
      // Unlocked: the Agents move to the current version.
      if (row.version !== manifest.version) await this.installInOrg(orgId, manifest.id, by);
    }
    const updated = await getOrgConnector(db, orgId, manifest.id);
    if (!updated) throw new FerryError('API_NOT_FOUND', `Connector ${manifest.id} is no longer installed.`);
    return updated;
  }

  /** The package an Agent of the Organization downloads: of a Connector the Organization may use. */
  async packageFor(
    orgId: number,
    connectorId: string,
    version: string,
  ): Promise<{ manifest: ConnectorManifest; pkg: ConnectorPackage }> {
    const manifest = await this.requireUsable(orgId, connectorId);
    return { manifest, pkg: await this.opts.packages.get(manifest.id, version) };
  }

  /** Records and sends one install; a disconnected Agent gets it when it connects. */
  async installOnAgent(agent: AgentRow, m: ConnectorManifest, version: string): Promise<void> {
    const { db } = this.opts.store;
    const now = nowIso();
    await putAgentInstall(db, {
      agentId: agent.id,
      connectorId: m.id,
      orgId: agent.orgId,
      operation: 'install',
      version,
      status: 'SendingCommandToTheAgent',
      error: null,
      requestedAt: now,
      updatedAt: now,
    });
    if (!this.opts.commands.isConnected(agent.id)) return;
    let pkg;
    try {
      pkg = await this.opts.packages.get(m.id, version);
    } catch (err) {
      await advanceAgentInstall(db, agent.id, m.id, version, 'InstallFailed', messageOf(err), nowIso());
      return;
    }
    const packageUrl = `/v1/agent/connectors/${m.id.toLowerCase()}/${encodeURIComponent(version)}/package`;
    void this.opts.commands
      .send(agent.id, {
        type: 'installConnector',
        connectorId: m.id,
        name: m.name,
        version,
        sha256: pkg.sha256,
        size: pkg.size,
        packageUrl,
      })
      .then(
        () => advanceAgentInstall(db, agent.id, m.id, version, 'AgentReceivedCommand', null, nowIso()),
        // Not connected after all: it stays SendingCommandToTheAgent and is sent at the next hello.
        (err: unknown) =>
          isFerryError(err) && err.code === 'AGT_NOT_CONNECTED'
            ? false
            : advanceAgentInstall(db, agent.id, m.id, version, 'InstallFailed', messageOf(err), nowIso()),
      )
      .catch((err: unknown) =>
        this.opts.log.error({ err, agentId: agent.id, connectorId: m.id }, 'connector install status not stored'),
      );
  }

  async uninstallOnAgent(agent: AgentRow, connectorId: string): Promise<void> {
    const { db } = this.opts.store;
    const now = nowIso();
    await putAgentInstall(db, {
      agentId: agent.id,
      connectorId,
      orgId: agent.orgId,
      operation: 'uninstall',
      version: '',
      status: 'SendingCommandToTheAgent',
      error: null,
      requestedAt: now,
      updatedAt: now,
    });
    if (!this.opts.commands.isConnected(agent.id)) return;
    void this.opts.commands
      .send(agent.id, { type: 'uninstallConnector', connectorId })
      .then(
        () => advanceAgentInstall(db, agent.id, connectorId, '', 'AgentReceivedCommand', null, nowIso()),
        (err: unknown) =>
          isFerryError(err) && err.code === 'AGT_NOT_CONNECTED'
            ? false
            : advanceAgentInstall(db, agent.id, connectorId, '', 'InstallFailed', messageOf(err), nowIso()),
      )
      .catch((err: unknown) =>
        this.opts.log.error({ err, agentId: agent.id, connectorId }, 'connector uninstall status not stored'),
      );
  }

  /**
   * Brings a freshly connected Agent to its Organization's Connectors: installs what it lacks or
   * runs at another version, uninstalls what the Organization no longer has. A failed install of
   * the same version is retried only after a while, so a broken package does not loop.
   */
  async reconcile(agentId: string, known?: AgentRow): Promise<void> {
    const { db } = this.opts.store;
    const agent = known ?? (await getAgentById(db, agentId));
    if (!agent) return;
    const installed = new Map(
      parseInstalled(agent.installedConnectors).map((c) => [c.connectorId.toLowerCase(), c.version]),
    );
    const wanted = await listOrgConnectors(db, agent.orgId);
    // The Agent's install records, read only when it lacks something (an Agent up to date does not).
    let last: Map<string, Awaited<ReturnType<typeof listInstallsOfAgent>>[number]> | undefined;
    const now = Date.now();
    for (const w of wanted) {
      const m = this.opts.catalogue.get(w.connectorId);
      if (!m || (agent.isCloudAgent === 1 && !m.isCloudSupported)) continue;
      if (installed.get(w.connectorId.toLowerCase()) === w.version) continue;
      last ??= new Map((await listInstallsOfAgent(db, agent.id)).map((r) => [r.connectorId.toLowerCase(), r]));
      const prev = last.get(w.connectorId.toLowerCase());
      if (
        prev?.operation === 'install' &&
        prev.version === w.version &&
        prev.status === 'InstallFailed' &&
        now - Date.parse(prev.updatedAt) < RETRY_FAILED_AFTER_MS
      )
        continue;
      await this.installOnAgent(agent, m, w.version);
    }
    const wantedIds = new Set(wanted.map((w) => w.connectorId.toLowerCase()));
    for (const id of installed.keys()) if (!wantedIds.has(id)) await this.uninstallOnAgent(agent, id);
  }

  /**
   * The most Connections per Connector the Organization's current Subscriptions allow — its own,
   * or, when it has none, those of its nearest parent that has some — or null for no limit: the
   * largest limit of those Subscriptions wins, and one without a limit means no limit.
   */
  async connectionLimit(orgId: number, now: Date = new Date()): Promise<number | null> {
    const { db } = this.opts.store;
    const seen = new Set<number>();
    for (let id: number | null = orgId; id !== null && !seen.has(id);) {
      seen.add(id);
      const subs = await listSubscriptions(db, [id], { currentAt: now });
      if (subs.length > 0) {
        let limit = 0;
        for (const s of subs) {
          if (s.connectionsPerConnector === null) return null;
          limit = Math.max(limit, Number(s.connectionsPerConnector));
        }
        return limit;
      }
      const row: { parentId: number | null } | undefined = await db
        .selectFrom('orgs')
        .select('parentId')
        .where('id', '=', id)
        .executeTakeFirst();
      id = row?.parentId ?? null;
    }
    return null;
  }

  /** Connections of each Connector in the Organization (lower-cased Connector id → count). */
  async connectionCounts(orgId: number): Promise<Map<string, number>> {
    const rows = await this.opts.store.db
      .selectFrom('connections')
      .select(['connectorId'])
      .where('orgId', '=', orgId)
      .execute();
    const counts = new Map<string, number>();
    for (const r of rows) counts.set(r.connectorId.toLowerCase(), (counts.get(r.connectorId.toLowerCase()) ?? 0) + 1);
    return counts;
  }

  /** Refuses a new Connection when the Subscription's limit for the Connector is reached. */
  async checkConnectionLimit(orgId: number, m: ConnectorManifest): Promise<void> {
    const limit = await this.connectionLimit(orgId);
    if (limit === null) return;
    const count = (await this.connectionCounts(orgId)).get(m.id.toLowerCase()) ?? 0;
    if (count >= limit) {
      throw new FerryError(
        'CON_LIMIT_REACHED',
        `The Subscription allows ${limit} Connection(s) per Connector and ${m.name} has ${count}; delete one or extend the Subscription.`,
        {
          details: { connectorId: m.id, limit, count },
        },
      );
    }
  }

  /** Marks installs that took too long InstallTimedOut. */
  async sweep(nowMs: number = Date.now()): Promise<number> {
    const n = await timeOutInstalls(
      this.opts.store.db,
      new Date(nowMs - this.opts.timeoutMs).toISOString(),
      new Date(nowMs).toISOString(),
    );
    if (n > 0) this.opts.log.warn({ count: n }, 'connector installs timed out');
    return n;
  }

  start(intervalMs = 30_000): void {
    this.#timer ??= setInterval(() => {
      this.sweep().catch((err: unknown) => this.opts.log.error({ err }, 'connector install sweep failed'));
    }, intervalMs);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}

/**
 * Applies an Agent's connectorInstall report inside the report's transaction (the gateway's
 * handler for that kind, registered by the composition root).
 */
export async function applyInstallReport(
  db: Db,
  agent: Pick<AgentRow, 'id'>,
  report: Extract<ReportBody, { kind: 'connectorInstall' }>,
  now: string,
): Promise<void> {
  if (report.operation === 'uninstall') {
    if (report.status === 'Installed') await deleteAgentInstall(db, agent.id, report.connectorId);
    else
      await advanceAgentInstall(
        db,
        agent.id,
        report.connectorId,
        '',
        report.status,
        report.error?.message ?? null,
        now,
      );
    return;
  }
  await advanceAgentInstall(
    db,
    agent.id,
    report.connectorId,
    report.version,
    report.status,
    report.error?.message ?? null,
    now,
  );
}

function orgConnector(
  m: ConnectorManifest,
  row: OrgConnectorRow | undefined,
  limitReached: (m: ConnectorManifest) => boolean,
): OrgConnector {
  return { manifest: m, version: row?.version ?? m.version, connectionLimitReached: limitReached(m) };
}

function parseInstalled(json: string): Array<{ connectorId: string; version: string }> {
  try {
    const list: unknown = JSON.parse(json);
    return Array.isArray(list)
      ? (list as Array<{ connectorId: string; version: string }>).filter(
          (c) => typeof c?.connectorId === 'string' && typeof c.version === 'string',
        )
      : [];
  } catch {
    return [];
  }
}

function messageOf(err: unknown): string {
  if (isFerryError(err)) {
    return agentError(err)?.message ?? err.message;
  }
  return err instanceof Error ? err.message : String(err);
}

export function notInstalled(m: ConnectorManifest): FerryError {
  return new FerryError(
    'CON_NOT_INSTALLED',
    `The ${m.name} connector is not installed in this Organization; install it first (POST …/connectors/${m.id}/install).`,
    {
      details: { connectorId: m.id },
    },
  );
}
