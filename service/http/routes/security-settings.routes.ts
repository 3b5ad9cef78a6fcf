import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { changeCaptureSettings, resetCryptoToken, resetEventAccessToken } from '../../orgs/security-settings.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { toSecuritySettings } from '../mappers/org.js';
import { OrgParams } from '../schemas/common.js';
import { SecuritySettings, SecuritySettingsInput } from '../schemas/org.schema.js';

const tags = ['Security Settings'];

const securitySettingsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  // The tokens are secrets: only Administrators read them.
  app.get(
    '/v1/orgs/:orgId/SecuritySettings',
    {
      config: { access: 'admin' },
      schema: { tags, summary: 'Security Settings', params: OrgParams, response: { 200: SecuritySettings } },
    },
    async (req) => toSecuritySettings(deps.secrets, orgOf(req).org),
  );

  app.put(
    '/v1/orgs/:orgId/SecuritySettings',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'Modify Security Settings (tokens are reset with their own calls)',
        params: OrgParams,
        body: SecuritySettingsInput,
        response: { 200: SecuritySettings },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      // isAgentLogDownloadAllowed is no longer used: accepted and ignored, as SPEC.md says.
      const changed = await changeCaptureSettings(db, org.id, req.body, userName(user));
      // The capture switches travel with each Solution to its Agent: a change applies to the next run.
      deps.assignments
        .syncOrg(org.id)
        .catch((err: unknown) =>
          req.log.warn({ err }, 'agent solutions not reconciled; they are at their next connect'),
        );
      return toSecuritySettings(deps.secrets, changed);
    },
  );

  app.put(
    '/v1/orgs/:orgId/SecuritySettings/resetaccesstoken',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'Regenerate the Event Solution access token',
        params: OrgParams,
        response: { 200: SecuritySettings },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      return toSecuritySettings(deps.secrets, await resetEventAccessToken(deps, db, org.id, userName(user)));
    },
  );

  app.put(
    '/v1/orgs/:orgId/SecuritySettings/resetcryptotoken',
    {
      config: { access: 'admin' },
      schema: { tags, summary: 'Regenerate the crypto token', params: OrgParams, response: { 200: SecuritySettings } },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      return toSecuritySettings(deps.secrets, await resetCryptoToken(deps, db, org.id, userName(user)));
    },
  );
};

export default securitySettingsRoutes;
