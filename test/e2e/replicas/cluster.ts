/**
 * Service replicas as real child processes (`ferry service start`) on one PostgreSQL database,
 * behind a real HAProxy running the configuration shipped in installer/haproxy/haproxy.cfg (only
 * its addresses changed): what docs/deploy.md tells an operator to run.
 */
import { randomBytes } from 'node:crypto';
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { ADMIN, ROOT, adminRequest, ferry, until, type Proc, type ServiceUnderTest } from '../agent/harness.js';
import { createTestDatabase, withClient } from '../../helpers/stores.js';

/** Whether HAProxy is installed (`.ci/run` installs it; elsewhere the tests say they skip). */
export const HAS_HAPROXY = spawnSync('haproxy', ['-v']).status === 0;

/** Seconds a replica answers /readyz with 503 before it closes: above HAProxy's two failed checks 1 s apart. */
const DRAIN_DELAY_S = 3;

export interface Replica {
  readonly port: number;
  readonly dataDir: string;
  proc: Proc | undefined;
}

export interface Cluster {
  /** The load balancer's URL: what clients and Agents use. */
  readonly url: string;
  /** The cluster's temporary folder (the replicas' data folders are in it); removed by dispose. */
  readonly dir: string;
  readonly databaseUrl: string;
  readonly replicas: readonly Replica[];
  orgId: number;
  /** Starts replica `i` (again) on its port and data folder; resolves once it answers /readyz. */
  start(i: number): Promise<void>;
  /** SIGTERM (a drain): resolves with its exit code once it has exited. */
  stop(i: number): Promise<number | string>;
  /** kill -9. */
  kill(i: number): Promise<void>;
  /** Waits until HAProxy sends requests to replica `i` again (its checks passed). */
  inRotation(i: number): Promise<void>;
  /** Rows of the shared database. */
  query<T>(text: string, params?: unknown[]): Promise<T[]>;
  /** Takes replica `i` out of HAProxy's rotation (`disable`) or puts it back (`enable`), by its admin socket. */
  balance(i: number, action: 'enable' | 'disable'): Promise<void>;
  dispose(): Promise<void>;
}

async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as net.AddressInfo;
      s.close(() => resolve(port));
    });
  });
}

/** The shipped configuration with this test's addresses: the frontend's port and one server per replica. */
export function haproxyConfig(lbPort: number, statsSocket: string, ports: readonly number[]): string {
  const shipped = fs.readFileSync(path.join(ROOT, 'installer', 'haproxy', 'haproxy.cfg'), 'utf8');
  const servers = ports.map((p, i) => `    server replica-${i + 1} 127.0.0.1:${p} check`).join('\n');
  return shipped
    .replace(/^ {4}bind :\d+$/m, `    bind 127.0.0.1:${lbPort}`)
    .replace(/(^ {4}server replica-\d+ .*\n?)+/m, `${servers}\n`)
    .replace(/^global\n/m, `global\n    stats socket ${statsSocket} level admin\n`);
}

export async function startCluster(size: number, extraEnv: Record<string, string> = {}): Promise<Cluster> {
  const database = await createTestDatabase();
  const masterKey = randomBytes(32).toString('base64');
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-cluster-'));
  const replicas: Replica[] = [];
  for (let i = 0; i < size; i++) {
    const dataDir = path.join(dir, `replica-${i + 1}`);
    fs.mkdirSync(dataDir, { mode: 0o700 });
    replicas.push({ port: await freePort(), dataDir, proc: undefined });
  }
  const lbPort = await freePort();
  const statsSocket = path.join(dir, 'haproxy.sock');
  const cfg = path.join(dir, 'haproxy.cfg');
  fs.writeFileSync(
    cfg,
    haproxyConfig(
      lbPort,
      statsSocket,
      replicas.map((r) => r.port),
    ),
  );
  let haproxy: ChildProcess | undefined;

  const env = (r: Replica): Record<string, string> => ({
    FERRY_PORT: String(r.port),
    FERRY_HOST: '127.0.0.1',
    FERRY_DATA_DIR: r.dataDir,
    FERRY_DATABASE_URL: database.url,
    FERRY_MASTER_KEY: masterKey,
    FERRY_ADMIN_EMAIL: ADMIN.email,
    FERRY_ADMIN_PASSWORD: ADMIN.password,
    FERRY_BOOTSTRAP_ALLOW: '127.0.0.1-127.0.0.9,::1',
    FERRY_RATE_LIMIT_PER_MINUTE: '1000000',
    FERRY_RATE_LIMIT_PER_DAY: '100000000',
    FERRY_LOG_LEVEL: 'warn',
    FERRY_LOG_FORMAT: 'json',
    FERRY_CLOUD_AGENTS: 'off',
    FERRY_DRAIN_DELAY: String(DRAIN_DELAY_S),
    ...extraEnv,
  });

  /** One command on HAProxy's admin socket; resolves with its answer. */
  const admin = (command: string): Promise<string> =>
    new Promise<string>((resolve, reject) => {
      const sock = net.connect(statsSocket);
      let text = '';
      sock.on('data', (c) => (text += c.toString()));
      sock.on('end', () => resolve(text));
      sock.on('error', reject);
      sock.end(`${command}\n`);
    });

  /** HAProxy's view of a server: "UP", "DOWN", … (from its admin socket). */
  const serverState = async (i: number): Promise<string | undefined> => {
    const out = await admin('show servers state ferry_replicas');
    const line = out.split('\n').find((l) => l.split(' ')[3] === `replica-${i + 1}`);
    // Columns: be_id be_name srv_id srv_name srv_addr srv_op_state … (2 = running).
    return line?.split(' ')[5] === '2' ? 'UP' : line ? 'DOWN' : undefined;
  };

  const cluster: Cluster = {
    url: `http://127.0.0.1:${lbPort}`,
    dir,
    databaseUrl: database.url,
    replicas,
    orgId: 0,
    async start(i) {
      const r = replicas[i] as Replica;
      const proc = ferry(['service', 'start'], env(r));
      r.proc = proc;
      const m = await proc.waitFor(/Ferry Service listening on (http:\/\/\S+)[\s\S]*?Org:\s+(\d+)/, 120_000);
      cluster.orgId = Number(m[2]);
      await until('the replica ready', async () => {
        const res = await fetch(`http://127.0.0.1:${r.port}/readyz`);
        return res.status === 200 ? true : undefined;
      });
    },
    async stop(i) {
      const r = replicas[i] as Replica;
      const proc = r.proc;
      r.proc = undefined;
      return (await proc?.stop()) ?? 0;
    },
    async kill(i) {
      const r = replicas[i] as Replica;
      const proc = r.proc;
      r.proc = undefined;
      if (!proc) return;
      try {
        process.kill(-proc.pid, 'SIGKILL');
      } catch {
        // Already gone.
      }
      await proc.exited;
    },
    async inRotation(i) {
      await until('HAProxy to send requests to the replica', async () =>
        (await serverState(i)) === 'UP' ? true : undefined,
      );
    },
    async balance(i, action) {
      await admin(`${action} server ferry_replicas/replica-${i + 1}`);
    },
    async query<T>(text: string, params: unknown[] = []) {
      return withClient(database.url, async (c) => (await c.query(text, params)).rows as T[]);
    },
    async dispose() {
      for (let i = 0; i < replicas.length; i++) await cluster.kill(i);
      if (haproxy && haproxy.exitCode === null) {
        const gone = new Promise((r) => haproxy?.once('exit', r));
        haproxy.kill('SIGTERM');
        await gone;
      }
      await database.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };

  try {
    // One after the other: the first brings the schema up to date.
    for (let i = 0; i < size; i++) await cluster.start(i);
    // Its request log (one line per request, with how it ended) goes to FERRY_HAPROXY_LOG when set.
    const logTo = process.env['FERRY_HAPROXY_LOG'];
    haproxy = spawn('haproxy', ['-db', '-f', cfg], {
      stdio: ['ignore', logTo ? fs.openSync(logTo, 'w') : 'ignore', 'ignore'],
    });
    for (let i = 0; i < size; i++) await cluster.inRotation(i);
  } catch (err) {
    await cluster.dispose();
    throw err;
  }
  return cluster;
}

/**
 * The cluster as the one-Service helpers of test/e2e/agent and test/e2e/solutions take it: calls go
 * to the load balancer, or straight to replica `replica` when given (its port stays across
 * restarts); `dataDir` is the cluster's folder, so Agents installed by the helpers live in
 * `<dir>/agents` and go with dispose. The replicas are started and stopped one by one through the
 * cluster, and the store is PostgreSQL: `start`, `stop` and `query` (SQLite) throw; read the
 * store with `cluster.query`.
 */
export function clusterUnderTest(cluster: Cluster, replica?: number): ServiceUnderTest {
  const port = replica === undefined ? Number(new URL(cluster.url).port) : (cluster.replicas[replica] as Replica).port;
  const url = `http://127.0.0.1:${port}`;
  const unsupported = (what: string) => (): never => {
    throw new Error(`${what} is not one call on a cluster: use the Cluster's methods`);
  };
  return {
    dataDir: cluster.dir,
    url,
    port,
    get orgId() {
      return cluster.orgId;
    },
    service: undefined,
    start: unsupported('start'),
    stop: unsupported('stop'),
    request: (method, pathAndQuery, opts) => adminRequest(url, method, pathAndQuery, opts),
    query: unsupported('query (SQLite)'),
    dispose: unsupported('dispose'),
  };
}

/** The index of the running replica with ID `replicaId`: the one whose banner named it. */
export function replicaIndexOf(cluster: Cluster, replicaId: string): number {
  const i = cluster.replicas.findIndex((r) => r.proc?.output().includes(`Replica: ${replicaId}`));
  if (i < 0) throw new Error(`no running replica logged the ID ${replicaId}`);
  return i;
}

/**
 * The ID of the replica that agent_channels names as holding the Agent's channel, if any. A killed
 * replica's row stays until the Agent's next hello on another replica replaces it (or its lease
 * passes): callers that need a live holder check that it runs ({@link replicaIndexOf}).
 */
export async function holderOf(cluster: Cluster, agentId: string): Promise<string | undefined> {
  const [row] = await cluster.query<{ replica_id: string }>(
    'SELECT replica_id FROM agent_channels WHERE agent_id = $1',
    [agentId],
  );
  return row?.replica_id;
}
