import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import { sha256, unpackFiles } from '../../src/connectors/package.js';
import { compareVersion } from '../../src/connectors/semver.js';
import { FerryError } from '../../src/errors/ferry-error.js';
import { OBSOLETE_STATUS } from '../../src/protocol/agent-status.js';
import type { Db } from '../store/sql.js';
import { getAgentById, updateAgent } from '../store/repos/agents.repo.js';
import type { AgentRow } from '../store/schema.js';
import { nowIso } from '../util/values.js';
import type { AgentCommands } from './commands.js';

/** An Agent version the Service offers: one `ferry-agent-<version>.tgz` of its packages folder. */
export interface AgentPackage {
  readonly version: string;
  readonly file: string;
  readonly sha256: string;
  readonly size: number;
}

/**
 * The Agent packages of a folder. A package is read once (its version from `package/package.json`,
 * its SHA-256) and kept while its file's size and modification time stay the same, so an operator
 * publishes a version by copying its package into the folder, with no restart.
 */
export class AgentPackages {
  readonly #cache = new Map<string, { key: string; pkg: AgentPackage | undefined }>();

  constructor(readonly dir: string) {}

  list(): AgentPackage[] {
    let names: string[];
    try {
      names = fs.readdirSync(this.dir).filter((n) => n.endsWith('.tgz'));
    } catch {
      return [];
    }
    const out: AgentPackage[] = [];
    for (const name of names) {
      const file = path.join(this.dir, name);
      let stat: fs.Stats;
      try {
        stat = fs.statSync(file);
      } catch {
        continue;
      }
      const key = `${stat.size}:${stat.mtimeMs}`;
      let seen = this.#cache.get(file);
      if (seen?.key !== key) {
        seen = { key, pkg: readPackage(file) };
        this.#cache.set(file, seen);
      }
      if (seen.pkg) out.push(seen.pkg);
    }
    return out.sort((a, b) => compareVersion(a.version, b.version) ?? 0);
  }

  /** The newest version offered, if any. */
  newest(): AgentPackage | undefined {
    return this.list().at(-1);
  }

  get(version: string): AgentPackage | undefined {
    return this.list().find((p) => p.version === version);
  }
}

function readPackage(file: string): AgentPackage | undefined {
  try {
    const data = fs.readFileSync(file);
    const manifest = unpackFiles(data).find((f) => f.name === 'package/package.json');
    const pkg = manifest ? (JSON.parse(manifest.data.toString('utf8')) as { name?: unknown; version?: unknown }) : {};
    if (
      pkg.name !== 'ferry' ||
      typeof pkg.version !== 'string' ||
      compareVersion(pkg.version, pkg.version) === undefined
    )
      return undefined;
    return { version: pkg.version, file, sha256: sha256(data), size: data.length };
  } catch {
    return undefined;
  }
}

export interface AgentUpdatesDeps {
  readonly db: Db;
  readonly commands: Pick<AgentCommands, 'send'>;
  readonly packages: AgentPackages;
  /** Agents older than this are Obsolete and not updated. */
  readonly obsoleteBelow?: string | undefined;
  readonly log: Logger;
  /** The Agents whose channel this process holds: a version published while they run reaches them within `checkMs`. */
  readonly connectedHere?: () => readonly string[];
  /** How often the connected Agents are checked against the versions offered; default one minute. */
  readonly checkMs?: number;
}

/**
 * Which Agents update to which version (docs/agents.md "Updates"):
 *
 *   hello ─▶ connected(): too old ─▶ Obsolete, install new Agent
 *                         came back on the version it was updating to ─▶ update done
 *                         older than the newest package, not held, that version not failed on it,
 *                         no update under way ─▶ updateAgent (isUpdating, updateVersion)
 *   POST …/agents/{id}/update [version] ─▶ updateAgent, also while held or after a failure
 *   report agentUpdate Failed / RolledBack ─▶ updateError, updateFailedVersion (agent-state.ts)
 */
export class AgentUpdates {
  #timer: NodeJS.Timeout | undefined;
  #checking: Promise<void> | undefined;

  constructor(private readonly deps: AgentUpdatesDeps) {}

  /** Checks the Agents connected here now and then, so that a newly published version reaches them without a restart. */
  start(): void {
    if (!this.deps.connectedHere || this.#timer) return;
    this.#timer = setInterval(() => {
      this.#checking ??= this.#checkConnected().finally(() => (this.#checking = undefined));
    }, this.deps.checkMs ?? 60_000);
    this.#timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.#timer);
    this.#timer = undefined;
    await this.#checking;
  }

  async #checkConnected(): Promise<void> {
    const offer = this.deps.packages.newest();
    if (!offer) return;
    for (const agentId of this.deps.connectedHere?.() ?? []) {
      const agent = await getAgentById(this.deps.db, agentId).catch(() => undefined);
      if (agent?.status === 'Running') await this.connected(agent, false).catch(() => undefined);
    }
  }

  /** The versions offered, oldest first. */
  get packages(): AgentPackage[] {
    return this.deps.packages.list();
  }

  packageOf(version: string): AgentPackage | undefined {
    return this.deps.packages.get(version);
  }

  /**
   * An Agent's hello was accepted, with its record as the hello left it (`hello`), or a periodic
   * check of an Agent connected here: marks an update done or over, or offers the newest version.
   */
  async connected(agent: AgentRow, hello = true): Promise<void> {
    const { db, log } = this.deps;
    if (this.#obsolete(agent)) {
      await updateAgent(db, agent.id, { status: OBSOLETE_STATUS, isUpdating: 0, modifiedAt: nowIso() });
      log.warn({ agentId: agent.id, version: agent.version }, 'agent too old to update itself: Obsolete');
      return;
    }
    if (agent.updateVersion !== null && agent.version === agent.updateVersion) {
      await updateAgent(db, agent.id, {
        isUpdating: 0,
        updateVersion: null,
        updateError: null,
        updateFailedVersion: null,
        modifiedAt: nowIso(),
      });
      log.info({ agentId: agent.id, version: agent.version }, 'agent updated');
      return;
    }
    if (agent.updateVersion !== null && hello) {
      // A new process on another version: the update is over without it (killed, rolled back). Its
      // report, when one follows, says why; the version is not offered to this Agent again meanwhile.
      await updateAgent(db, agent.id, {
        isUpdating: 0,
        updateVersion: null,
        updateFailedVersion: agent.updateVersion,
        updateError: `The Agent started again on ${agent.version ?? '?'} without ${agent.updateVersion}.`,
        modifiedAt: nowIso(),
      });
      log.warn(
        { agentId: agent.id, version: agent.version, wanted: agent.updateVersion },
        'agent update did not happen',
      );
      return;
    }
    const offer = this.deps.packages.newest();
    if (
      !offer ||
      agent.versionHold === 1 ||
      agent.updateVersion !== null ||
      agent.updateFailedVersion === offer.version ||
      agent.version === null ||
      (compareVersion(offer.version, agent.version) ?? 0) <= 0
    )
      return;
    try {
      await this.#send(agent, offer);
    } catch (err) {
      log.warn({ err, agentId: agent.id, version: offer.version }, 'agent update not sent');
    }
  }

  /** An operator's update: the named version, or the newest when newer than the Agent's. */
  async request(agent: AgentRow, version: string | undefined): Promise<AgentRow> {
    if (this.#obsolete(agent))
      throw new FerryError(
        'AGT_OBSOLETE',
        `Agent ${agent.id} runs ${agent.version ?? 'an unknown version'}, older than ${this.deps.obsoleteBelow ?? ''}: install a new Agent.`,
      );
    const offered = this.deps.packages.list();
    const pkg = version === undefined ? offered.at(-1) : offered.find((p) => p.version === version);
    const names = offered.map((p) => p.version).join(', ') || 'none';
    if (!pkg)
      throw new FerryError(
        'AGT_UPDATE_UNAVAILABLE',
        version === undefined
          ? 'This Service offers no Agent package to update to.'
          : `This Service offers no Agent package of version ${version} (offered: ${names}).`,
        { details: { offered: names } },
      );
    if (version === undefined) {
      if (agent.versionHold === 1)
        throw new FerryError(
          'AGT_VERSION_HELD',
          `Agent ${agent.id} is held at version ${agent.version ?? '?'}; name a version to update it anyway, or release the hold.`,
        );
      if (agent.version !== null && (compareVersion(pkg.version, agent.version) ?? 0) <= 0)
        throw new FerryError(
          'AGT_UPDATE_UNAVAILABLE',
          `Agent ${agent.id} runs ${agent.version}; the newest version offered is ${pkg.version}.`,
          { details: { offered: names } },
        );
    }
    await this.#send(agent, pkg);
    const row = await getAgentById(this.deps.db, agent.id);
    if (!row) throw new FerryError('API_NOT_FOUND', `Agent ${agent.id} was not found.`);
    return row;
  }

  /** Marks the update under way, then sends it: an outcome the Agent reports at once finds the mark to clear. */
  async #send(agent: AgentRow, pkg: AgentPackage): Promise<void> {
    const { db } = this.deps;
    await updateAgent(db, agent.id, {
      isUpdating: 1,
      updateVersion: pkg.version,
      updateError: null,
      updateFailedVersion: null,
      modifiedAt: nowIso(),
    });
    try {
      await this.deps.commands.send(agent.id, {
        type: 'updateAgent',
        version: pkg.version,
        sha256: pkg.sha256,
        size: pkg.size,
        packageUrl: `/v1/agent/packages/${encodeURIComponent(pkg.version)}`,
      });
    } catch (err) {
      await updateAgent(db, agent.id, {
        isUpdating: agent.isUpdating,
        updateVersion: agent.updateVersion,
        updateError: agent.updateError,
        updateFailedVersion: agent.updateFailedVersion,
        modifiedAt: nowIso(),
      });
      throw err;
    }
    this.deps.log.info({ agentId: agent.id, from: agent.version, to: pkg.version }, 'agent update sent');
  }

  #obsolete(agent: AgentRow): boolean {
    const floor = this.deps.obsoleteBelow;
    return floor !== undefined && agent.version !== null && (compareVersion(agent.version, floor) ?? 0) < 0;
  }
}
