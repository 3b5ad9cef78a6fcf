import type { FastifyReply, FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { FerryError, isFerryError } from '../../../src/errors/ferry-error.js';
import { MessageIntake } from '../../events/intake.js';
import { EventRequests } from '../../events/requests.js';
import { messageTarget, type MessageTarget } from '../../events/message-access.js';
import { MAX_MESSAGE_BYTES, MESSAGE_TYPES, messagesOf } from '../../events/message-body.js';
import type { ServiceDeps } from '../deps.js';
import { decimal, MAX_INT, OrgParams } from '../schemas/common.js';

/** Room for the brackets and commas of an array of messages beyond one message of the largest size. */
const ARRAY_MARGIN = 1024 * 1024;

/** The longest `Idempotency-Key`. */
const MAX_IDEMPOTENCY_KEY = 200;

/** Seconds a sender whose endpoint queue is full is told to wait. */
const RETRY_AFTER_SECONDS = 5;

const MessageParams = OrgParams.extend({
  mapId: decimal(z.number().int().positive().max(MAX_INT)).describe('The Map ID of the Message Map (its eventUrl)'),
});

const MessageQuery = z.object({
  accesstoken: z
    .string()
    .optional()
    .describe("The Organization's eventSolutionAccessToken (the parameter name in any case)"),
});

const Accepted = z.object({
  accepted: z.number().int().describe('Messages the POST stored (for a replay: what the first POST stored)'),
  endpointId: z.number().int().describe('The Message Endpoint that queued them'),
  duplicate: z.boolean().optional().describe('true when the Idempotency-Key was seen: nothing was stored again'),
});

/**
 * The body as read: its bytes inside an object, since hooks of the app walk a body's own keys
 * (agent-param.ts), and a Buffer of 20 MB has 20 million of them.
 */
class RawBody {
  constructor(readonly bytes: Buffer) {}
}

/**
 * The public intake of Event Solutions' Message Maps (docs/events.md): outside systems POST messages
 * with the Organization's Event Solution access token, from an address a Security Rule with
 * eventSolutionAccessEnabled covers. The caller is checked before the body is read; the messages
 * are stored by the group commit of {@link MessageIntake}, and the answer comes after the commit.
 * Not counted by the API rate limit: a queue limit per endpoint holds senders back instead.
 */
const messagesRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const intake = new MessageIntake({
    db: deps.store.db,
    events: deps.events,
    queueLimit: deps.config.eventQueueLimit,
    log: deps.log,
  });
  app.addHook('onClose', async () => intake.close());
  const admitted = admission(deps, 'message');
  const bodyLimit = Math.max(deps.config.bodyLimit, MAX_MESSAGE_BYTES + ARRAY_MARGIN);

  // Every body is read as bytes (JSON, XML, or no declared type), only after the caller was admitted.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (req, payload, done) => readBody(req, payload, bodyLimit, done));

  app.post(
    '/v1/orgs/:orgId/messages/:mapId',
    {
      config: { access: 'public', bodyTypes: MESSAGE_TYPES },
      // The token is in the URL and the headers: the request lines (debug) are not written for this route.
      logLevel: 'info',
      onRequest: async (req, reply) => {
        await admitted.onRequest(req, reply);
        idempotencyKeyOf(req);
      },
      schema: {
        tags: ['Event messages'],
        summary: 'Send messages to a Message Map of an Event Solution (its eventUrl)',
        description:
          'Public: no Basic credentials; the token goes in ?accesstoken=, the header X-Access-Token or Authorization: Bearer. ' +
          'The caller must be inside a Security Rule with eventSolutionAccessEnabled. The body is one message (a JSON object), ' +
          'several (a JSON array of objects, stored in order) or one XML document (converted to an object). ' +
          `A message may be at most ${MAX_MESSAGE_BYTES} bytes. An Idempotency-Key header (at most ${MAX_IDEMPOTENCY_KEY} characters) ` +
          'makes a retried POST store nothing again. 200 comes after the messages are committed; 429 with Retry-After when the queue is full.',
        security: [],
        params: MessageParams,
        querystring: MessageQuery,
        response: { 200: Accepted },
      },
    },
    async (req) => {
      const target = admitted.targetOf(req);
      const idempotencyKey = idempotencyKeyOf(req);
      const bodies = messagesOf(req.body instanceof RawBody ? req.body.bytes : undefined, req.headers['content-type']);
      const limit = deps.config.eventQueueLimit;
      if (bodies.length > limit) {
        throw new FerryError(
          'EVT_MESSAGE_TOO_LARGE',
          `The body holds ${bodies.length} messages, more than a Message Endpoint queue holds (${limit}): send them in smaller POSTs.`,
        );
      }
      const outcome = await intake.accept({ ...target, bodies, idempotencyKey });
      switch (outcome.status) {
        case 'stored':
          return { accepted: outcome.count, endpointId: target.endpointId };
        case 'duplicate':
          return { accepted: outcome.count, endpointId: target.endpointId, duplicate: true };
        case 'full':
          throw new FerryError(
            'EVT_QUEUE_FULL',
            `The queue of Message Endpoint ${target.endpointId} holds ${outcome.queued} messages and takes at most ${outcome.limit}; nothing was stored. Send the messages again in ${RETRY_AFTER_SECONDS} seconds, once the Solution's Agent has taken some.`,
            { details: { retryAfterSeconds: RETRY_AFTER_SECONDS, queued: outcome.queued, limit: outcome.limit } },
          );
        case 'gone':
          throw new FerryError(
            'API_NOT_FOUND',
            `Message Endpoint ${target.endpointId} was removed; nothing was stored.`,
          );
      }
    },
  );
};

/**
 * The hook of a public route that checks the caller before its body is read (a refused caller
 * sends no 20 MB for nothing), and the endpoint it found, for the route's handler.
 */
function admission(deps: ServiceDeps, kind: 'message' | 'request') {
  const found = new WeakMap<FastifyRequest, MessageTarget>();
  return {
    onRequest: async (req: FastifyRequest, reply: FastifyReply): Promise<void> => {
      try {
        found.set(req, await admit(deps, req, kind));
      } catch (err) {
        if (isFerryError(err) && err.code === 'EVT_TOKEN_INVALID')
          void reply.header('WWW-Authenticate', 'Bearer realm="Ferry Event Solutions"');
        throw err;
      }
    },
    targetOf(req: FastifyRequest): MessageTarget {
      const target = found.get(req);
      if (!target) throw new FerryError('SVC_INTERNAL', `A ${kind} call reached its handler without its checks`);
      return target;
    },
  };
}

/** The caller checked against the Organization, its token and Security Rules, and the endpoint found. */
async function admit(
  deps: ServiceDeps,
  req: FastifyRequest,
  kind: 'message' | 'request' = 'message',
): Promise<MessageTarget> {
  const params = req.params as Record<string, string | undefined>;
  const authorization = req.headers.authorization ?? '';
  return messageTarget(
    deps.store.db,
    deps.secrets,
    {
      orgId: params['orgId'] ?? '',
      mapId: params['mapId'] ?? '',
      token: tokenOf(req),
      basic: /^basic\s/i.test(authorization),
      ip: req.ip,
      kind,
    },
    deps.events.access,
  );
}

/** The token from the query (`accesstoken` in any case), `X-Access-Token`, or `Authorization: Bearer`. */
function tokenOf(req: FastifyRequest): string | undefined {
  const query = (req.query ?? {}) as Record<string, unknown>;
  for (const [name, value] of Object.entries(query)) {
    if (name.toLowerCase() !== 'accesstoken') continue;
    const first: unknown = Array.isArray(value) ? value[0] : value;
    if (typeof first === 'string' && first !== '') return first;
  }
  const header = req.headers['x-access-token'];
  if (typeof header === 'string' && header.trim() !== '') return header;
  const bearer = /^bearer\s+(\S+)\s*$/i.exec(req.headers.authorization ?? '');
  return bearer?.[1];
}

function idempotencyKeyOf(req: FastifyRequest): string | undefined {
  const raw = req.headers['idempotency-key'];
  if (raw === undefined) return undefined;
  const key = (Array.isArray(raw) ? raw.join(',') : raw).trim();
  if (key === '' || key.length > MAX_IDEMPOTENCY_KEY) {
    throw new FerryError(
      'API_VALIDATION',
      `The Idempotency-Key header must have 1 to ${MAX_IDEMPOTENCY_KEY} characters; it has ${key.length}.`,
      { errors: [{ path: 'header.idempotency-key', message: `must have 1 to ${MAX_IDEMPOTENCY_KEY} characters` }] },
    );
  }
  return key;
}

/**
 * Reads the body as bytes, up to `limit`: a Content-Length above it is refused before a byte is
 * read, and a body that grows past it as soon as it does.
 */
function readBody(
  req: FastifyRequest,
  payload: NodeJS.ReadableStream,
  limit: number,
  done: (err: Error | null, body?: unknown) => void,
): void {
  const tooLarge = () =>
    new FerryError(
      'EVT_MESSAGE_TOO_LARGE',
      `The body is larger than the ${limit} bytes a message POST takes; a message may be at most ${MAX_MESSAGE_BYTES} bytes: send fewer messages per POST.`,
    );
  if (Number(req.headers['content-length']) > limit) {
    done(tooLarge(), undefined);
    return;
  }
  const chunks: Buffer[] = [];
  let size = 0;
  let settled = false;
  const settle = (err: Error | null, body?: RawBody) => {
    if (settled) return;
    settled = true;
    done(err, body);
  };
  payload.on('data', (chunk: Buffer) => {
    if (settled) return;
    size += chunk.length;
    if (size > limit) settle(tooLarge());
    else chunks.push(chunk);
  });
  payload.on('end', () => settle(null, new RawBody(Buffer.concat(chunks, size))));
  payload.on('error', (err: Error) => settle(err));
}

/**
 * Requests to request/reply Maps (service/events/requests.ts): checked as message POSTs are, then
 * held until the Map replies; the reply is the answer.
 */
const requestsRoutes: FastifyPluginAsyncZod<ServiceDeps> = async (app, deps) => {
  const requests = new EventRequests({
    db: deps.store.db,
    commands: deps.agents.commands,
    timeoutMs: deps.config.eventRequestTimeout * 1000,
    sync: (agentId) => deps.assignments.sync(agentId),
  });
  const admitted = admission(deps, 'request');
  const bodyLimit = Math.max(deps.config.bodyLimit, MAX_MESSAGE_BYTES + ARRAY_MARGIN);
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', (req, payload, done) => readBody(req, payload, bodyLimit, done));
  app.post(
    '/v1/orgs/:orgId/requests/:mapId',
    {
      config: { access: 'public', bodyTypes: MESSAGE_TYPES },
      logLevel: 'info',
      onRequest: admitted.onRequest,
      schema: {
        tags: ['Event messages'],
        summary: 'Send a request to a request/reply Map of an Event Solution (its eventUrl) and get its reply',
        description:
          'Checked as a message POST is (token, Security Rules with eventSolutionAccessEnabled). The body is one request: a JSON ' +
          'object or an XML document. The answer is the reply the Map sends (Build Reply → Send Reply): its fields as JSON, ' +
          'its statusCode field (if any) as the HTTP status. 504 when no reply came within FERRY_EVENT_REQUEST_TIMEOUT.',
        security: [],
        params: MessageParams,
        querystring: MessageQuery,
      },
    },
    async (req, reply) => {
      const target = admitted.targetOf(req);
      const bytes = req.body instanceof RawBody ? req.body.bytes : undefined;
      const bodies = messagesOf(bytes, req.headers['content-type']);
      if (bodies.length !== 1 || /^\s*\[/.test(bytes?.subarray(0, 64).toString('utf8') ?? ''))
        throw new FerryError(
          'EVT_MESSAGE_INVALID',
          'A request is one JSON object (or one XML document), not an array.',
        );
      const request = JSON.parse(bodies[0] as string) as Record<string, unknown>;
      if (/\brespond-async\b/i.test(String(req.headers['prefer'] ?? ''))) {
        const id = await requests.answerLater(target, request);
        const params = req.params;
        const location = `/v1/orgs/${params.orgId}/requests/${params.mapId}/replies/${id}`;
        return reply
          .code(202)
          .header('Location', location)
          .header('Preference-Applied', 'respond-async')
          .header('Retry-After', '1')
          .send({ requestId: id, location });
      }
      const answer = await requests.answer(target, request);
      return reply.code(answer.status).type('application/json').send(answer.body);
    },
  );

  app.get(
    '/v1/orgs/:orgId/requests/:mapId/replies/:requestId',
    {
      config: { access: 'public' },
      logLevel: 'info',
      onRequest: admitted.onRequest,
      schema: {
        tags: ['Event messages'],
        summary: 'The reply to a request sent with Prefer: respond-async: 202 while the Map runs, then its answer',
        security: [],
        params: MessageParams.extend({ requestId: z.string().min(1).max(100) }),
        querystring: MessageQuery,
      },
    },
    async (req, reply) => {
      const target = admitted.targetOf(req);
      const answer = await requests.replyOf(target.endpointId, req.params.requestId);
      if (!answer)
        return reply.code(202).header('Retry-After', '1').send({ requestId: req.params.requestId, state: 'pending' });
      return reply
        .code(answer.status)
        .type(answer.problem ? 'application/problem+json' : 'application/json')
        .serializer((body: unknown) => String(body))
        .send(answer.body);
    },
  );
};

export { requestsRoutes };
export default messagesRoutes;
