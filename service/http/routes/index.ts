import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { ServiceDeps } from '../deps.js';
import orgsRoutes from './orgs.routes.js';
import securityRulesRoutes from './security-rules.routes.js';
import securitySettingsRoutes from './security-settings.routes.js';

/** Every resource's route plugin, registered in this order by the app. */
export const ROUTES: Array<FastifyPluginAsyncZod<ServiceDeps>> = [orgsRoutes, securityRulesRoutes, securitySettingsRoutes];
