import type { SecretBox } from '../../crypto/master-key.js';
import { encryptProperty } from '../../connections/properties-crypto.js';
import { cryptoTokenOf, type PlainProperties } from '../../connections/properties.js';
import { protectedKeys, type ConnectorCatalogue } from '../../marketplace/catalogue.js';
import type { ConnectionRow, ConnectionTestRow, OrgRow } from '../../store/schema.js';
import type { Connection, TestStarted, TestStatus } from '../schemas/connection.schema.js';

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
    properties: names.map((key) => ({
      key,
      value: protectedSet.has(key.toLowerCase()) ? '' : encryptProperty(props[key] ?? '', cryptoToken),
    })),
    createDateTime: row.createDateTime,
    lastModificationDateTime: row.lastModificationDateTime,
    modificationBy: row.modificationBy,
    usedInSolutions: usedInSolutions.join(', '),
    lastTestedAgentId: row.lastTestedAgentId,
  };
}

/** The API model of a stored test or preconnect; replyData values encrypted with the crypto token. */
export function commandStatus(deps: { readonly secrets: SecretBox }, org: OrgRow, row: ConnectionTestRow): TestStatus {
  let replyData: Array<{ key: string; value: string }> = [];
  if (row.replyData) {
    const token = cryptoTokenOf(deps.secrets, org);
    const plain = JSON.parse(deps.secrets.open(row.replyData)) as Record<string, string>;
    replyData = Object.entries(plain).map(([key, value]) => ({ key, value: encryptProperty(value, token) }));
  }
  return { id: row.id, commandId: row.id, name: row.name, status: row.status, reply: row.reply, replyData };
}

/** The answer to a test request: the commandId, also as `id`. */
export function testStarted({ commandId }: { commandId: string }): TestStarted {
  return { id: commandId, commandId };
}
