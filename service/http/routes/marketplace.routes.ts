import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { customersOf, grantCustomer, removeCustomerOf } from '../../marketplace/customers.js';
import { offerOf, offersInstalledIn, offersTo } from '../../marketplace/offers.js';
import type { ServiceDeps } from '../deps.js';
import { assertMemberOrg, callerOf, orgOf, userName } from '../guard.js';
import { toCustomer, toMarketplaceConnector } from '../mappers/connector.js';
import { decimal, MAX_INT, OrgParams, pageOf, PageQuery, sendList } from '../schemas/common.js';
import { Customer, MarketplaceConnector, MarketplaceQuery } from '../schemas/marketplace.schema.js';

/**
 * The Marketplace (SPEC.md "Marketplace Connector"): every Connector the caller's Organization may
 * install, with its install state there and per Agent; and the customers of a Managed Connector,
 * which its vendor's Organization grants and removes (service/marketplace/offers.ts, customers.ts).
 */
const marketplaceRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const installs = deps.connectors;
  const catalogue = installs.catalogue;

  app.get(
    '/v1/marketplace/connectors',
    {
      config: { access: 'user' },
      schema: {
        tags: ['Connectors'],
        summary:
          'Marketplace Connectors: with orgId, all the Organization may install (private Managed ones included) with its install state; without, the public ones installed in any of your Organizations',
        querystring: MarketplaceQuery,
        response: { 200: z.array(MarketplaceConnector) },
      },
    },
    async (req, reply) => {
      const user = callerOf(req);
      const { orgId, filterByName, filterByDescription } = req.query;
      const filter = { byName: filterByName, byDescription: filterByDescription };
      if (orgId !== undefined) await assertMemberOrg(deps, user, orgId, req.ip);
      const list =
        orgId !== undefined
          ? await offersTo(db, catalogue, orgId, filter)
          : await offersInstalledIn(db, catalogue, user.id, filter);
      const page = await Promise.all(
        pageOf(list, req.query).map(async (m) => toMarketplaceConnector(await offerOf(db, m, orgId))),
      );
      return sendList(reply, page, list.length);
    },
  );

  const CustomerParams = OrgParams.extend({ connectorId: z.guid() });
  app.get(
    '/v1/orgs/:orgId/managedconnectors/:connectorId/customers',
    {
      config: { access: 'admin' },
      schema: {
        tags: ['Connectors'],
        summary: "Customers with access to a Managed Connector ({orgId} is the vendor's managing Organization)",
        params: CustomerParams,
        querystring: PageQuery,
        response: { 200: z.array(Customer) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const rows = await customersOf(db, installs, org.id, req.params.connectorId);
      return sendList(reply, pageOf(rows, req.query).map(toCustomer), rows.length);
    },
  );

  app.post(
    '/v1/orgs/:orgId/managedconnectors/:connectorId/customers/:id',
    {
      config: { access: 'admin' },
      schema: {
        tags: ['Connectors'],
        summary:
          'Grant a customer Organization access to a Managed Connector and install it there (on its Agents as they connect)',
        params: CustomerParams.extend({ id: decimal(z.number().int().positive().max(MAX_INT)) }),
        response: { 200: Customer },
      },
    },
    async (req) => {
      const { org, user } = orgOf(req);
      return toCustomer(
        await grantCustomer(db, installs, org.id, req.params.connectorId, req.params.id, userName(user)),
      );
    },
  );

  app.delete(
    '/v1/orgs/:orgId/managedconnectors/:connectorId/customers/:id',
    {
      config: { access: 'admin' },
      schema: {
        tags: ['Connectors'],
        summary:
          "Remove a customer's access to a Managed Connector (uninstalls it there; 409 while its Connections use it)",
        params: CustomerParams.extend({ id: decimal(z.number().int().positive().max(MAX_INT)) }),
        response: { 204: z.null() },
      },
    },
    async (req, reply) => {
      const { org, user } = orgOf(req);
      await removeCustomerOf(db, installs, org.id, req.params.connectorId, req.params.id, userName(user));
      return reply.code(204).send(null);
    },
  );
};

export default marketplaceRoutes;
