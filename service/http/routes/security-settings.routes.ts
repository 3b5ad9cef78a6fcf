import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { getOrg, updateOrg } from '../../store/repos/orgs.repo.js';
import type { OrgRow } from '../../store/schema.js';
import { fromFlag, newId, nowIso } from '../../util/values.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { capturePatch } from '../org-model.js';
import { OrgParams } from '../schemas/common.js';
import { SecuritySettings, SecuritySettingsInput } from '../schemas/org.schema.js';

const tags = ['Security Settings'];

const securitySettingsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  const settingsOf = (org: OrgRow) => ({
    apiCryptoToken: deps.secrets.open(org.apiCryptoToken),
    eventSolutionAccessToken: deps.secrets.open(org.eventSolutionAccessToken),
    captureOnFailedRecordsForReprocessing: fromFlag(org.captureOnFailedRecordsForReprocessing),
    captureDuringCloudAppRuns: fromFlag(org.captureDuringCloudAppRuns),
    captureDuringLocalAgentAppRuns: fromFlag(org.captureDuringLocalAgentAppRuns),
    isSourceDataLocal: fromFlag(org.isSourceDataLocal),
    isAgentLogDownloadAllowed: fromFlag(org.isAgentLogDownloadAllowed),
  });

  const reload = async (id: number): Promise<OrgRow> => {
    const org = await getOrg(db, id);
    if (!org) throw new FerryError('API_NOT_FOUND', `Organization ${id} was not found.`);
    return org;
  };

  // The tokens are secrets: only Administrators read them.
  app.get('/v1/orgs/:orgId/SecuritySettings', {
    config: { access: 'admin' },
    schema: { tags, summary: 'Security Settings', params: OrgParams, response: { 200: SecuritySettings } },
  }, async (req) => settingsOf(orgOf(req).org));

  app.put('/v1/orgs/:orgId/SecuritySettings', {
    config: { access: 'admin' },
    schema: { tags, summary: 'Modify Security Settings (tokens are reset with their own calls)', params: OrgParams, body: SecuritySettingsInput, response: { 200: SecuritySettings } },
  }, async (req) => {
    const { org, user } = orgOf(req);
    // isAgentLogDownloadAllowed is no longer used: accepted and ignored, as SPEC.md says.
    await updateOrg(db, org.id, { ...capturePatch(req.body), modifiedAt: nowIso(), modificationBy: userName(user) });
    return settingsOf(await reload(org.id));
  });

  app.put('/v1/orgs/:orgId/SecuritySettings/resetaccesstoken', {
    config: { access: 'admin' },
    schema: { tags, summary: 'Regenerate the Event Solution access token', params: OrgParams, response: { 200: SecuritySettings } },
  }, async (req) => {
    const { org, user } = orgOf(req);
    await updateOrg(db, org.id, { eventSolutionAccessToken: deps.secrets.seal(newId()), modifiedAt: nowIso(), modificationBy: userName(user) });
    return settingsOf(await reload(org.id));
  });

  app.put('/v1/orgs/:orgId/SecuritySettings/resetcryptotoken', {
    config: { access: 'admin' },
    schema: { tags, summary: 'Regenerate the crypto token', params: OrgParams, response: { 200: SecuritySettings } },
  }, async (req) => {
    const { org, user } = orgOf(req);
    await updateOrg(db, org.id, { apiCryptoToken: deps.secrets.seal(newId()), modifiedAt: nowIso(), modificationBy: userName(user) });
    return settingsOf(await reload(org.id));
  });
};

export default securitySettingsRoutes;
