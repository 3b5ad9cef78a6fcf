import { FerryError } from '../../src/errors/ferry-error.js';
import type { ConnectorManifest } from '../../src/protocol/connector-manifest.js';
import { installedConnectors, requireAgent } from '../agents/agents.js';
import type { SecretBox } from '../crypto/master-key.js';
import type { ConnectorCatalogue } from '../marketplace/catalogue.js';
import type { ConnectorInstalls } from '../marketplace/installs.js';
import {
  deleteConnection,
  getConnection,
  insertConnection,
  listConnections,
  updateConnection,
} from '../store/repos/connections.repo.js';
import { resetMetadataCache } from '../store/repos/metadata.repo.js';
import { solutionNamesUsingConnection } from '../store/repos/solutions.repo.js';
import type { ConnectionRow, OrgRow } from '../store/schema.js';
import type { Db } from '../store/sql.js';
import { newId, nowIso } from '../util/values.js';
import {
  cryptoTokenOf,
  openProperties,
  resolveProperties,
  sealProperties,
  type PlainProperties,
  type PropertyInput,
} from './properties.js';

export const connectionNotFound = (orgId: number, id: string): FerryError =>
  new FerryError('API_NOT_FOUND', `Connection ${id} was not found in Organization ${orgId}.`);

/** The alias of a name: its letters and digits (SPEC.md: no special characters or spaces). */
export function aliasOf(name: string): string {
  const alias = name.normalize('NFKD').replace(/[^A-Za-z0-9]/g, '');
  return alias.length > 0 ? alias.slice(0, 255) : 'Connection';
}

/** Names of the Solutions that use the Connection; a used Connection cannot be deleted (SPEC.md). */
export async function solutionsUsingConnection(db: Db, connectionId: string): Promise<string[]> {
  return solutionNamesUsingConnection(db, connectionId);
}

/** The Connector of a Connection model a client sent; unknown → 400 naming connectorId. */
export function connectorOfInput(catalogue: ConnectorCatalogue, connectorId: string): ConnectorManifest {
  const m = catalogue.get(connectorId);
  if (!m) {
    throw new FerryError('API_VALIDATION', `Connector ${connectorId} does not exist.`, {
      errors: [{ path: 'body.connectorId', message: 'no such Connector' }],
    });
  }
  return m;
}

/** A Connection as a client sends it (create and modify); properties encrypted with the crypto token. */
export interface ConnectionChange {
  readonly id?: string | null | undefined;
  readonly connectionId?: string | null | undefined;
  readonly name: string;
  readonly alias?: string | null | undefined;
  readonly connectorId: string;
  readonly color: string;
  readonly properties?: PropertyInput;
}

export interface ConnectionsOptions {
  readonly db: Db;
  readonly secrets: SecretBox;
  readonly marketplace: ConnectorInstalls;
}

/**
 * Connections of an Organization (SPEC.md "Connections"): a Connector and its property values,
 * stored sealed with the master key and exchanged encrypted with the Organization's crypto token.
 */
export class Connections {
  constructor(private readonly opts: ConnectionsOptions) {}

  get catalogue(): ConnectorCatalogue {
    return this.opts.marketplace.catalogue;
  }

  async require(orgId: number, id: string): Promise<ConnectionRow> {
    const row = await getConnection(this.opts.db, orgId, id);
    if (!row) throw connectionNotFound(orgId, id);
    return row;
  }

  /** The plain properties of a stored Connection. */
  properties(row: Pick<ConnectionRow, 'properties'>): PlainProperties {
    return openProperties(this.opts.secrets, row);
  }

  /** The Organization's crypto token, which property values travel encrypted with. */
  cryptoToken(org: Pick<OrgRow, 'apiCryptoToken'>): string {
    return cryptoTokenOf(this.opts.secrets, org);
  }

  /** The Organization's Connections by name; with `agentId`, only those that Agent can run (its Connectors, cloud-supported on a Cloud Agent). */
  async list(
    orgId: number,
    filter: { agentId?: string | undefined; name?: string | undefined },
  ): Promise<ConnectionRow[]> {
    const { db } = this.opts;
    const rows = await listConnections(db, orgId, { name: filter.name });
    if (filter.agentId === undefined) return rows;
    const agent = await requireAgent(db, orgId, filter.agentId);
    const installed = new Set(installedConnectors(agent).map((c) => c.connectorId.toLowerCase()));
    return rows.filter(
      (r) =>
        installed.has(r.connectorId.toLowerCase()) &&
        (agent.isCloudAgent !== 1 || this.catalogue.get(r.connectorId)?.isCloudSupported === true),
    );
  }

  /** Creates a Connection of a Connector installed in the Organization, within its Subscription's limit. */
  async create(org: OrgRow, input: ConnectionChange, by: string): Promise<ConnectionRow> {
    const manifest = connectorOfInput(this.catalogue, input.connectorId);
    await this.opts.marketplace.requireInstalled(org.id, manifest.id);
    const props = resolveProperties(manifest, input.properties, this.cryptoToken(org));
    await this.opts.marketplace.checkConnectionLimit(org.id, manifest);
    const now = nowIso();
    const row: ConnectionRow = {
      id: newId(),
      orgId: org.id,
      name: input.name,
      nameKey: input.name.toLowerCase(),
      alias: input.alias ?? aliasOf(input.name),
      connectorId: manifest.id,
      color: input.color,
      properties: sealProperties(this.opts.secrets, props),
      createDateTime: now,
      lastModificationDateTime: now,
      modificationBy: by,
      lastTestedAgentId: null,
    };
    await insertConnection(this.opts.db, row);
    return row;
  }

  /**
   * Modifies a Connection. Omitted protected properties keep their value, unless the Connector
   * changes (another Connector has other properties: nothing of the old ones is kept). New
   * properties may reach another datastore, so the cached metadata is reset.
   */
  async update(org: OrgRow, id: string, input: ConnectionChange, by: string): Promise<ConnectionRow> {
    const { db } = this.opts;
    const current = await this.require(org.id, id);
    const bodyId = input.id ?? input.connectionId;
    if (bodyId && bodyId.toLowerCase() !== current.id) {
      throw new FerryError('API_VALIDATION', 'The Connection ID in the body differs from the one in the path.', {
        errors: [{ path: 'body.id', message: `must be ${current.id}` }],
      });
    }
    const manifest = connectorOfInput(this.catalogue, input.connectorId);
    const previous: PlainProperties | undefined =
      manifest.id.toLowerCase() === current.connectorId.toLowerCase() ? this.properties(current) : undefined;
    const props = resolveProperties(manifest, input.properties, this.cryptoToken(org), previous ?? {});
    const found = await updateConnection(db, org.id, current.id, {
      name: input.name,
      nameKey: input.name.toLowerCase(),
      alias: input.alias ?? current.alias,
      connectorId: manifest.id,
      color: input.color,
      properties: sealProperties(this.opts.secrets, props),
      lastModificationDateTime: nowIso(),
      modificationBy: by,
    });
    if (!found) throw connectionNotFound(org.id, current.id);
    await resetMetadataCache(db, current.id);
    return this.require(org.id, current.id);
  }

  /** Deletes a Connection that no Solution uses (SPEC.md). */
  async delete(orgId: number, id: string): Promise<void> {
    const { db } = this.opts;
    const row = await this.require(orgId, id);
    const usedIn = await solutionsUsingConnection(db, row.id);
    if (usedIn.length > 0) {
      throw new FerryError(
        'API_IN_USE',
        `Connection ${row.name} is used by the Solutions ${usedIn.join(', ')}; change them to another Connection first.`,
      );
    }
    if (!(await deleteConnection(db, orgId, row.id))) throw connectionNotFound(orgId, row.id);
  }
}
