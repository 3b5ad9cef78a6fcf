import { FerryError } from '../../src/errors/ferry-error.js';
import {
  addCustomer,
  getOrgConnector,
  hasCustomerAccess,
  listCustomers,
  removeCustomer,
} from '../store/repos/connector-installs.repo.js';
import { getOrg } from '../store/repos/orgs.repo.js';
import type { ManagedConnectorCustomerRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { nowIso } from '../util/values.js';
import { requireManagedBy } from './access.js';
import type { ConnectorInstalls } from './installs.js';

/** A customer Organization of a Managed Connector, with its name. */
export type ManagedConnectorCustomer = ManagedConnectorCustomerRow & { orgName: string };

/**
 * The customers of a Managed Connector, which its vendor's managing Organization grants and
 * removes: a grant installs the Connector in the customer's Organization (and on its Agents as
 * they connect), a removal uninstalls it there first.
 */
export async function customersOf(
  db: Db,
  installs: ConnectorInstalls,
  vendorOrgId: number,
  connectorId: string,
): Promise<ManagedConnectorCustomer[]> {
  const m = await requireManagedBy(db, installs.catalogue, vendorOrgId, connectorId);
  return listCustomers(db, m.id);
}

/** Grants `customerOrgId` the Managed Connector and installs it there. */
export async function grantCustomer(
  db: Db,
  installs: ConnectorInstalls,
  vendorOrgId: number,
  connectorId: string,
  customerOrgId: number,
  by: string,
): Promise<ManagedConnectorCustomer> {
  const m = await requireManagedBy(db, installs.catalogue, vendorOrgId, connectorId);
  const customer = await getOrg(db, customerOrgId);
  if (!customer) throw new FerryError('API_NOT_FOUND', `Organization ${customerOrgId} was not found.`);
  await addCustomer(db, { connectorId: m.id, orgId: customer.id, provisionedBy: by, provisionedDate: nowIso() });
  await installs.installInOrg(customer.id, m.id, by);
  const row = (await listCustomers(db, m.id)).find((c) => c.orgId === customer.id);
  if (!row)
    throw new FerryError('API_NOT_FOUND', `Organization ${customer.id} is not a customer of Connector ${m.id}.`);
  return row;
}

/** Removes a customer's access; refused (CON_IN_USE) while its Connections use the Connector. */
export async function removeCustomerOf(
  db: Db,
  installs: ConnectorInstalls,
  vendorOrgId: number,
  connectorId: string,
  customerOrgId: number,
  by: string | null = null,
): Promise<void> {
  const m = await requireManagedBy(db, installs.catalogue, vendorOrgId, connectorId);
  if (!(await hasCustomerAccess(db, m.id, customerOrgId)))
    throw new FerryError('API_NOT_FOUND', `Organization ${customerOrgId} is not a customer of Connector ${m.id}.`);
  if (await getOrgConnector(db, customerOrgId, m.id)) await installs.uninstallFromOrg(customerOrgId, m.id, by);
  await removeCustomer(db, m.id, customerOrgId);
}
