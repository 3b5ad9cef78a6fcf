import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { orgSettings } from '../../orgs/settings.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { toSetting } from '../mappers/org.js';
import { OrgParams, sendList } from '../schemas/common.js';
import { Setting } from '../schemas/setting.schema.js';

/** `GET /v1/orgs/{orgId}/Settings`: the Organization's effective operational settings (read-only). */
const settingsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  app.get(
    '/v1/orgs/:orgId/Settings',
    {
      config: { access: 'read' },
      schema: {
        tags: ['Settings'],
        summary: 'Effective operational settings and limits of the Organization',
        params: OrgParams,
        response: { 200: z.array(Setting) },
      },
    },
    async (req, reply) => {
      const settings = orgSettings(deps.config, orgOf(req).org.id).map(toSetting);
      return sendList(reply, settings, settings.length);
    },
  );
};

export default settingsRoutes;
