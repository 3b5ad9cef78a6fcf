import { FerryError, type FieldError } from '../../src/errors/ferry-error.js';
import type { ConnectorManifest } from '../../src/protocol/connector-manifest.js';
import type { SecretBox } from '../crypto/master-key.js';
import { decryptProperty, encryptProperty } from '../crypto/connection-crypto.js';
import type { Db } from '../store/sql.js';
import type { ConnectionRow, OrgRow } from '../store/schema.js';
import { protectedKeys, type ConnectorCatalogue } from '../marketplace/catalogue.js';
import type { Connection, ConnectionInput } from './schemas/connection.schema.js';

/** Plain property values by the Connector's property names. */
export type PlainProperties = Record<string, string>;

export const connectionNotFound = (orgId: number, id: string): FerryError =>
  new FerryError('API_NOT_FOUND', `Connection ${id} was not found in Organization ${orgId}.`);

/** The alias of a name: its letters and digits (SPEC.md: no special characters or spaces). */
export function aliasOf(name: string): string {
  const alias = name.normalize('NFKD').replace(/[^A-Za-z0-9]/g, '');
  return alias.length > 0 ? alias.slice(0, 255) : 'Connection';
}

/**
 * Names of the Solutions that use the Connection; a used Connection cannot be deleted (SPEC.md).
 * Solutions do not exist yet: the Solutions issue fills this in with a query on its table.
 */
export async function solutionsUsingConnection(_db: Db, _connectionId: string): Promise<string[]> {
  return [];
}

/** The Organization's crypto token in plain text (stored sealed). */
export function cryptoTokenOf(secrets: SecretBox, org: Pick<OrgRow, 'apiCryptoToken'>): string {
  return secrets.open(org.apiCryptoToken);
}

export function openProperties(secrets: SecretBox, row: Pick<ConnectionRow, 'properties'>): PlainProperties {
  const parsed: unknown = JSON.parse(secrets.open(row.properties));
  if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return {};
  const out: PlainProperties = {};
  for (const [k, v] of Object.entries(parsed as Record<string, unknown>)) if (typeof v === 'string') out[k] = v;
  return out;
}

export function sealProperties(secrets: SecretBox, props: PlainProperties): string {
  return secrets.seal(JSON.stringify(props));
}

/**
 * The plain properties of a Connection from a client's `[{key, value}]`, every value encrypted with
 * the crypto token. Keys match the Connector's property names case-insensitively; an unknown or
 * repeated key is a 400. A property that is omitted, or sent with an empty value, becomes blank,
 * except a protected one when `previous` is given (update): that keeps its value. To blank a
 * protected property, send an encrypted empty string.
 */
export function resolveProperties(
  manifest: ConnectorManifest,
  input: ConnectionInput['properties'],
  cryptoToken: string,
  previous?: PlainProperties,
): PlainProperties {
  const byKey = new Map(manifest.uiDecorations.map((d) => [d.propertyName.toLowerCase(), d.propertyName]));
  const given = new Map<string, string>();
  const errors: FieldError[] = [];
  (input ?? []).forEach((p, i) => {
    const name = byKey.get(p.key.toLowerCase());
    if (!name) errors.push({ path: `body.properties.${i}.key`, message: `${manifest.name} has no property ${p.key}` });
    else if (given.has(name)) errors.push({ path: `body.properties.${i}.key`, message: `${name} is given twice` });
    else given.set(name, p.value ?? '');
  });
  if (errors.length > 0) {
    throw new FerryError('API_VALIDATION', `The properties do not match the Connector ${manifest.name}: ${errors.map((e) => e.message).join('; ')}.`, { errors });
  }
  const protectedSet = protectedKeys(manifest);
  const out: PlainProperties = {};
  for (const d of manifest.uiDecorations) {
    const name = d.propertyName;
    const value = given.get(name) ?? '';
    if (value !== '') out[name] = decryptProperty(value, cryptoToken, name);
    else if (previous && protectedSet.has(name.toLowerCase())) out[name] = previous[name] ?? '';
    else out[name] = '';
  }
  return out;
}

/**
 * The Connection model: every property of the Connector in its order, values encrypted with the
 * crypto token; protected properties are always blank (never returned, not even encrypted).
 */
export function toConnection(
  row: ConnectionRow,
  catalogue: ConnectorCatalogue,
  props: PlainProperties,
  cryptoToken: string,
  usedInSolutions: readonly string[] = [],
): Connection {
  const manifest = catalogue.get(row.connectorId);
  const protectedSet = manifest ? protectedKeys(manifest) : new Set<string>();
  const names = manifest ? manifest.uiDecorations.map((d) => d.propertyName) : Object.keys(props);
  return {
    id: row.id,
    connectionId: row.id,
    name: row.name,
    alias: row.alias,
    connectorId: row.connectorId,
    connectorType: manifest?.name ?? '',
    color: row.color,
    properties: names.map((key) => ({ key, value: protectedSet.has(key.toLowerCase()) ? '' : encryptProperty(props[key] ?? '', cryptoToken) })),
    createDateTime: row.createDateTime,
    lastModificationDateTime: row.lastModificationDateTime,
    modificationBy: row.modificationBy,
    usedInSolutions: usedInSolutions.join(', '),
  };
}

/** The Connector of a Connection model a client sent; unknown → 400 naming connectorId. */
export function connectorOfInput(catalogue: ConnectorCatalogue, connectorId: string): ConnectorManifest {
  const m = catalogue.get(connectorId);
  if (!m) {
    throw new FerryError('API_VALIDATION', `Connector ${connectorId} does not exist.`, { errors: [{ path: 'body.connectorId', message: 'no such Connector' }] });
  }
  return m;
}
