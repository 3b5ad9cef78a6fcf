/**
 * `ferry up` (what `npm start` runs): the Service on the embedded store, then one local Agent —
 * installed once under `<dataDir>/agent` with an installation key the Service makes in-process
 * (the generated administrator password is known only on the first start, so no REST call) — run
 * as a supervised child process (`ferry agent run`) and stopped before the Service on shutdown.
 *
 *   up ─▶ Service listens ─▶ no instance yet? provision key in-process ─▶ ferry agent install (HTTP register)
 *                          └─▶ spawn `ferry agent run --home <dataDir>/agent` (IPC: it stops when up goes)
 *                              └─▶ wait (at most a minute) until the API shows it Running ─▶ banner: its API name, folder, next step
 *   SIGTERM/SIGINT ─▶ agent stops (reports Shutdown to the still running Service) ─▶ Service closes ─▶ exit 0
 *
 * This is CLI code: it is the one place allowed to compose the two halves, and loads the Service lazily.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { listInstances, readInstanceConfig } from '../agent/home.js';
import { installInstance } from '../agent/install.js';
import { createConsoleLogger, logFormatOf } from '../logs/console.js';

export async function up(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      port: { type: 'string' },
      host: { type: 'string' },
      'data-dir': { type: 'string' },
      'database-url': { type: 'string' },
      'no-agent': { type: 'boolean', default: false },
    },
  });
  const { parseServiceConfig } = await import('../../service/config.js');
  const { buildService, REDACT_PATHS } = await import('../../service/build-service.js');
  const { provisionLocalAgentKey, waitForLocalAgent } = await import('./local-agent.js');
  const config = parseServiceConfig(env, {
    port: values.port,
    host: values.host,
    dataDir: values['data-dir'],
    databaseUrl: values['database-url'],
  });
  // Readable lines on a terminal, JSON for a collector (FERRY_LOG_FORMAT chooses).
  const logger = createConsoleLogger({
    level: config.logLevel,
    format: logFormatOf(env, process.stdout.isTTY === true),
    redact: REDACT_PATHS,
  });
  const service = await buildService(config, { logger });
  const url = await service.listen();
  const b = service.bootstrap;
  process.stdout.write((await import('../../service/cli.js')).banner(config, url, b));

  // Signals are handled from here on, so that a stop during the Agent's installation is clean too.
  let agent: ChildProcess | undefined;
  let installing: Promise<unknown> | undefined;
  let closing = false;
  const stop = (signal: string) => {
    if (closing) return;
    closing = true;
    service.app.log.info({ signal }, 'shutting down');
    void (async () => {
      try {
        // An installation under way finishes first, so that its folder is complete (it is not started).
        await installing;
        await stopAgent(agent);
        await service.close();
        process.exit(0);
      } catch (err) {
        service.app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      }
    })();
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));

  if (values['no-agent']) return;
  const home = path.join(config.dataDir, 'agent');
  try {
    // Private like the rest of the data folder (the Agent would make its home 0755).
    fs.mkdirSync(home, { recursive: true, mode: 0o700 });
    let instance = listInstances(home)[0];
    if (!instance) {
      const key = await provisionLocalAgentKey(service, b.orgId);
      const pending = installInstance({
        home,
        key,
        serviceUrl: url,
        version: (await import('./agent.commands.js')).packageVersion(),
      });
      installing = pending.catch(() => undefined);
      const installed = await pending;
      instance = installed.paths;
      process.stdout.write(
        `  Agent:    installed "${installed.config.name}" (${installed.config.agentId}) in ${installed.paths.dir}\n`,
      );
    }
    if (closing) return;
    const { agentId, name, orgId } = readInstanceConfig(instance);
    const child = startLocalAgent(home, instance.number, url, env);
    agent = child;
    const waited = await waitForLocalAgent({
      service,
      orgId,
      agentId,
      configName: name,
      instance,
      child,
      url,
      adminEmail: b.adminEmail,
      closing: () => closing,
    });
    if (waited.lines.length > 0)
      (waited.connected ? process.stdout : process.stderr).write(waited.lines.join('\n') + '\n');
  } catch (err) {
    // The Service is still useful without its local Agent: say why and go on.
    process.stderr.write(`ferry: the local Agent did not start: ${err instanceof Error ? err.message : String(err)}\n`);
  }
}

/** Stops the local Agent (it reports Shutdown to the Service, which still runs) and waits for it. */
async function stopAgent(agent: ChildProcess | undefined): Promise<void> {
  if (!agent || agent.exitCode !== null || agent.signalCode !== null) return;
  const gone = new Promise<void>((resolve) => agent.once('exit', () => resolve()));
  agent.kill('SIGTERM');
  await gone;
}

/** `ferry agent run` for the local instance, pointed at this Service's URL (the port may differ from the one installed with). */
function startLocalAgent(home: string, instance: number, url: string, env: NodeJS.ProcessEnv): ChildProcess {
  const script = process.argv[1];
  if (!script) throw new Error('Cannot tell how this CLI was started.');
  return spawn(
    process.execPath,
    [...process.execArgv, path.resolve(script), 'agent', 'run', '--home', home, '--instance', String(instance)],
    {
      env: { ...env, FERRY_AGENT_SERVICE_URL: url },
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
    },
  );
}
