import { updateOrg } from '../store/repos/orgs.repo.js';
import type { OrgRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { newId, nowIso } from '../util/values.js';
import { capturePatch, type CaptureSwitches } from './capture.js';
import { organizationOf, type OrgSecrets } from './organizations.js';

/**
 * An Organization's Security Settings: its two tokens (sealed under the master key) and its capture
 * switches. Each change answers the Organization as stored after it.
 */

/** Changes the capture switches (SPEC.md's capture rule 2 applies). isAgentLogDownloadAllowed is no longer used and not changed. */
export async function changeCaptureSettings(
  db: Db,
  orgId: number,
  switches: CaptureSwitches,
  modificationBy: string,
): Promise<OrgRow> {
  await updateOrg(db, orgId, { ...capturePatch(switches), modifiedAt: nowIso(), modificationBy });
  return organizationOf(db, orgId);
}

/** A new Event Solution access token: event URLs with the old one stop working. */
export async function resetEventAccessToken(
  deps: OrgSecrets,
  db: Db,
  orgId: number,
  modificationBy: string,
): Promise<OrgRow> {
  await updateOrg(db, orgId, {
    eventSolutionAccessToken: deps.secrets.seal(newId()),
    modifiedAt: nowIso(),
    modificationBy,
  });
  return organizationOf(db, orgId);
}

/** A new crypto token, the one clients encrypt connection properties with from then on. */
export async function resetCryptoToken(
  deps: OrgSecrets,
  db: Db,
  orgId: number,
  modificationBy: string,
): Promise<OrgRow> {
  await updateOrg(db, orgId, { apiCryptoToken: deps.secrets.seal(newId()), modifiedAt: nowIso(), modificationBy });
  return organizationOf(db, orgId);
}
