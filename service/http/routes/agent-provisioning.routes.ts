import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { FerryError } from '../../../src/errors/ferry-error.js';
import { REGISTER_PATH, RegisterRequest, RegisterResponse } from '../../../src/protocol/registration.js';
import { provisionCloudAgent } from '../../agents/agents.js';
import { issueInstallationKey, registerAgent } from '../../agents/registration.js';
import { serviceBaseUrl } from '../base-url.js';
import { toAgent } from '../mappers/agent.js';
import { installerScript, packageEntries, streamAgentPackage } from '../agent-package.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf, userName } from '../guard.js';
import { Agent, ProvisionedAgent } from '../schemas/agent.schema.js';
import { OrgParams, sendCreated } from '../schemas/common.js';

export const INSTALLER_PATH = '/v1/agent/installer';
export const PACKAGE_PATH = '/v1/agent/package.tgz';

/**
 * Getting an Agent: installation keys and the installer for On-Premise Agents, the Cloud Agent,
 * and the registration the installer makes with the key.
 */
const agentProvisioningRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;

  app.post(
    '/v1/orgs/:orgId/agents/provision_onpremise_agent',
    {
      config: { access: 'write' },
      schema: {
        tags: ['Agents'],
        summary: 'A single-use installation key and the installer location for an On-Premise Agent',
        params: OrgParams,
        response: { 200: ProvisionedAgent },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      const { key, expiresAt } = await issueInstallationKey(db, {
        orgId: org.id,
        ttlSeconds: deps.config.agentKeyTtl,
        createdBy: userName(user),
      });
      const base = serviceBaseUrl(req, deps.config);
      const location = base + INSTALLER_PATH;
      req.log.info({ orgId: org.id, expiresAt }, 'agent installation key issued');
      return {
        agentInstallationKey: key,
        agentInstallerLocation: location,
        expiresAt,
        installCommand: `curl -fsSL ${location} | sh -s -- ${key}`,
      };
    },
  );

  app.post(
    '/v1/orgs/:orgId/agents/provision_cloud_agent',
    {
      config: { access: 'admin' },
      schema: {
        tags: ['Agents'],
        summary: "Create the Organization's Cloud Agent (at most one), run by the Service",
        params: OrgParams,
        response: { 201: Agent },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const agent = await provisionCloudAgent(deps, org.id, req.log);
      return sendCreated(
        reply,
        `/v1/orgs/${org.id}/agents/${agent.id}`,
        toAgent(agent, deps.agents.commands.isConnected(agent.id)),
      );
    },
  );

  app.post(
    REGISTER_PATH,
    {
      config: { access: 'public' },
      schema: {
        tags: ['Agent protocol'],
        summary: 'An Agent trades its installation key for its identity (used by ferry agent install)',
        body: RegisterRequest,
        response: { 201: RegisterResponse },
      },
    },
    async (req, reply) => {
      const registered = await registerAgent(deps.store, req.body, deps.config.agentHeartbeatMs);
      req.log.info(
        { agentId: registered.agentId, orgId: registered.orgId, machineName: req.body.machineName },
        'agent registered',
      );
      return sendCreated(reply, `/v1/orgs/${registered.orgId}/agents/${registered.agentId}`, registered);
    },
  );

  // Downloads, not API calls: public (the installation key is the credential) and left out of the OpenAPI document.
  app.get(INSTALLER_PATH, { config: { access: 'public' }, schema: { hide: true } }, async (req, reply) => {
    const base = serviceBaseUrl(req, deps.config);
    return reply
      .type('text/x-shellscript; charset=utf-8')
      .header('Content-Disposition', 'inline; filename="ferry-agent-install.sh"')
      .header('Cache-Control', 'no-store')
      .send(
        installerScript({ serviceUrl: base, installerUrl: base + INSTALLER_PATH, packageUrl: base + PACKAGE_PATH }),
      );
  });

  app.get(PACKAGE_PATH, { config: { access: 'public' }, schema: { hide: true } }, async (req, reply) => {
    const entries = packageEntries();
    if (!entries)
      throw new FerryError(
        'AGT_PACKAGE_UNAVAILABLE',
        'The Agent package cannot be served: the Service has no dist/ folder (run npm run build).',
      );
    const stream = streamAgentPackage(entries);
    stream.on('error', (err) => req.log.error({ err }, 'agent package stream failed'));
    return reply
      .type('application/gzip')
      .header('Content-Disposition', 'attachment; filename="ferry.tgz"')
      .send(stream);
  });
};

export default agentProvisioningRoutes;
