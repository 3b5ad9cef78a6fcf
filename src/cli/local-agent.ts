/**
 * The local Agent of `ferry up`: an installation key made in-process with the Service's own
 * function (as `POST /v1/orgs/{orgId}/agents/provision_onpremise_agent` makes it: single use,
 * expiring, stored only as its SHA-256). CLI code: loaded lazily by `up`, never by the Agent runtime.
 */
import { issueInstallationKey } from '../../service/agents/registration.js';
import type { FerryService } from '../../service/build-service.js';

/** Lifetime of the key `ferry up` makes: it is used within seconds. */
const LOCAL_KEY_TTL_SECONDS = 600;

/** Makes a single-use installation key of the Organization and returns it. */
export async function provisionLocalAgentKey(service: FerryService, orgId: number): Promise<string> {
  const { key } = await issueInstallationKey(service.store.db, { orgId, ttlSeconds: LOCAL_KEY_TTL_SECONDS, createdBy: 'ferry up' });
  return key;
}
