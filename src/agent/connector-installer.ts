import { randomBytes } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import type { Logger } from 'pino';
import type { ConnectorHost } from '../connectors/host.js';
import { sharedModulesDir, unpackFiles, writeFiles } from '../connectors/package.js';
import { downloadPackage } from './package-download.js';
import { FerryError, isFerryError, toErrorData } from '../errors/ferry-error.js';
import type {
  InstallConnectorCommand,
  InstalledConnector,
  ReportBody,
  UninstallConnectorCommand,
} from '../protocol/channel.js';
import { ConnectorManifest } from '../protocol/connector-manifest.js';
import type { StatusMachine } from './status.js';
import type { WorkRegistry } from './work.js';

export interface ConnectorInstallerDeps {
  /** The Agent's connectors folder: one sub-folder per installed plugin. */
  readonly dir: string;
  readonly host: () => Promise<ConnectorHost>;
  readonly work: WorkRegistry;
  readonly status: StatusMachine;
  readonly log: Logger;
  /** Hands a report to the durable outbox. */
  readonly report: (body: ReportBody) => void;
  /** `Bearer <agentId>.<secret>` for the package download. */
  readonly authorization: string;
  /** Download time-out; default 5 minutes. */
  readonly downloadTimeoutMs?: number;
}

const PAUSE = 'updating a connector';

/**
 * Installs, upgrades and uninstalls Connector plugins on this Agent, one operation at a time:
 *
 *   installConnector ─▶ download (bearer) ─▶ SHA-256 ─▶ unpack into connectors/<name>-<version>-<rand>/
 *        ─▶ [another version loaded: WaitingToUpdateConnector until running work ends, UpdatingConnector]
 *        ─▶ host.load(replace) ─▶ old folder removed ─▶ report Installed (or InstallFailed, old version kept)
 *
 * Packaged plugins import Ferry's own dependencies; the connectors folder holds a `node_modules`
 * link to the Agent's, through which Node resolves them.
 */
export class ConnectorInstaller {
  #queue: Promise<void> = Promise.resolve();

  constructor(private readonly deps: ConnectorInstallerDeps) {}

  /** Tidies the connectors folder before the plugins load: leftovers of interrupted installs, older duplicates, the modules link. */
  prepare(): void {
    const { dir, log } = this.deps;
    fs.mkdirSync(dir, { recursive: true });
    linkSharedModules(dir, log);
    const newest = new Map<string, { folder: string; version: string; mtime: number }>();
    for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
      const folder = path.join(dir, entry.name);
      if (entry.name.startsWith('.incoming-')) {
        fs.rmSync(folder, { recursive: true, force: true });
        continue;
      }
      if (!entry.isDirectory()) continue;
      const m = readManifestSync(folder);
      if (!m) continue;
      const id = m.id.toLowerCase();
      const mtime = fs.statSync(folder).mtimeMs;
      const seen = newest.get(id);
      if (!seen) {
        newest.set(id, { folder, version: m.version, mtime });
        continue;
      }
      // Two folders of one Connector: an upgrade was interrupted after unpacking. Keep the newer folder.
      const [keep, drop] =
        mtime >= seen.mtime
          ? [{ folder, version: m.version, mtime }, seen]
          : [seen, { folder, version: m.version, mtime }];
      log.warn(
        { connectorId: id, kept: keep.folder, removed: drop.folder },
        'two folders of one connector; keeping the newer',
      );
      fs.rmSync(drop.folder, { recursive: true, force: true });
      newest.set(id, keep);
    }
  }

  /** The installed plugins, from their manifests. */
  installed(): InstalledConnector[] {
    return installedConnectors(this.deps.dir, this.deps.log);
  }

  /** Queues an install; progress and outcome are reported. Resolves when it is done (tests wait on it). */
  install(command: InstallConnectorCommand): Promise<void> {
    return this.#enqueue(() => this.#install(command));
  }

  /** Queues an uninstall; its outcome is reported. */
  uninstall(command: UninstallConnectorCommand): Promise<void> {
    return this.#enqueue(() => this.#uninstall(command));
  }

  #enqueue(job: () => Promise<void>): Promise<void> {
    const next = this.#queue.then(job, job);
    this.#queue = next.catch(() => undefined);
    return next;
  }

  #report(
    command: { connectorId: string },
    operation: 'install' | 'uninstall',
    version: string,
    status: 'AgentDownloadingConnectorUpdate' | 'InstallFailed' | 'Installed',
    error?: unknown,
  ): void {
    this.deps.report({
      kind: 'connectorInstall',
      operation,
      connectorId: command.connectorId,
      version,
      status,
      ...(error !== undefined ? { error: toErrorData(asFerry(error)) } : {}),
      installed: this.installed(),
    });
  }

  async #install(command: InstallConnectorCommand): Promise<void> {
    const { dir, log } = this.deps;
    const clog = log.child({ connectorId: command.connectorId, version: command.version });
    let incoming: string | undefined;
    let target: string | undefined;
    try {
      const host = await this.deps.host();
      clog.info({ name: command.name }, 'installing a connector');
      this.#report(command, 'install', command.version, 'AgentDownloadingConnectorUpdate');
      const data = await this.#download(command);
      const files = unpackFiles(data);
      const manifestFile = files.find((f) => f.name === 'manifest.json');
      const manifest = manifestFile ? ConnectorManifest.safeParse(safeJson(manifestFile.data)) : undefined;
      if (!manifest?.success)
        throw new FerryError('CON_PACKAGE_INVALID', 'The Connector package has no valid manifest.json.', {
          details: { connectorId: command.connectorId },
        });
      if (
        manifest.data.id.toLowerCase() !== command.connectorId.toLowerCase() ||
        manifest.data.version !== command.version
      ) {
        throw new FerryError(
          'CON_PACKAGE_INVALID',
          `The package holds ${manifest.data.name} ${manifest.data.version} (${manifest.data.id}), not the ${command.version} of ${command.connectorId} that was asked for.`,
          {
            details: { connectorId: command.connectorId, version: command.version },
          },
        );
      }
      linkSharedModules(dir, log);
      incoming = path.join(dir, `.incoming-${randomBytes(4).toString('hex')}`);
      await writeFiles(incoming, files);
      target = path.join(
        dir,
        `${folderName(manifest.data.name)}-${manifest.data.version}-${randomBytes(3).toString('hex')}`,
      );
      fs.renameSync(incoming, target);
      incoming = undefined;

      const previous = host.loadedOf(command.connectorId);
      await this.#whenIdle(previous !== undefined, async () => {
        await host.load(target as string, { replace: true });
      });
      if (previous && previous.folder !== target) fs.rmSync(previous.folder, { recursive: true, force: true });
      // Other folders of the same Connector (a failed earlier load) go too.
      for (const other of foldersOf(dir, command.connectorId))
        if (other !== target) fs.rmSync(other, { recursive: true, force: true });
      clog.info({ replaced: previous?.manifest.version }, 'connector installed');
      this.#report(command, 'install', command.version, 'Installed');
    } catch (err) {
      if (incoming) fs.rmSync(incoming, { recursive: true, force: true });
      if (target) fs.rmSync(target, { recursive: true, force: true });
      const e = asFerry(err);
      clog.warn({ code: e.code, err: { message: e.message } }, 'connector install failed');
      this.#report(command, 'install', command.version, 'InstallFailed', e);
    }
  }

  async #uninstall(command: UninstallConnectorCommand): Promise<void> {
    const { dir, log } = this.deps;
    const folders = foldersOf(dir, command.connectorId);
    const version = folders.map((f) => readManifestSync(f)?.version).find((v) => v !== undefined) ?? '';
    try {
      const host = await this.deps.host();
      await this.#whenIdle(host.loadedOf(command.connectorId) !== undefined, async () => {
        host.unload(command.connectorId);
      });
      for (const f of folders) fs.rmSync(f, { recursive: true, force: true });
      log.info({ connectorId: command.connectorId, version }, 'connector uninstalled');
      this.#report(command, 'uninstall', version, 'Installed');
    } catch (err) {
      this.#report(command, 'uninstall', version, 'InstallFailed', err);
    }
  }

  /**
   * Runs `fn` once no work runs, when `wait` (a loaded plugin is replaced or removed): new work is
   * refused meanwhile, and the Agent's status says so (WaitingToUpdateConnector → UpdatingConnector).
   */
  async #whenIdle(wait: boolean, fn: () => Promise<void>): Promise<void> {
    if (!wait) return fn();
    const { work, status, log } = this.deps;
    work.pause(PAUSE);
    try {
      if (work.count > 0) {
        status.move('WaitingToUpdateConnector', 'a connector update waits for running work');
        log.info({ runningWork: work.count }, 'connector update: waiting for running work');
        await work.idle();
      }
      status.move('UpdatingConnector', 'updating a connector');
      await fn();
    } finally {
      work.resume(PAUSE);
      status.move('Running', 'connector update done');
    }
  }

  #download(command: InstallConnectorCommand): Promise<Buffer> {
    return downloadPackage({
      url: command.packageUrl,
      authorization: this.deps.authorization,
      size: command.size,
      sha256: command.sha256,
      timeoutMs: this.deps.downloadTimeoutMs ?? 300_000,
      what: 'Connector package',
    });
  }
}

/** The Connector plugins in the connectors folder, from their manifests. */
export function installedConnectors(dir: string, log: Logger): InstalledConnector[] {
  const out: InstalledConnector[] = [];
  let entries: fs.Dirent[] = [];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return out;
  }
  for (const entry of entries) {
    if (!entry.isDirectory() || entry.name.startsWith('.')) continue;
    const m = readManifestSync(path.join(dir, entry.name));
    if (m) out.push({ connectorId: m.id, version: m.version });
    else log.debug({ name: entry.name }, 'skipping a connectors entry without a readable manifest');
  }
  return out.slice(0, 1000);
}

function foldersOf(dir: string, connectorId: string): string[] {
  const key = connectorId.toLowerCase();
  let entries: fs.Dirent[] = [];
  try {
    entries = fs.readdirSync(dir, { withFileTypes: true });
  } catch {
    return [];
  }
  return entries
    .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
    .map((e) => path.join(dir, e.name))
    .filter((f) => readManifestSync(f)?.id.toLowerCase() === key);
}

function readManifestSync(folder: string): { id: string; version: string } | undefined {
  try {
    const m = JSON.parse(fs.readFileSync(path.join(folder, 'manifest.json'), 'utf8')) as {
      id?: unknown;
      version?: unknown;
    };
    return typeof m.id === 'string' && typeof m.version === 'string' ? { id: m.id, version: m.version } : undefined;
  } catch {
    return undefined;
  }
}

/** `connectors/node_modules` → the Agent's node_modules, so that packaged plugins find Ferry's dependencies. */
function linkSharedModules(dir: string, log: Logger): void {
  const shared = sharedModulesDir();
  if (!shared) {
    log.warn(
      "the Agent's node_modules folder was not found; packaged connectors that import shared modules will not load",
    );
    return;
  }
  const link = path.join(dir, 'node_modules');
  try {
    if (fs.readlinkSync(link) === shared) return;
    fs.rmSync(link, { force: true });
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') fs.rmSync(link, { recursive: true, force: true });
  }
  fs.symlinkSync(shared, link, process.platform === 'win32' ? 'junction' : 'dir');
}

function folderName(name: string): string {
  return (
    name
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-|-$/g, '') || 'connector'
  );
}

function safeJson(data: Buffer): unknown {
  try {
    return JSON.parse(data.toString('utf8'));
  } catch {
    return undefined;
  }
}

function asFerry(err: unknown): FerryError {
  if (isFerryError(err)) return err;
  return new FerryError('CON_LOAD_FAILED', err instanceof Error ? err.message : String(err), { cause: err });
}
