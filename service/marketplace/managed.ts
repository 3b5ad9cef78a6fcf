import type { ConnectorManifest } from '../../src/protocol/connector-manifest.js';
import { connectorsManagedBy } from '../store/repos/connector-installs.repo.js';
import type { Db } from '../store/sql.js';
import type { ConnectorCatalogue } from './catalogue.js';

/**
 * The Managed Connectors an Organization is the vendor of (set by `ferry service manage-connector`),
 * by name; `name` keeps those whose name holds it, in any case.
 */
export async function managedConnectorsOf(
  db: Db,
  catalogue: ConnectorCatalogue,
  vendorOrgId: number,
  name?: string,
): Promise<ConnectorManifest[]> {
  const needle = name?.toLowerCase();
  return (await connectorsManagedBy(db, vendorOrgId))
    .map((id) => catalogue.get(id))
    .filter(
      (m): m is ConnectorManifest =>
        m !== undefined && !m.isPublic && (needle === undefined || m.name.toLowerCase().includes(needle)),
    )
    .sort((a, b) => a.name.localeCompare(b.name));
}
