/**
 * The local Agent of `ferry up`: an installation key made in-process with the Service's own
 * function (as `POST /v1/orgs/{orgId}/agents/provision_onpremise_agent` makes it: single use,
 * expiring, stored only as its SHA-256), and the wait for it to connect that the banner reports.
 * CLI code: loaded lazily by `up`, never by the Agent runtime.
 */
import type { ChildProcess } from 'node:child_process';
import type { InstancePaths } from '../agent/home.js';
import { issueInstallationKey } from '../../service/agents/registration.js';
import type { FerryService } from '../../service/build-service.js';
import { getAgent } from '../../service/store/repos/agents.repo.js';

/** Lifetime of the key `ferry up` makes: it is used within seconds. */
const LOCAL_KEY_TTL_SECONDS = 600;
/** How long the banner waits for the local Agent to connect before it says so and goes on. */
export const LOCAL_AGENT_WAIT_MS = 60_000;

/** Makes a single-use installation key of the Organization and returns it. */
export async function provisionLocalAgentKey(service: FerryService, orgId: number): Promise<string> {
  const { key } = await issueInstallationKey(service.store.db, {
    orgId,
    ttlSeconds: LOCAL_KEY_TTL_SECONDS,
    createdBy: 'ferry up',
  });
  return key;
}

export interface LocalAgentWait {
  readonly service: FerryService;
  readonly orgId: number;
  readonly agentId: string;
  /** The name in the instance's config, used only when the Service does not know the Agent. */
  readonly configName: string;
  readonly instance: InstancePaths;
  readonly child: ChildProcess;
  readonly url: string;
  readonly adminEmail: string;
  /** True once `ferry up` is stopping: the wait ends at once. */
  readonly closing: () => boolean;
  readonly timeoutMs?: number;
}

/**
 * Waits until the Service shows the local Agent Running (it connected and said hello), the Agent
 * process exits, `ferry up` stops or the time is up, and answers the banner's lines: the Agent
 * named as the API names it, with its instance folder, and what to do next.
 */
export async function waitForLocalAgent(w: LocalAgentWait): Promise<{ lines: string[]; connected: boolean }> {
  const deadline = Date.now() + (w.timeoutMs ?? LOCAL_AGENT_WAIT_MS);
  const exited = () => w.child.exitCode !== null || w.child.signalCode !== null;
  let row = await getAgent(w.service.store.db, w.orgId, w.agentId);
  // An Agent the Service does not know (its store was made anew) never connects: no wait.
  while (row !== undefined && row.status !== 'Running' && !exited() && !w.closing() && Date.now() < deadline) {
    await new Promise((r) => setTimeout(r, 100));
    row = await getAgent(w.service.store.db, w.orgId, w.agentId);
  }
  const name = row?.name ?? w.configName;
  const where = `instance ${w.instance.serviceName} in ${w.instance.dir} (logs in ${w.instance.logs})`;
  if (row?.status === 'Running') {
    return {
      connected: true,
      lines: [
        `  Agent:    "${name}" (${w.agentId}) connected, ${where}`,
        `  Next:     curl -u ${w.adminEmail}:PASSWORD ${w.url}/v1/orgs/${w.orgId}/agents   (then README.md "Moving data")`,
      ],
    };
  }
  if (w.closing()) return { connected: false, lines: [] };
  const why = exited()
    ? `exited (${w.child.exitCode ?? w.child.signalCode ?? 'unknown'}) before it connected: its logs say why`
    : row
      ? `is not connected after ${Math.round((w.timeoutMs ?? LOCAL_AGENT_WAIT_MS) / 1000)} s (status ${row.status}); it keeps trying, its logs say why`
      : `is not known to this Service (Organization ${w.orgId}; was its store made anew?): stop, remove the instance folder and start again to install a new one`;
  return { connected: false, lines: [`  Agent:    "${name}" (${w.agentId}) ${why}, ${where}`] };
}
