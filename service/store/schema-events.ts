/** Table types of Event Solutions: Message Endpoints, their queues and idempotency keys. Part of the one schema (schema.ts). */
import type { Generated } from 'kysely';

/** A Message (or request) Endpoint of an Event Solution's Map (migration 035; service/events/). */
export interface MessageEndpointsTable {
  id: Generated<number>;
  orgId: number;
  solutionId: string;
  /** The Map ID the endpoint's URL names: it stays when the Map is deleted and another takes it over. */
  urlMapId: number;
  /** The Map that receives the messages now; null after the Map was deleted. */
  mapId: number | null;
  /** `message` (Wait For Message) or `request` (Wait For Request). */
  kind: string;
  mapName: string;
  /** The Map's name in lower case: a new Map of the same name takes the endpoint over. */
  mapKey: string;
  entityName: string;
  mapDescription: string | null;
  /** Messages received, ever. */
  messageCount: Generated<number>;
  /** Messages waiting now (the back-pressure limit). */
  queued: Generated<number>;
  createdAt: string;
  modifiedAt: string;
}

/** A message waiting for its Map, in order of arrival (migration 035; service/events/). */
export interface EventMessagesTable {
  id: Generated<number>;
  endpointId: number;
  /** The message, a JSON object. */
  body: string;
  receivedMs: number;
  /** The Agent run that took it, until `leaseUntilMs` (ms since the epoch by the database's clock). */
  leaseRun: string | null;
  leaseUntilMs: number | null;
}

/** An `Idempotency-Key` an accepted POST carried (migration 035). */
export interface EventIdempotencyTable {
  endpointId: number;
  key: string;
  /** How many messages the POST stored: the answer a retry gets. */
  messages: number;
  createdMs: number;
}

/** The reply of a request sent with `Prefer: respond-async` (migration 036; service/events/requests.ts). */
export interface EventRepliesTable {
  /** The request's ID, also its run's in History. */
  id: string;
  endpointId: number;
  /** `pending` until the answer is written, then `done`. */
  state: string;
  status: number | null;
  /** The answer's body as sent (JSON text). */
  body: string | null;
  /** 1 when the body is a problem document. */
  problem: Generated<number>;
  createdMs: number;
}
