import fs from 'node:fs/promises';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Logger } from 'pino';
import { protectedProperties, type ConnectorManifest } from '../protocol/connector-manifest.js';
import { FerryError, isFerryError, toErrorData, type ErrorData } from '../errors/ferry-error.js';
import { readManifest, resolveModule } from './manifest.js';
import { MetadataCache } from './metadata-cache.js';
import { satisfies } from './semver.js';
import { guardCall, type CallOptions, type CallScope } from './guard.js';
import { HostConnection, type WriteObserver } from './connection.js';
import { SDK_VERSION, type ConnectionProperties, type ConnectorPlugin, type PreconnectResult } from './sdk.js';

/**
 * The plugin host: loads the Connector plugins of a folder, checks their manifests and versions,
 * and hands out {@link HostConnection}s whose every call is contained (see `guard.ts`).
 *
 *   connectors/<folder>/manifest.json ──zod──▶ version check ──▶ import(main) ──▶ default export
 *        │ any failure: recorded in failures(), logged, the other plugins load on
 *        ▼
 *   host.open({connectorId, connectionId, properties}) ──▶ plugin.connect() ──▶ HostConnection
 *        test / metadata (cached per connectionId) / query / write / nativeQuery / ensureEntity
 *
 * Isolation is in-process (docs/connectors.md "Isolation"): load-time and call-time failures are
 * contained, but a plugin that blocks the event loop (an endless synchronous loop) or corrupts
 * shared process state is not.
 */

export interface ConnectorHostOptions {
  /** The folder holding one sub-folder per plugin. */
  dir: string;
  /** The root (or Agent) logger; the host adds `component: 'connectors'`. */
  log: Logger;
  /** The Agent's version, checked against a manifest's `agentVersion`. */
  agentVersion?: string;
  /** The SDK version offered to plugins; default {@link SDK_VERSION} (tests vary it). */
  sdkVersion?: string;
  /** How long a plugin module may take to load; default 10 s. */
  loadTimeoutMs?: number;
  /** Default time-outs of calls per verb, in ms; a call's own `timeoutMs` wins. */
  timeouts?: Partial<
    Record<'preconnect' | 'connect' | 'test' | 'metadata' | 'write' | 'ensureEntity' | 'disconnect', number>
  >;
  /** Told of every plugin write call of every connection (the Agent's metrics). */
  onWrite?: WriteObserver | undefined;
}

/** A plugin that loaded. */
export interface LoadedConnector {
  folder: string;
  manifest: ConnectorManifest;
}

/** A plugin folder that did not load, and why. */
export interface LoadFailure {
  folder: string;
  /** Present when the manifest could be read. */
  connectorId?: string;
  name?: string;
  error: ErrorData;
}

interface Loaded extends LoadedConnector {
  plugin: ConnectorPlugin;
}

/** What {@link ConnectorHost.open} needs. */
export interface OpenRequest {
  /** Connector id (GUID) or name. */
  connectorId: string;
  connectionId: string;
  properties: ConnectionProperties;
  /**
   * The logger of the work the connection is opened for (a Solution run's): the connection's
   * lines are its children, so they carry its fields (`solutionId`, `runId`). Default: the host's.
   */
  log?: Logger | undefined;
}

const DEFAULT_TIMEOUTS = {
  preconnect: 60_000,
  connect: 60_000,
  test: 60_000,
  metadata: 600_000,
  write: 600_000,
  ensureEntity: 600_000,
  disconnect: 30_000,
};

export class ConnectorHost {
  readonly metadataCache = new MetadataCache();
  private readonly log: Logger;
  private readonly loaded = new Map<string, Loaded>();
  private readonly failed: LoadFailure[] = [];
  private readonly open_ = new Set<HostConnection>();
  private readonly timeouts: typeof DEFAULT_TIMEOUTS;

  constructor(private readonly opts: ConnectorHostOptions) {
    this.log = opts.log.child({ component: 'connectors' });
    this.timeouts = { ...DEFAULT_TIMEOUTS, ...opts.timeouts };
  }

  /** The SDK version this host offers. */
  get sdkVersion(): string {
    return this.opts.sdkVersion ?? SDK_VERSION;
  }

  /**
   * Loads every plugin folder of the connectors folder. Never throws for a plugin's fault: each
   * failure is in the returned report (and in {@link failures}).
   */
  async loadAll(): Promise<{ loaded: LoadedConnector[]; failed: LoadFailure[] }> {
    let names: string[];
    try {
      const entries = await fs.readdir(this.opts.dir, { withFileTypes: true });
      names = entries
        .filter((e) => e.isDirectory() && !e.name.startsWith('.'))
        .map((e) => e.name)
        .sort();
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') names = [];
      else throw err;
    }
    const loaded: LoadedConnector[] = [];
    const failed: LoadFailure[] = [];
    for (const name of names) {
      const folder = path.join(this.opts.dir, name);
      try {
        loaded.push(await this.load(folder));
      } catch (err) {
        failed.push(this.failures().find((f) => f.folder === folder) ?? { folder, error: toErrorData(asFerry(err)) });
      }
    }
    return { loaded, failed };
  }

  /**
   * Loads one plugin folder; throws a `CON_` FerryError (also recorded in {@link failures}). With
   * `replace`, a loaded plugin of the same id from another folder (an earlier version) is replaced
   * once the new one has loaded; its open connections keep working until they close.
   */
  async load(folder: string, opts: { replace?: boolean } = {}): Promise<LoadedConnector> {
    let manifest: ConnectorManifest | undefined;
    try {
      manifest = await readManifest(folder);
      const m = manifest;
      if (!satisfies(this.sdkVersion, m.sdkVersion)) {
        throw new FerryError(
          'CON_VERSION_UNSUPPORTED',
          `The ${m.name} connector ${m.version} needs SDK ${m.sdkVersion}; this Agent offers SDK ${this.sdkVersion}.`,
          {
            details: { folder, connectorId: m.id, sdkVersion: m.sdkVersion, offered: this.sdkVersion },
          },
        );
      }
      if (m.agentVersion && this.opts.agentVersion && !satisfies(this.opts.agentVersion, m.agentVersion)) {
        throw new FerryError(
          'CON_VERSION_UNSUPPORTED',
          `The ${m.name} connector ${m.version} needs Agent ${m.agentVersion}; this Agent is ${this.opts.agentVersion}.`,
          {
            details: { folder, connectorId: m.id, agentVersion: m.agentVersion, offered: this.opts.agentVersion },
          },
        );
      }
      const other = this.loaded.get(m.id);
      if (other && other.folder !== folder && !opts.replace) {
        throw new FerryError(
          'CON_DUPLICATE',
          `The ${m.name} connector in ${folder} has the same id as the one in ${other.folder}.`,
          { details: { folder, connectorId: m.id } },
        );
      }
      const plugin = await this.importPlugin(folder, m);
      const entry: Loaded = { folder, manifest: m, plugin };
      this.loaded.set(m.id, entry);
      this.forgetFailure(folder);
      this.log.info({ connector: m.name, connectorId: m.id, version: m.version, folder }, 'connector loaded');
      return { folder, manifest: m };
    } catch (err) {
      const e = asFerry(err);
      this.forgetFailure(folder);
      this.failed.push({
        folder,
        ...(manifest ? { connectorId: manifest.id, name: manifest.name } : {}),
        error: toErrorData(e),
      });
      const fields = { folder, code: e.code, err: { message: e.message, details: e.details, errors: e.errors } };
      if (e.kind === 'system') this.log.error(fields, 'connector not loaded');
      else this.log.warn(fields, 'connector not loaded');
      throw e;
    }
  }

  private async importPlugin(folder: string, m: ConnectorManifest): Promise<ConnectorPlugin> {
    const file = await resolveModule(folder, m.main);
    const timeoutMs = this.opts.loadTimeoutMs ?? 10_000;
    let timer: NodeJS.Timeout | undefined;
    let mod: { default?: unknown };
    try {
      mod = await Promise.race([
        import(pathToFileURL(file).href) as Promise<{ default?: unknown }>,
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new Error(`loading took longer than ${timeoutMs} ms`)), timeoutMs);
        }),
      ]);
    } catch (err) {
      throw new FerryError(
        'CON_LOAD_FAILED',
        `The ${m.name} connector's module failed to load: ${err instanceof Error ? err.message : String(err)}`,
        {
          details: { folder, connectorId: m.id },
          cause: err,
        },
      );
    } finally {
      clearTimeout(timer);
    }
    const plugin = mod.default as Partial<ConnectorPlugin> | undefined;
    if (!plugin || typeof plugin !== 'object' || typeof plugin.connect !== 'function') {
      throw new FerryError(
        'CON_LOAD_FAILED',
        `The ${m.name} connector's module has no default export with a connect function.`,
        { details: { folder, connectorId: m.id } },
      );
    }
    return plugin as ConnectorPlugin;
  }

  private forgetFailure(folder: string): void {
    const i = this.failed.findIndex((f) => f.folder === folder);
    if (i >= 0) this.failed.splice(i, 1);
  }

  /** Forgets a loaded plugin (uninstall): new connections to it fail with CON_NOT_FOUND; open ones finish. */
  unload(connectorId: string): LoadedConnector | undefined {
    const key = connectorId.toLowerCase();
    for (const [id, l] of this.loaded) {
      if (id.toLowerCase() === key) {
        this.loaded.delete(id);
        this.log.info(
          { connector: l.manifest.name, connectorId: l.manifest.id, version: l.manifest.version },
          'connector unloaded',
        );
        return { folder: l.folder, manifest: l.manifest };
      }
    }
    return undefined;
  }

  /** The loaded plugin of a Connector id, if any. */
  loadedOf(connectorId: string): LoadedConnector | undefined {
    const key = connectorId.toLowerCase();
    const l = [...this.loaded.values()].find((x) => x.manifest.id.toLowerCase() === key);
    return l ? { folder: l.folder, manifest: l.manifest } : undefined;
  }

  /** The plugins that loaded. */
  list(): LoadedConnector[] {
    return [...this.loaded.values()].map(({ folder, manifest }) => ({ folder, manifest }));
  }

  /** The plugin folders that failed to load. */
  failures(): LoadFailure[] {
    return [...this.failed];
  }

  /** A loaded plugin by id or name (case-insensitive); `CON_UNAVAILABLE` if it failed to load, else `CON_NOT_FOUND`. */
  manifest(idOrName: string): ConnectorManifest {
    return this.find(idOrName).manifest;
  }

  private find(idOrName: string): Loaded {
    const key = idOrName.toLowerCase();
    const hit =
      this.loaded.get(idOrName) ??
      [...this.loaded.values()].find(
        (l) => l.manifest.id.toLowerCase() === key || l.manifest.name.toLowerCase() === key,
      );
    if (hit) return hit;
    const failure = this.failed.find((f) => f.connectorId?.toLowerCase() === key || f.name?.toLowerCase() === key);
    if (failure) {
      throw new FerryError(
        'CON_UNAVAILABLE',
        `The ${failure.name ?? idOrName} connector failed to load: ${failure.error.message}`,
        { details: { connectorId: failure.connectorId, cause: failure.error } },
      );
    }
    throw new FerryError('CON_NOT_FOUND', `No connector ${idOrName} is installed on this Agent.`, {
      details: { connectorId: idOrName },
    });
  }

  private scope(
    l: Loaded,
    verb: string,
    properties: ConnectionProperties,
    connectionId?: string,
    parent?: Logger,
  ): CallScope {
    const secrets = protectedProperties(l.manifest)
      .map((p) => properties[p])
      .filter((v): v is string => typeof v === 'string' && v.length > 0);
    const bindings = connectionId ? { connector: l.manifest.name, connectionId } : { connector: l.manifest.name };
    const redact = protectedProperties(l.manifest).flatMap((p) => [p, `*.${p}`, `*.*.${p}`]);
    // A caller's logger keeps its own `component` (pino would repeat the key, not replace it).
    const log = (parent ?? this.log).child(bindings, redact.length ? { redact } : {});
    return { connector: l.manifest.name, verb, ...(connectionId ? { connectionId } : {}), secrets, log };
  }

  /** Runs the plugin's preconnect step (a form check, or an OAuth step). */
  async preconnect(
    connectorId: string,
    properties: ConnectionProperties,
    opts: CallOptions = {},
  ): Promise<PreconnectResult> {
    const l = this.find(connectorId);
    const scope = this.scope(l, 'preconnect', properties);
    const pre = l.plugin.preconnect?.bind(l.plugin);
    if (!pre) return { reply: 'SUCCESS' };
    const res = await guardCall(scope, { timeoutMs: this.timeouts.preconnect, ...opts }, (ctx) =>
      pre({ ...properties }, ctx),
    );
    if (!res || typeof res.reply !== 'string') {
      throw new FerryError(
        'CON_PROTOCOL_VIOLATION',
        `The ${l.manifest.name} connector's preconnect returned no reply.`,
        { details: { connector: l.manifest.name } },
      );
    }
    return res;
  }

  /** Opens a connection; close it with {@link HostConnection.close}. */
  async open(req: OpenRequest, opts: CallOptions = {}): Promise<HostConnection> {
    const l = this.find(req.connectorId);
    const scope = this.scope(l, 'connect', req.properties, req.connectionId, req.log);
    const session = await guardCall(scope, { timeoutMs: this.timeouts.connect, ...opts }, (ctx) =>
      l.plugin.connect({ ...req.properties }, ctx),
    );
    if (
      !session ||
      typeof session.query !== 'function' ||
      typeof session.write !== 'function' ||
      typeof session.metadata !== 'function'
    ) {
      throw new FerryError(
        'CON_PROTOCOL_VIOLATION',
        `The ${l.manifest.name} connector's connect did not return a session.`,
        { details: { connector: l.manifest.name } },
      );
    }
    // One redacting logger per connection (pino compiles redaction once); calls add their verb.
    const base = this.scope(l, 'connection', req.properties, req.connectionId, req.log);
    const conn = new HostConnection({
      manifest: l.manifest,
      connectionId: req.connectionId,
      properties: req.properties,
      session,
      scope: (verb) => ({ ...base, verb }),
      cache: this.metadataCache,
      timeouts: this.timeouts,
      onClose: (c) => this.open_.delete(c),
      onWrite: this.opts.onWrite,
    });
    this.open_.add(conn);
    return conn;
  }

  /** Opens, tests and closes a connection (the "test connection" command). */
  async testConnection(req: OpenRequest, opts: CallOptions = {}): Promise<void> {
    const conn = await this.open(req, opts);
    try {
      await conn.test(opts);
    } finally {
      await conn.close();
    }
  }

  /** Forgets the cached metadata of a Connection; the next metadata call reloads it. */
  reloadMetadata(connectionId: string): void {
    this.metadataCache.invalidate(connectionId);
  }

  /** Closes every open connection (Agent shutdown). */
  async close(): Promise<void> {
    await Promise.allSettled([...this.open_].map((c) => c.close()));
  }
}

function asFerry(err: unknown): FerryError {
  if (isFerryError(err)) return err;
  return new FerryError('CON_LOAD_FAILED', err instanceof Error ? err.message : String(err), { cause: err });
}
