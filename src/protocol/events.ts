import { z } from 'zod';

/**
 * Event Solutions between the Service and the Agent (docs/events.md):
 *
 *   caller ─POST /v1/orgs/{orgId}/messages/{mapId}─▶ Service: committed to the queue, then 200
 *   Service ─messagesWaiting {solutionId}─▶ Agent (coalesced; also after every connect)
 *   Agent run ─POST /v1/agent/messages/take {mapId, runId, max: 20, done}─▶ Service
 *        ◀─ the oldest messages no live lease holds, leased to the run ──┘
 *   Agent: the Map writes the batch ─▶ its IDs go back as `done` with the next take (or alone):
 *        only then do they leave the queue. A run that ends (or ended with its Agent: runFinished
 *        RUN_AGENT_ENDED) gives back what it still holds; a lease that passes gives it back too.
 */

const Id = z.string().min(1).max(100);

/** The Service has stored messages for one of the Solution's message Maps: the Agent drains its queues. */
export const MessagesWaitingCommand = z.object({
  id: Id,
  type: z.literal('messagesWaiting'),
  solutionId: Id,
});
export type MessagesWaitingCommand = z.infer<typeof MessagesWaitingCommand>;

export const MessagesWaitingResult = z.object({
  /** A run of the Solution takes its messages now (it takes again before it ends). */
  draining: z.boolean(),
});
export type MessagesWaitingResult = z.infer<typeof MessagesWaitingResult>;

/** The batch the original service delivered, and Ferry's while the queue is shallow. */
export const MESSAGE_BATCH = 20;

/** The largest take: a deep queue is drained in batches growing from 20 to this. */
export const MAX_TAKE = 200;

/** `POST /v1/agent/messages/take`: leases the next messages of one message Map to a run, after marking `done` ones written. */
export const TakeMessagesRequest = z.object({
  solutionId: Id,
  mapId: z.number().int(),
  runId: Id,
  /** How many to lease (0: only acknowledge `done`). */
  max: z.number().int().min(0).max(MAX_TAKE),
  /** Messages this run wrote (or recorded the errors of): they leave the queue. */
  done: z.array(z.number().int()).max(10_000).default([]),
});
export type TakeMessagesRequest = z.input<typeof TakeMessagesRequest>;

export const TakenMessage = z.object({ id: z.number().int(), body: z.record(z.string(), z.unknown()) });
export type TakenMessage = z.infer<typeof TakenMessage>;

export const TakeMessagesResponse = z.object({
  /** Oldest first. Empty: the queue has nothing this run may take now. */
  messages: z.array(TakenMessage),
});
export type TakeMessagesResponse = z.infer<typeof TakeMessagesResponse>;

export const TAKE_MESSAGES_PATH = '/v1/agent/messages/take';

/** A request/reply Map's request: the Agent runs the Map on it and answers with the reply it sends. */
export const RunRequestCommand = z.object({
  id: Id,
  type: z.literal('runRequest'),
  solutionId: Id,
  mapId: z.number().int(),
  /** The run's ID in History (the Service's). */
  requestId: Id,
  /** The request, a JSON object: the Wait For Request Block's record. */
  request: z.record(z.string(), z.unknown()),
});
export type RunRequestCommand = z.infer<typeof RunRequestCommand>;

export const RunRequestResult = z.object({
  /** What Send Reply sent; null when the Map ended without a reply. */
  reply: z.record(z.string(), z.unknown()).nullable(),
  /** Why there is no reply: the request's record error, or the run's fatal error. */
  error: z.object({ code: z.string().max(100), message: z.string().max(10_000), record: z.boolean() }).optional(),
});
export type RunRequestResult = z.infer<typeof RunRequestResult>;
