import { z } from 'zod';
import { decimal, MAX_INT, OrgParams, Timestamp } from './common.js';

/**
 * The Message Endpoint model of SPEC.md: the inbound queue of one Event Solution Map (a Map that
 * begins with a Wait For Message Block). Its URL is not part of the model (SPEC.md, gaps).
 */
export const MessageEndpoint = z.object({
  id: z.number().int(),
  entityName: z.string().describe('entity of the Wait For Message Block'),
  mapName: z.string(),
  mapDescription: z.string().nullable(),
  messageCount: z.number().int().describe('messages received by the Map and not cleared'),
  createDateTime: Timestamp,
  lastModificationDate: Timestamp,
});
export type MessageEndpoint = z.infer<typeof MessageEndpoint>;

export const MessageEndpointParams = OrgParams.extend({
  endpointid: decimal(z.number().int().positive().max(MAX_INT)),
});
