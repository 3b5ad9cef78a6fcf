import { randomUUID } from 'node:crypto';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';
import type { RunRequestResult } from '../../src/protocol/events.js';
import type { Kysely } from 'kysely';
import type { AgentCommands } from '../agents/commands.js';
import { isAgentError } from '../gateway/agent-command.js';
import type { Database } from '../store/schema.js';
import { problemOf } from '../util/problem.js';
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
      readonly db: Kysely<Database>;
      readonly commands: AgentCommands;
      /** How long the caller waits for the reply, in ms. */
      readonly timeoutMs: number;
      /**
       * Brings the Agent's copies of its Solutions up to date: a request that finds the Agent without
       * the Map (a prepare whose definition has not reached it yet) is sent once more after it.
       */
      readonly sync?: (agentId: string) => Promise<void>;
    },
  ) {}

  /**
   * `Prefer: respond-async`: the request is sent as {@link answer} sends it, and its answer is
   * written to `event_replies` for {@link replyOf}; resolves with the request's ID once the pending
   * row is written (the caller answers 202).
   */
  async answerLater(target: MessageTarget, request: Record<string, unknown>): Promise<string> {
    const requestId = randomUUID();
    const { db } = this.opts;
    await db
      .insertInto('eventReplies')
      .values({
        id: requestId,
        endpointId: target.endpointId,
        state: 'pending',
        status: null,
        body: null,
        createdMs: Date.now(),
      })
      .execute();
    const write = (status: number, body: unknown, problem: boolean) =>
      db
        .updateTable('eventReplies')
        .set({ state: 'done', status, body: JSON.stringify(body), problem: problem ? 1 : 0 })
        .where('id', '=', requestId)
        .execute();
    void this.answer(target, request, requestId)
      .then((a) => write(a.status, a.body, false))
      .catch((err: unknown) => {
        const problem = problemOf(
          isFerryError(err) ? err : new FerryError('SVC_INTERNAL', 'The request could not be answered.'),
          `/v1/orgs/${target.orgId}/requests`,
        );
        return write(problem.status, problem, true);
      })
      .catch(() => undefined);
    return requestId;
  }

  /**
   * The answer of a `respond-async` request: undefined while pending (and not yet past the time-out
   * and a margin: then the replica that held it is gone, and the answer is 504).
   */
  async replyOf(
    endpointId: number,
    requestId: string,
  ): Promise<{ status: number; body: string; problem: boolean } | undefined> {
    const row = await this.opts.db
      .selectFrom('eventReplies')
      .selectAll()
      .where('id', '=', requestId.toLowerCase())
      .where('endpointId', '=', endpointId)
      .executeTakeFirst();
    if (!row)
      throw new FerryError(
        'API_NOT_FOUND',
        `No reply ${requestId.slice(0, 40)} on this endpoint (replies are kept 24 hours).`,
      );
    if (row.state === 'done' && row.status !== null && row.body !== null)
      return { status: row.status, body: row.body, problem: row.problem === 1 };
    if (Date.now() - Number(row.createdMs) > this.opts.timeoutMs + 30_000)
      throw new FerryError(
        'EVT_REPLY_TIMEOUT',
        'No reply was written for this request in time; its run is in History.',
        {
          details: { requestId },
        },
      );
    return undefined;
  }

  async answer(target: MessageTarget, request: Record<string, unknown>, requestId = randomUUID()): Promise<HttpReply> {
    if (target.mapId === null)
      throw new FerryError(
        'API_NOT_FOUND',
        `The Map of request endpoint ${target.endpointId} was deleted; a new Map of the same name takes the endpoint over when the Solution is prepared.`,
      );
    if (target.agentId === null)
      throw new FerryError('API_CONFLICT', `Solution ${target.solutionId} has no Agent to run its requests.`);
    const agentId = target.agentId;
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
      const command = {
        type: 'runRequest',
        solutionId: target.solutionId,
        mapId: target.mapId,
        requestId,
        request,
      } as const;
      const send = async () => {
        try {
          return await this.opts.commands.send(agentId, command);
        } catch (err) {
          if (!this.opts.sync || !isAgentError(err, 'AGT_SOLUTION_NOT_HELD')) throw err;
          await this.opts.sync(agentId);
          return await this.opts.commands.send(agentId, command);
        }
      };
      const result = await Promise.race([send(), late]);
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
