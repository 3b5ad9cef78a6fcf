import path from 'node:path';
import type { Logger } from 'pino';
import { FerryError } from '../errors/ferry-error.js';
import { createAgentLogger, type AgentLogger } from '../logs/logger.js';
import type { AgentConfig } from './config.js';
import { computeFingerprint, readMachineId } from './fingerprint.js';
import { readInstanceConfig, secureInstance, type InstanceConfig, type InstancePaths } from './home.js';
import type { TreeRepair } from '../util/private-files.js';

/** An instance the Agent may run as: its identity, its fingerprint, and its logger. */
export interface OpenedInstance {
  readonly instance: InstanceConfig;
  readonly fingerprint: string;
  readonly logger: AgentLogger;
  /** The root logger's child for the Agent itself (`component: 'agent'`). */
  readonly log: Logger;
}

/**
 * What comes before any component of the Agent: the instance's identity, refused when the folder
 * was copied to another place or machine (AGT_CLONED_INSTALL); the home closed to other users of
 * the host before anything opens its files (a folder left readable by an older version, or by
 * hand); then the logger, which says once what that repair changed.
 */
export async function openInstance(opts: {
  readonly config: AgentConfig;
  readonly paths: InstancePaths;
  readonly machineId?: string | undefined;
  readonly logger?: AgentLogger | undefined;
}): Promise<OpenedInstance> {
  const { config, paths } = opts;
  const instance = readInstanceConfig(paths);
  const machineId = opts.machineId ?? readMachineId();
  const fingerprint = computeFingerprint({ machineId, instanceDir: paths.dir, installId: instance.installId });
  if (fingerprint !== instance.fingerprint) {
    const message =
      `The instance in ${paths.dir} was installed in another folder or on another machine; ` +
      'a copy may not run with its identity. Install a new instance with "ferry agent install".';
    throw new FerryError('AGT_CLONED_INSTALL', message, { details: { dir: paths.dir, agentId: instance.agentId } });
  }
  const repair = secureInstance(path.dirname(paths.dir), paths);
  const logger =
    opts.logger ??
    (await createAgentLogger({
      logsDir: paths.logs,
      level: config.logLevel,
      agentId: instance.agentId,
      maxSize: config.logMaxSize,
      files: config.logFiles,
      stdout: config.logStdout,
    }));
  const log = logger.log.child({ component: 'agent' });
  reportRepair(log, repair);
  return { instance, fingerprint, logger, log };
}

function reportRepair(log: Logger, repair: TreeRepair): void {
  if (repair.repaired.length === 0 && repair.failed.length === 0 && !repair.truncated) return;
  const { repaired, failed, truncated } = repair;
  const unchanged = failed.length > 0 ? `; ${failed.length} could not be changed` : '';
  log.warn(
    { repaired: repaired.length, examples: repaired.slice(0, 5), failed: failed.slice(0, 5), truncated },
    `closed ${repaired.length} files and folders of the Agent's home to other users of this host${unchanged}`,
  );
}
