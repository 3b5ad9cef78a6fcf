import { FerryError, type FieldError } from '../../src/errors/ferry-error.js';
import type { ConnectorManifest } from '../../src/protocol/connector-manifest.js';
import type { SecretBox } from '../crypto/master-key.js';
import { protectedKeys } from '../marketplace/catalogue.js';
import type { ConnectionRow, OrgRow } from '../store/schema.js';
import { decryptProperty } from './properties-crypto.js';

/** Plain property values by the Connector's property names. */
export type PlainProperties = Record<string, string>;

/** Properties as a client sends them: values encrypted with the Organization's crypto token. */
export type PropertyInput = ReadonlyArray<{ key: string; value?: string | null | undefined }> | null | undefined;

/** The Organization's crypto token in plain text (stored sealed). */
export function cryptoTokenOf(secrets: SecretBox, org: Pick<OrgRow, 'apiCryptoToken'>): string {
  return secrets.open(org.apiCryptoToken);
}

/** A stored Connection's plain properties (stored sealed with the master key). */
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
  input: PropertyInput,
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
    throw new FerryError(
      'API_VALIDATION',
      `The properties do not match the Connector ${manifest.name}: ${errors.map((e) => e.message).join('; ')}.`,
      { errors },
    );
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
 * The properties of a Connector's preconnect step from a client's `[{key, value}]`: only the keys
 * sent, each a property of the Connector (case-insensitive), values decrypted with the crypto token.
 */
export function preconnectProperties(
  manifest: ConnectorManifest,
  input: NonNullable<PropertyInput>,
  cryptoToken: string,
): PlainProperties {
  const names = new Map(manifest.uiDecorations.map((d) => [d.propertyName.toLowerCase(), d.propertyName]));
  const properties: PlainProperties = {};
  input.forEach((p, i) => {
    const name = names.get(p.key.toLowerCase());
    if (!name)
      throw new FerryError('API_VALIDATION', `${manifest.name} has no property ${p.key}.`, {
        errors: [{ path: `body.properties.${i}.key`, message: 'no such property' }],
      });
    properties[name] = p.value ? decryptProperty(p.value, cryptoToken, name) : '';
  });
  return properties;
}
