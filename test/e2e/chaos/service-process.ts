/**
 * The Service as a real child process (`ferry service start`), so that a chaos trial can kill it
 * with SIGKILL and start it again on the same port and data folder. It answers the same
 * {@link ServiceUnderTest} as test/e2e/agent/harness.ts' in-process Service — its request() and
 * query() are that harness' own — so every helper written for that one works with this one.
 */
import { ADMIN, ferry, until, serviceUnderTest, type Proc, type ServiceUnderTest } from '../agent/harness.js';

/** A Service under test that runs in its own process group. */
export interface ServiceProcess extends ServiceUnderTest {
  /** The running `ferry service start`, or undefined while it is down. */
  proc: Proc | undefined;
  /** kill -9 of the Service (its whole process group); resolves once it has exited. */
  kill(): Promise<void>;
}

/**
 * The environment of the child: the test administrator, loopback only, rate limits lifted, no
 * Cloud Agents, the SQLite store in the data folder (a FERRY_DATABASE_URL of the caller is not
 * inherited), and heartbeats quick enough that an Agent's comings and goings show within seconds.
 */
function serviceEnv(dataDir: string, port: number): Record<string, string> {
  return {
    FERRY_PORT: String(port),
    FERRY_HOST: '127.0.0.1',
    FERRY_DATA_DIR: dataDir,
    FERRY_DATABASE_URL: '',
    FERRY_ADMIN_EMAIL: ADMIN.email,
    FERRY_ADMIN_PASSWORD: ADMIN.password,
    FERRY_BOOTSTRAP_ALLOW: '127.0.0.1-127.0.0.9,::1',
    FERRY_RATE_LIMIT_PER_MINUTE: '1000000',
    FERRY_RATE_LIMIT_PER_DAY: '100000000',
    FERRY_LOG_LEVEL: 'error',
    FERRY_LOG_FORMAT: 'json',
    FERRY_AGENT_HEARTBEAT_MS: '1000',
    FERRY_HEARTBEAT_LATE_AFTER: '10',
    FERRY_HEARTBEAT_FAILED_AFTER: '20',
    FERRY_AGENT_CHANNEL_TIMEOUT: '10',
    FERRY_CLOUD_AGENTS: 'off',
  };
}

export function serviceProcess(): ServiceProcess {
  const base = serviceUnderTest();
  const sut = base as ServiceProcess;
  sut.proc = undefined;
  sut.start = async () => {
    const proc = ferry(['service', 'start'], serviceEnv(sut.dataDir, sut.port));
    sut.proc = proc;
    const m = await proc.waitFor(/Ferry Service listening on (http:\/\/\S+)[\s\S]*?Org:\s+(\d+)/, 120_000);
    sut.url = m[1] as string;
    sut.port = Number(new URL(sut.url).port);
    sut.orgId = Number(m[2]);
    await until(
      'the Service answering',
      async () => ((await sut.request('GET', `/v1/orgs/${sut.orgId}`)).status === 200 ? true : undefined),
      30_000,
    );
  };
  sut.stop = async () => {
    const proc = sut.proc;
    sut.proc = undefined;
    await proc?.stop();
  };
  sut.kill = async () => {
    const proc = sut.proc;
    sut.proc = undefined;
    if (!proc) return;
    try {
      process.kill(-proc.pid, 'SIGKILL');
    } catch {
      // Already gone.
    }
    await proc.exited;
  };
  return sut;
}
