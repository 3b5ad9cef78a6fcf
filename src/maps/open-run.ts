/**
 * Opening a Map run: what `ferry map run` does before runMap, without a terminal, so that the
 * Agent's Solution runners (which do not exist yet) can open a run the same way with the Agent's
 * Connector host.
 *
 *   Map model ──▶ open the Connections its Blocks name ──▶ load their metadata ──▶ compilePlan
 *             ──▶ the failed-record store (when asked) ──▶ RunHandle { plan, connections, failures }
 *
 * A step that fails closes what the steps before it opened; otherwise the caller runs the plan
 * (runMap(handle.plan, { connections: handle.connections, failures: handle.failures, … })) and
 * then calls close(). This is the composition step of the Maps engine: it imports the compiler
 * and the runtime; neither imports it.
 */
import type { Logger } from 'pino';
import type { HostConnection } from '../connectors/connection.js';
import { ConnectorHost } from '../connectors/host.js';
import type { ConnectionMetadata, ConnectionProperties } from '../connectors/sdk.js';
import { FailedRecordStore } from '../failures/store.js';
import { walkBlocks, type MapModel } from '../protocol/map.js';
import { compilePlan, type MapPlan } from './compiler/plan.js';

/** A Connection to open: its Connector (id or name) and properties. */
export interface ConnectionSpec {
  /** None: the Connection stays closed and the validator reports MAP_CONNECTION_NOT_FOUND. */
  connector?: string | undefined;
  properties?: ConnectionProperties | undefined;
}

/** The Connector host the Connections are opened with. */
export type HostChoice =
  /** A loaded host (the Agent's): close() closes only the Connections opened here. */
  | { host: ConnectorHost }
  /** A host of the run's own, loaded from a folder of Connector plugins: close() closes it. */
  | { connectorsDir: string; log: Logger };

export type OpenConnectionsOptions = HostChoice & {
  /** The Connections by connectionId. */
  connections: Readonly<Record<string, ConnectionSpec | undefined>>;
  /** The run's logger (a Solution run's): the Connections' lines carry its fields. */
  runLog?: Logger | undefined;
};

export interface OpenConnections {
  readonly connections: ReadonlyMap<string, HostConnection>;
  /** Connection metadata by connectionId. */
  readonly metadata: Readonly<Record<string, ConnectionMetadata>>;
  close(): Promise<void>;
}

export type OpenRunOptions = OpenConnectionsOptions & {
  /** A folder for the local failed-record store (SQLite): the failed source records kept for reprocessing. */
  failuresDir?: string | undefined;
};

export interface RunHandle extends OpenConnections {
  readonly model: MapModel;
  readonly plan: MapPlan;
  /** The failed-record store when `failuresDir` was given: the run's RunOptions.failures. */
  readonly failures: FailedRecordStore | undefined;
}

/** The connectionIds the Blocks of a Map name. */
export function connectionIdsOf(model: MapModel): Set<string> {
  return new Set([...walkBlocks(model.blocks)].map((b) => b.connectionId).filter((x): x is string => !!x));
}

/** Opens the given Connections and loads their metadata. */
export async function openConnections(ids: Iterable<string>, opts: OpenConnectionsOptions): Promise<OpenConnections> {
  const own = 'host' in opts ? undefined : new ConnectorHost({ dir: opts.connectorsDir, log: opts.log });
  const host = 'host' in opts ? opts.host : (own as ConnectorHost);
  const connections = new Map<string, HostConnection>();
  const metadata: Record<string, ConnectionMetadata> = {};
  const close = async (): Promise<void> => {
    if (own) await own.close();
    else await Promise.allSettled([...connections.values()].map((c) => c.close()));
  };
  try {
    await own?.loadAll();
    for (const id of ids) {
      const spec = opts.connections[id];
      if (!spec?.connector) continue;
      const conn = await host.open({
        connectorId: spec.connector,
        connectionId: id,
        properties: spec.properties ?? {},
        log: opts.runLog,
      });
      connections.set(id, conn);
      metadata[id] = await conn.metadata();
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { connections, metadata, close };
}

/**
 * Opens a run of the Map (already upgraded to the current model): its Connections, their
 * metadata, the compiled plan (MAP_INVALID with details.results when the Map has errors) and the
 * failed-record store.
 */
export async function openRun(model: MapModel, opts: OpenRunOptions): Promise<RunHandle> {
  const opened = await openConnections(connectionIdsOf(model), opts);
  let plan: MapPlan;
  let failures: FailedRecordStore | undefined;
  try {
    plan = compilePlan(model, opened.metadata);
    failures = opts.failuresDir ? new FailedRecordStore(opts.failuresDir) : undefined;
  } catch (err) {
    await opened.close();
    throw err;
  }
  const store = failures;
  return {
    model,
    plan,
    connections: opened.connections,
    metadata: opened.metadata,
    failures: store,
    async close() {
      store?.close();
      await opened.close();
    },
  };
}
