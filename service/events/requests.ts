import { randomUUID } from 'node:crypto';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';
import type { RunRequestResult } from '../../src/protocol/events.js';
import type { AgentCommands } from '../agents/commands.js';
import type { MessageTarget } from './message-access.js';

/** The HTTP answer of a request/reply Map. */
export interface HttpReply {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** The reply's fields that set the HTTP status instead of going into the body (any case). */
const STATUS_FIELDS = new Set(['statuscode', 'httpstatus']);

/**
 * Requests to request/reply Maps (docs/events.md, "Request/reply Maps"): the caller's POST is
 * held while the Solution's Agent runs the Map on the request (`runRequest`, through whichever
 * replica holds the Agent's channel), and the reply Send Reply sends is the HTTP answer:
 *
 *   POST …/requests/{mapId} ─▶ runRequest ─▶ Agent: a run of the Map (an execution in History)
 *        ◀── 200 (or the reply's statusCode) with the reply's fields ◀── Send Reply
 *        ◀── 504 EVT_REPLY_TIMEOUT after FERRY_EVENT_REQUEST_TIMEOUT; the run goes on and ends in History
 *        ◀── 422 EVT_REQUEST_FAILED (its record error) / 502 EVT_NO_REPLY / 502 EVT_REQUEST_RUN_FAILED
 *
 * Requests are not queued: an Agent offline answers 503 at once (the caller retries).
 */
export class EventRequests {
  constructor(
    private readonly opts: {
      readonly commands: AgentCommands;
      /** How long the caller waits for the reply, in ms. */
      readonly timeoutMs: number;
    },
  ) {}

  async answer(target: MessageTarget, request: Record<string, unknown>): Promise<HttpReply> {
    if (target.mapId === null)
      throw new FerryError(
        'API_NOT_FOUND',
        `The Map of request endpoint ${target.endpointId} was deleted; a new Map of the same name takes the endpoint over when the Solution is prepared.`,
      );
    if (target.agentId === null)
      throw new FerryError('API_CONFLICT', `Solution ${target.solutionId} has no Agent to run its requests.`);
    const requestId = randomUUID();
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => {
      timer = setTimeout(
        () =>
          reject(
            new FerryError(
              'EVT_REPLY_TIMEOUT',
              `The Map sent no reply within ${Math.round(this.opts.timeoutMs / 1000)} seconds. Its run goes on; its end is in the Solution's History (execution ${requestId}).`,
              { details: { requestId } },
            ),
          ),
        this.opts.timeoutMs,
      );
    });
    try {
      const result = await Promise.race([
        this.opts.commands.send(target.agentId, {
          type: 'runRequest',
          solutionId: target.solutionId,
          mapId: target.mapId,
          requestId,
          request,
        }),
        late,
      ]);
      return httpReply(result, requestId);
    } catch (err) {
      if (isFerryError(err) && err.code === 'CHN_TIMEOUT')
        throw new FerryError('EVT_REPLY_TIMEOUT', 'The Map sent no reply in time.', { details: { requestId } });
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }
}

/** The Agent's answer as HTTP: the reply's fields (its statusCode as the status), or the problem. */
export function httpReply(result: RunRequestResult, requestId: string): HttpReply {
  if (result.reply) {
    let status = 200;
    const body: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(result.reply)) {
      const code = typeof v === 'string' && /^\d{3}$/.test(v) ? Number(v) : v;
      if (STATUS_FIELDS.has(k.toLowerCase()) && typeof code === 'number' && Number.isInteger(code)) {
        if (code >= 100 && code <= 599) status = code;
      } else body[k] = v;
    }
    return { status, body };
  }
  const details = { requestId };
  if (result.error?.record)
    throw new FerryError('EVT_REQUEST_FAILED', `${result.error.code}: ${result.error.message}`, { details });
  if (result.error) throw new FerryError('EVT_REQUEST_RUN_FAILED', result.error.message, { details });
  throw new FerryError(
    'EVT_NO_REPLY',
    'The Map ended without a Send Reply for this request: give every path of the Map a Build Reply and a Send Reply.',
    { details },
  );
}
