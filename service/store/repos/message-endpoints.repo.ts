import type { Db } from '../sql.js';

/** A Message Endpoint as the API shows it (SPEC.md's model; timestamps ISO-8601 UTC). */
export interface MessageEndpoint {
  id: number;
  entityName: string;
  mapName: string;
  mapDescription: string | null;
  messageCount: number;
  createDateTime: string;
  lastModificationDate: string;
}

/** What the Message Endpoint routes need from the store. */
export interface MessageEndpointRepo {
  /** One page of the Organization's endpoints, ordered by id, and how many there are in all. */
  list(orgId: number, page: { limit: number; offset: number }): Promise<{ items: MessageEndpoint[]; total: number }>;
  /** Empties the endpoint's message queue; the endpoint afterwards, or undefined when the Organization has no such endpoint. */
  clear(orgId: number, endpointId: number): Promise<MessageEndpoint | undefined>;
}

/**
 * The Message Endpoints of the store. Event Solutions (whose Maps own the endpoints) do not exist
 * yet, so there is no table and no endpoint: the issue that adds them replaces this body with
 * queries and leaves the routes as they are.
 */
export function messageEndpointsRepo(_db: Db): MessageEndpointRepo {
  return {
    list: async () => ({ items: [], total: 0 }),
    clear: async () => undefined,
  };
}
