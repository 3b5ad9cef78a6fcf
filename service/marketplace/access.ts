import { FerryError } from '../../src/errors/ferry-error.js';
import type { ConnectorManifest } from '../../src/protocol/connector-manifest.js';
import { hasCustomerAccess, managedConnectorVendor } from '../store/repos/connector-installs.repo.js';
import type { Db } from '../store/sql.js';
import type { ConnectorCatalogue } from './catalogue.js';

/**
 * Who may see and install which Connector: everyone a public one; a private (Managed) Connector
 * its vendor's managing Organization and the customers that Organization granted.
 */
export async function canUse(db: Db, orgId: number, m: ConnectorManifest): Promise<boolean> {
  if (m.isPublic) return true;
  if ((await managedConnectorVendor(db, m.id)) === orgId) return true;
  return hasCustomerAccess(db, m.id, orgId);
}

/** The Managed Connector that `vendorOrgId` manages; CON_NOT_MANAGED for any other Connector. */
export async function requireManagedBy(
  db: Db,
  catalogue: ConnectorCatalogue,
  vendorOrgId: number,
  connectorId: string,
): Promise<ConnectorManifest> {
  const m = catalogue.get(connectorId);
  if (!m || m.isPublic || (await managedConnectorVendor(db, m.id)) !== vendorOrgId) {
    throw new FerryError('CON_NOT_MANAGED', `Organization ${vendorOrgId} does not manage Connector ${connectorId}.`, {
      details: { connectorId },
    });
  }
  return m;
}
