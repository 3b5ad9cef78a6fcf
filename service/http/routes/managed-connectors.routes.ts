import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { ConnectorManifest } from '../../../src/protocol/connector-manifest.js';
import { requireManagedBy } from '../../marketplace/access.js';
import { customersOf } from '../../marketplace/customers.js';
import { managedConnectorsOf } from '../../marketplace/managed.js';
import type { ServiceDeps } from '../deps.js';
import { orgOf } from '../guard.js';
import { toConnector, toCustomer } from '../mappers/connector.js';
import { OrgParams, pageOf, PageQuery, qbool, sendList } from '../schemas/common.js';
import { Connector } from '../schemas/connection.schema.js';
import { Customer } from '../schemas/marketplace.schema.js';

const tags = ['Connectors'];

/** A Managed Connector as its vendor sees it: the Connector model, with its customers when asked. */
const ManagedConnector = Connector.extend({ customers: z.array(Customer).optional() });
const ManagedQuery = PageQuery.extend({
  name: z.string().max(255).optional().describe('only Connectors whose name holds this text, in any case'),
  showCustomers: qbool(false).describe('add the customer Organizations each Connector is granted to'),
});
const ShowCustomersQuery = z.object({
  showCustomers: qbool(false).describe('add the customer Organizations the Connector is granted to'),
});

/**
 * The Managed Connectors an Organization is the vendor of (DESIGN.md "Other paths clients call");
 * their customers are granted and removed under …/managedconnectors/{id}/customers.
 */
const managedConnectorsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const { db } = deps.store;
  const installs = deps.connectors;
  const catalogue = installs.catalogue;

  const withCustomers = async (
    vendorOrgId: number,
    m: ConnectorManifest,
    show: boolean,
  ): Promise<z.infer<typeof ManagedConnector>> =>
    show
      ? { ...toConnector(m), customers: (await customersOf(db, installs, vendorOrgId, m.id)).map(toCustomer) }
      : toConnector(m);

  app.get(
    '/v1/orgs/:orgId/managedconnectors',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'The Managed Connectors this Organization is the vendor of',
        params: OrgParams,
        querystring: ManagedQuery,
        response: { 200: z.array(ManagedConnector) },
      },
    },
    async (req, reply) => {
      const { org } = orgOf(req);
      const list = await managedConnectorsOf(db, catalogue, org.id, req.query.name);
      const page = await Promise.all(
        pageOf(list, req.query).map((m) => withCustomers(org.id, m, req.query.showCustomers)),
      );
      return sendList(reply, page, list.length);
    },
  );

  app.get(
    '/v1/orgs/:orgId/managedconnectors/:connectorId',
    {
      config: { access: 'admin' },
      schema: {
        tags,
        summary: 'One Managed Connector this Organization is the vendor of (404 CON_NOT_MANAGED for any other)',
        params: OrgParams.extend({ connectorId: z.guid() }),
        querystring: ShowCustomersQuery,
        response: { 200: ManagedConnector },
      },
    },
    async (req) => {
      const { org } = orgOf(req);
      const m = await requireManagedBy(db, catalogue, org.id, req.params.connectorId);
      return withCustomers(org.id, m, req.query.showCustomers);
    },
  );
};

export default managedConnectorsRoutes;
