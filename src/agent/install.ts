import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import os from 'node:os';
import { FerryError } from '../errors/ferry-error.js';
import { REGISTER_PATH, RegisterResponse, type RegisterRequest } from '../protocol/registration.js';
import { computeFingerprint, readMachineId } from './fingerprint.js';
import {
  claimInstanceFolder,
  defaultAgentName,
  writeInstanceConfig,
  type InstanceConfig,
  type InstancePaths,
} from './home.js';

/** What {@link installInstance} needs. */
export interface InstallOptions {
  readonly home: string;
  readonly key: string;
  readonly serviceUrl: string;
  readonly version: string;
  /** Agent name; default the machine name, numbered for later instances. */
  readonly name?: string;
  readonly machineName?: string;
  readonly machineId?: string;
  readonly fetch?: typeof fetch;
  readonly timeoutMs?: number;
}

/**
 * `ferry agent install`: claims the next instance folder, registers with the installation key,
 * and writes config.json (mode 0600). A failed registration leaves no folder behind, so the
 * numbering stays gapless.
 */
export async function installInstance(opts: InstallOptions): Promise<{ paths: InstancePaths; config: InstanceConfig }> {
  const serviceUrl = normalizeServiceUrl(opts.serviceUrl);
  const machineName = opts.machineName ?? os.hostname();
  const paths = claimInstanceFolder(opts.home);
  try {
    const installId = randomUUID();
    const fingerprint = computeFingerprint({
      machineId: opts.machineId ?? readMachineId(),
      instanceDir: paths.dir,
      installId,
    });
    const request: RegisterRequest = {
      agentInstallationKey: opts.key,
      machineName,
      serviceName: paths.serviceName,
      version: opts.version,
      name: opts.name ?? defaultAgentName(machineName, paths.number),
      fingerprint,
    };
    const registered = await register(serviceUrl, request, opts.fetch ?? fetch, opts.timeoutMs ?? 30_000);
    const config: InstanceConfig = {
      agentId: registered.agentId,
      agentSecret: registered.agentSecret,
      orgId: registered.orgId,
      serviceUrl,
      name: registered.name,
      serviceName: paths.serviceName,
      fingerprint,
      installId,
      createdAt: new Date().toISOString(),
    };
    writeInstanceConfig(paths, config);
    return { paths, config };
  } catch (err) {
    fs.rmSync(paths.dir, { recursive: true, force: true });
    throw err;
  }
}

/** Removes an instance folder (config, outbox, logs, connectors). The caller stops it first. */
export function removeInstance(paths: InstancePaths): void {
  fs.rmSync(paths.dir, { recursive: true, force: true });
}

function normalizeServiceUrl(raw: string): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new FerryError(
      'AGT_CONFIG',
      `--service must be the Service's URL, e.g. http://127.0.0.1:8780 (got "${raw}").`,
    );
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    throw new FerryError('AGT_CONFIG', '--service must be an http:// or https:// URL.');
  url.search = '';
  url.hash = '';
  return url.toString().replace(/\/+$/, '');
}

async function register(
  serviceUrl: string,
  body: RegisterRequest,
  fetchImpl: typeof fetch,
  timeoutMs: number,
): Promise<RegisterResponse> {
  let res: Response;
  try {
    res = await fetchImpl(serviceUrl + REGISTER_PATH, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json' },
      body: JSON.stringify(body),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    throw new FerryError(
      'AGT_SERVICE_UNREACHABLE',
      `Cannot reach the Service at ${serviceUrl}: ${(err as Error).message}`,
      { cause: err, details: { serviceUrl } },
    );
  }
  const text = await res.text();
  if (!res.ok) {
    const detail = problemDetail(text);
    if (res.status >= 500) {
      throw new FerryError(
        'AGT_SERVICE_UNREACHABLE',
        `The Service failed to register the Agent (${res.status}${detail ? `: ${detail}` : ''}); retry.`,
        { details: { status: res.status } },
      );
    }
    throw new FerryError(
      'AGT_REGISTRATION_REFUSED',
      `The Service refused the registration (${res.status}${detail ? `: ${detail}` : ''}). The installation key may be unknown, expired or already used: provision a new one.`,
      {
        details: { status: res.status },
      },
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  const parsed = RegisterResponse.safeParse(json);
  if (!parsed.success)
    throw new FerryError(
      'AGT_SERVICE_UNREACHABLE',
      'The Service answered the registration with something that is not a registration response.',
    );
  return parsed.data;
}

function problemDetail(text: string): string | undefined {
  try {
    const problem = JSON.parse(text) as { detail?: unknown; title?: unknown; code?: unknown };
    const detail =
      typeof problem.detail === 'string'
        ? problem.detail
        : typeof problem.title === 'string'
          ? problem.title
          : undefined;
    return detail && typeof problem.code === 'string' ? `${problem.code}: ${detail}` : detail;
  } catch {
    return undefined;
  }
}
