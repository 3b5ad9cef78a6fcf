import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN, adminRequest, until, type AgentView, type ServiceUnderTest } from '../agent/harness.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  ID_NAME,
  idNameCsv,
  runToEnd,
  SQLITE,
  sqliteTarget,
} from '../solutions/harness.js';
import {
  AGENT_IMAGE,
  buildImage,
  freePort,
  localBase,
  podman,
  podmanMissing,
  prebuiltContext,
  ROOT,
  SERVICE_IMAGE,
} from './podman.js';
import { BUILT_IN_CONNECTORS } from '../../helpers/built-in-connectors.js';

/** The full test builds two images (2 to 5 minutes): installer/docker/test-images.sh runs it, apart from `npm test`. */
const FULL = process.env['FERRY_IMAGE_TEST'] === '1';
const MISSING = FULL ? podmanMissing() : undefined;
const IN_CI = process.env['CI'] === 'true';
const SKIPPED = !FULL
  ? ' (skipped: installer/docker/test-images.sh runs it, or FERRY_IMAGE_TEST=1)'
  : MISSING
    ? ` (skipped: ${MISSING})`
    : '';
const ROWS = 250;
/** `podman stop` waits this long before SIGKILL: the stop must end well within it. */
const STOP_TIMEOUT_S = 30;

/** Names of what the test makes, removed at the end by name. */
const tag = `${process.pid}`;
const NAMES = {
  service: `ferry-test-service-${tag}`,
  serviceVolume: `ferry-test-service-${tag}`,
  agent: `ferry-test-agent-${tag}`,
  agentVolume: `ferry-test-agent-${tag}`,
};

/** The Service in its container, seen through the API only (its store is inside the container's volume). */
function remoteService(url: string): ServiceUnderTest {
  const none = async () => undefined;
  return {
    dataDir: '',
    url,
    port: Number(new URL(url).port),
    orgId: 1,
    service: undefined,
    start: none,
    stop: none,
    dispose: none,
    request: (method, pathAndQuery, opts = {}) => adminRequest(url, method, pathAndQuery, opts),
    query: () => {
      throw new Error('the store is inside the Service container');
    },
  };
}

/** Milliseconds of each phase, printed at the end. */
const timings: Record<string, number> = {};
async function timed<T>(what: string, work: () => Promise<T>): Promise<T> {
  const started = Date.now();
  try {
    return await work();
  } finally {
    timings[what] = Date.now() - started;
  }
}

/**
 * The two images of installer/docker/Dockerfile, built on a base made from this machine's files
 * (no registry here) and started for real with podman: the Service image (with a Cloud Agent it
 * runs itself), then a Cloud Agent image that registers with an installation key, runs a CSV → SQLite Solution on files mounted into it,
 * and stops gracefully on `podman stop`; both as a non-root user on a read-only root file system,
 * healthy by their HEALTHCHECK.
 */
describe.skipIf(!FULL || (MISSING !== undefined && !IN_CI))(
  `the Service and Cloud Agent images under podman${SKIPPED}`,
  () => {
    let sut: ServiceUnderTest;
    let files: string;

    beforeAll(async () => {
      if (MISSING) throw new Error(`CI needs podman for the image test: ${MISSING}`);
      await cleanUp();
      const base = await timed('local base image', async () => localBase());
      const context = await timed('prebuilt context (esbuild, node_modules)', prebuiltContext);
      timings['build service image'] = await buildImage('service', base, context);
      timings['build agent image'] = await buildImage('agent', base, context);
      files = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-containers-'));
    }, 900_000);

    afterAll(async () => {
      if (!MISSING) await cleanUp();
      if (files) fs.rmSync(files, { recursive: true, force: true });
      process.stdout.write(
        `image test timings (ms): ${Object.entries(timings)
          .map(([k, v]) => `${k} ${v}`)
          .join(', ')}\n`,
      );
    }, 120_000);

    it(
      'runs the Service, registers a Cloud Agent container, runs a Solution on it, and stops it gracefully',
      { timeout: 600_000 },
      async () => {
        const started = Date.now();
        // ── the Service ───────────────────────────────────────────────────────
        const port = await freePort();
        const url = `http://127.0.0.1:${port}`;
        await podman(
          [
            'run',
            '--detach',
            '--name',
            NAMES.service,
            '--network',
            'host',
            '--read-only',
            '--volume',
            `${NAMES.serviceVolume}:/var/lib/ferry`,
            '--env',
            'FERRY_HOST=127.0.0.1',
            '--env',
            `FERRY_PORT=${port}`,
            '--env',
            `FERRY_ADMIN_EMAIL=${ADMIN.email}`,
            '--env',
            `FERRY_ADMIN_PASSWORD=${ADMIN.password}`,
            '--env',
            'FERRY_RATE_LIMIT_PER_MINUTE=100000',
            SERVICE_IMAGE,
          ],
          { check: true },
        );
        await until(
          'the Service container to answer /readyz',
          async () => ((await fetch(`${url}/readyz`)).status === 200 ? true : undefined),
          60_000,
        ).catch(async (err: unknown) => {
          throw new Error(`${String(err)}\n${await logsOf(NAMES.service)}`);
        });
        sut = remoteService(url);
        if (fs.existsSync(path.join(ROOT, 'dist/console/index.html'))) {
          // The image carries the web console the build made.
          const page = await fetch(`${url}/console/`);
          expect(page.status).toBe(200);
          expect(page.headers.get('content-type')).toMatch(/text\/html/);
        }
        await expectHealthy(NAMES.service);
        await expectLockedDown(NAMES.service, '/var/lib/ferry');
        // The Service image also runs the Organization's Service-run Cloud Agent (FERRY_CLOUD_AGENTS=on),
        // as a child process with its folder on the volume.
        const cloud = await sut.request<AgentView>('POST', `/v1/orgs/${sut.orgId}/agents/provision_cloud_agent`);
        expect(cloud.status, JSON.stringify(cloud.body)).toBe(201);

        // ── the Cloud Agent: registers with its key, reaches Running, gets its Connectors ──
        const key = await sut.request<{ agentInstallationKey: string }>(
          'POST',
          `/v1/orgs/${sut.orgId}/agents/provision_onpremise_agent`,
        );
        expect(key.status, JSON.stringify(key.body)).toBe(200);
        fs.chmodSync(files, 0o777);
        const agentArgs = (env: string[]) => [
          'run',
          '--detach',
          '--name',
          NAMES.agent,
          '--network',
          'host',
          '--read-only',
          '--stop-timeout',
          String(STOP_TIMEOUT_S),
          '--volume',
          `${NAMES.agentVolume}:/var/lib/ferry/agents`,
          '--volume',
          `${files}:/data`,
          '--env',
          `FERRY_SERVICE_URL=${url}`,
          '--env',
          'FERRY_AGENT_BACKOFF_MAX_MS=2000',
          ...env.flatMap((e) => ['--env', e]),
          AGENT_IMAGE,
        ];
        await podman(
          agentArgs([`FERRY_AGENT_KEY=${key.body.agentInstallationKey}`, 'FERRY_AGENT_NAME=Container Agent']),
          { check: true },
        );
        const agent = await until(
          'the Agent container to register and run with the built-in Connectors',
          async () => {
            const res = await sut.request<Array<AgentView & { installedConnectors: unknown[] }>>(
              'GET',
              `/v1/orgs/${sut.orgId}/agents`,
            );
            const a = res.body.find((x) => x.name === 'Container Agent');
            return a?.status === 'Running' && a.installedConnectors.length === BUILT_IN_CONNECTORS ? a : undefined;
          },
          120_000,
        ).catch(async (err: unknown) => {
          throw new Error(`${String(err)}\n${await logsOf(NAMES.agent)}`);
        });
        timings['Agent registered and Running'] = Date.now() - started;
        await until(
          'the Service-run Cloud Agent Running',
          async () => {
            const res = await sut.request<AgentView>('GET', `/v1/orgs/${sut.orgId}/agents/${cloud.body.id}`);
            return res.body.status === 'Running' ? true : undefined;
          },
          60_000,
        ).catch(async (err: unknown) => {
          throw new Error(`${String(err)}\n${await logsOf(NAMES.service)}`);
        });
        await expectHealthy(NAMES.agent);
        await expectLockedDown(NAMES.agent, '/var/lib/ferry/agents');

        // ── a CSV → SQLite Solution on the files mounted at /data ─────────────
        const csvFolder = path.join(files, 'csv');
        fs.mkdirSync(csvFolder, { mode: 0o777 });
        fs.writeFileSync(path.join(csvFolder, 'people.csv'), idNameCsv(ROWS, 'person'));
        fs.writeFileSync(
          path.join(csvFolder, 'schema.json'),
          JSON.stringify({ entities: { 'people.csv': { fields: ID_NAME } } }),
        );
        const target = sqliteTarget(path.join(files, 'target.db'), ['people'], { primaryKey: true });
        fs.chmodSync(target.file, 0o666);
        const csvId = await createConnection(sut, 'People files', CSV, { folder: '/data/csv' });
        const dbId = await createConnection(sut, 'Target', SQLITE, { file: '/data/target.db' });
        const solution = await createSolution(
          sut,
          agent.id,
          'People in a container',
          [copyMap({ n: 1, csvId, entity: 'people', targetId: dbId, table: 'people' })],
          { prepare: true },
        );
        const execution = await runToEnd(sut, solution.id);
        expect(execution, JSON.stringify(execution)).toMatchObject({
          result: 'CompletedSuccessfully',
          recordsProcessed: ROWS,
          recordsFailed: 0,
        });
        expect(target.count('people')).toBe(ROWS);
        timings['Solution run'] = Date.now() - started - (timings['Agent registered and Running'] ?? 0);

        // Logs: JSON lines on stdout, and the instance's log files on the volume.
        expect(await logsOf(NAMES.agent)).toContain(agent.id);
        const logFiles = await podman(['exec', NAMES.agent, 'ls', '/var/lib/ferry/agents/ferry-agent-1/logs'], {
          check: true,
        });
        expect(logFiles.stdout.trim()).not.toBe('');

        // ── podman stop: SIGTERM, a graceful stop well within the timeout, exit 0 ──
        const stopping = Date.now();
        await podman(['stop', NAMES.agent], { check: true, timeoutMs: (STOP_TIMEOUT_S + 30) * 1000 });
        const stopMs = Date.now() - stopping;
        timings['podman stop of the Agent'] = stopMs;
        expect(stopMs).toBeLessThan((STOP_TIMEOUT_S * 1000) / 2);
        expect((await inspect(NAMES.agent, '{{.State.ExitCode}}')).trim()).toBe('0');
        // FERRY_AGENT_CLOUD=true in the image: the Agent says goodbye as a Cloud Agent.
        await until(
          'the Service to record the Agent ShutdownCloud',
          async () => {
            const res = await sut.request<AgentView>('GET', `/v1/orgs/${sut.orgId}/agents/${agent.id}`);
            return res.body.status === 'ShutdownCloud' ? true : undefined;
          },
          30_000,
        );

        // ── a new container on the same volume is the same Agent, without a key ──
        await podman(['rm', NAMES.agent], { check: true });
        await podman(agentArgs([]), { check: true });
        await until(
          'the same Agent Running again from its volume',
          async () => {
            const res = await sut.request<AgentView[]>('GET', `/v1/orgs/${sut.orgId}/agents`);
            const mine = res.body.filter((x) => x.name === 'Container Agent');
            return mine.length === 1 && mine[0]?.id === agent.id && mine[0].status === 'Running' ? true : undefined;
          },
          90_000,
        ).catch(async (err: unknown) => {
          throw new Error(`${String(err)}\n${await logsOf(NAMES.agent)}`);
        });
        await podman(['stop', NAMES.agent], { check: true, timeoutMs: (STOP_TIMEOUT_S + 30) * 1000 });
        expect((await inspect(NAMES.agent, '{{.State.ExitCode}}')).trim()).toBe('0');

        // ── the Service stops gracefully too ─────────────────────────────────
        const serviceStopping = Date.now();
        await podman(['stop', NAMES.service], { check: true, timeoutMs: 60_000 });
        timings['podman stop of the Service'] = Date.now() - serviceStopping;
        expect((await inspect(NAMES.service, '{{.State.ExitCode}}')).trim()).toBe('0');
        expect(await logsOf(NAMES.service)).toMatch(/"code":0,"signal":null,"msg":"cloud agent process exited"/);
        timings['containers, end to end'] = Date.now() - started;
      },
    );
  },
);

/** The container's output (stdout and stderr), for failure messages and log checks. */
async function logsOf(name: string): Promise<string> {
  const r = await podman(['logs', name]);
  return `${r.stdout}${r.stderr}`;
}

async function inspect(name: string, format: string): Promise<string> {
  return (await podman(['inspect', '--format', format, name], { check: true })).stdout;
}

/** The image's HEALTHCHECK passes now. */
async function expectHealthy(name: string): Promise<void> {
  // Without systemd podman cannot schedule the checks (it says so on stderr); a check run on demand works.
  const r = await podman(['healthcheck', 'run', name]);
  expect(r.code, `${r.stdout}${r.stderr}`).toBe(0);
}

/** The process runs as the non-root user ferry; the root file system is read-only, the volume writable. */
async function expectLockedDown(name: string, volume: string): Promise<void> {
  expect((await podman(['exec', name, 'id', '-u'], { check: true })).stdout.trim()).toBe('10001');
  const outside = await podman(['exec', name, 'sh', '-c', 'echo x > /opt/ferry/probe']);
  expect(outside.code).not.toBe(0);
  expect(outside.stderr).toMatch(/Read-only file system/);
  const inside = await podman(['exec', name, 'sh', '-c', `echo x > ${volume}/probe && rm ${volume}/probe`]);
  expect(inside.code, inside.stderr).toBe(0);
}

/** Removes the test's containers and volumes, by name (images stay: the next run reuses their layers). */
async function cleanUp(): Promise<void> {
  await podman(['rm', '--force', '--time', '0', NAMES.agent, NAMES.service]);
  await podman(['volume', 'rm', '--force', NAMES.agentVolume, NAMES.serviceVolume]);
}
