/** Connectors as the Connection commands need them: found by name or ID, and their property form. */
import { z } from 'zod';
import { ApiError, UsageError } from './errors.js';
import type { ApiClient } from './http.js';

export const Connector = z.object({ id: z.string(), name: z.string(), version: z.string().optional() });
export type Connector = z.infer<typeof Connector>;

const UiOptions = z.object({
  uiDecorations: z.array(
    z.object({
      propertyName: z.string(),
      label: z.string().optional(),
      inputType: z.string(),
      isRequired: z.boolean().optional(),
      defaultValue: z.string().optional(),
    }),
  ),
});
export type PropertyForm = z.infer<typeof UiOptions>['uiDecorations'];

const GUID_RE = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/** True for a GUID (an ID rather than a name). */
export function isGuid(text: string): boolean {
  return GUID_RE.test(text);
}

/** The Connector installed in the Organization with this ID or name (any case). */
export async function findConnector(client: ApiClient, orgId: number, nameOrId: string): Promise<Connector> {
  if (isGuid(nameOrId)) return client.call('GET', `/v1/orgs/${orgId}/connectors/${nameOrId}`, Connector);
  const found = await client.call('GET', `/v1/orgs/${orgId}/connectors`, z.array(Connector), {
    query: { name: nameOrId },
  });
  if (found[0]) return found[0];
  const all = await client.call('GET', `/v1/orgs/${orgId}/connectors`, z.array(Connector), { query: { limit: 1000 } });
  throw new UsageError(
    `No Connector named "${nameOrId}" is installed in Organization ${orgId}; installed: ${all.map((c) => c.name).join(', ') || 'none'}`,
  );
}

/**
 * The Connector's property form (its manifest's uiDecorations), or undefined for a Connector with
 * its own user interface (the API answers API_UNSUPPORTED for those).
 */
export async function propertyForm(
  client: ApiClient,
  orgId: number,
  connectorId: string,
): Promise<PropertyForm | undefined> {
  try {
    return (await client.call('GET', `/v1/orgs/${orgId}/connectors/${connectorId}/uioptions`, UiOptions)).uiDecorations;
  } catch (err) {
    if (err instanceof ApiError && err.code === 'API_UNSUPPORTED') return undefined;
    throw err;
  }
}

/** A protected property: entered as a password, never shown. */
export function isProtected(decoration: PropertyForm[number]): boolean {
  return decoration.inputType === 'Password';
}
