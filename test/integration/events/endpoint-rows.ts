import { expect } from 'vitest';
import type { TestService } from '../../helpers/service.js';

/** A Message Endpoint made as prepare makes it, and the Event Solution it belongs to. */
export interface TestEndpoint {
  /** The Map ID of its URL (`…/messages/{mapId}`). */
  readonly mapId: number;
  readonly id: number;
  readonly solutionId: string;
}

/**
 * An Event Solution of `agentId` named `name` (through the API) and its Message Endpoint for the
 * URL Map ID `mapId`, written as prepare writes it: the intake tests need an endpoint, not a Map.
 */
export async function eventEndpoint(
  svc: TestService,
  agentId: string,
  name: string,
  mapId: number,
): Promise<TestEndpoint> {
  const created = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/solutions`, {
    body: { name, solutionType: 'IntegrationEvent', agentId },
  });
  expect(created.status, created.text).toBe(201);
  const now = new Date().toISOString();
  const row = await svc.service.store.db
    .insertInto('messageEndpoints')
    .values({
      orgId: svc.orgId,
      solutionId: created.body.id,
      urlMapId: mapId,
      mapId: null,
      kind: 'message',
      mapName: `${name} map`,
      mapKey: `${name} map`.toLowerCase(),
      entityName: 'Order',
      mapDescription: null,
      createdAt: now,
      modifiedAt: now,
    })
    .returning('id')
    .executeTakeFirstOrThrow();
  return { mapId, id: Number(row.id), solutionId: created.body.id };
}
