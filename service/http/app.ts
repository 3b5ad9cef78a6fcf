import fastifySwagger from '@fastify/swagger';
import fastifySwaggerUi from '@fastify/swagger-ui';
import Fastify, {
  LogController,
  type FastifyError,
  type FastifyInstance,
  type FastifyReply,
  type FastifyRequest,
} from 'fastify';
import {
  jsonSchemaTransform,
  jsonSchemaTransformObject,
  serializerCompiler,
  type ZodTypeProvider,
} from 'fastify-type-provider-zod';
import { FerryError, isFerryError } from '../../src/errors/ferry-error.js';
import { isUniqueViolation } from '../store/sql.js';
import { packageVersion } from '../util/package-root.js';
import { jsonNestsDeeperThan, MAX_JSON_DEPTH } from '../util/json-depth.js';
import { registerAgentParamCheck } from './agent-param.js';
import { answerClientError } from './client-error.js';
import { registerConsole } from './console/console.routes.js';
import { consoleSessions } from './console/sessions.js';
import type { ServiceDeps } from './deps.js';
import { registerGuard } from './guard.js';
import { registerMetrics } from '../metrics/metrics-route.js';
import { registerSharedGuard } from '../solutions/shared.js';
import { unsupportedMediaType } from './media-types.js';
import { registerPolling } from './poll.js';
import { sendProblem } from './problem.js';
import { ROUTES } from './routes/index.js';
import { registerMapModelComponents } from './schemas/map-model.schema.js';
import { validatorCompiler } from './validation.js';

/** The URL with the value of an `accesstoken` query parameter (any case) replaced. */
export function withoutSecrets(url: string): string {
  return url.replace(/([?&]accesstoken=)[^&#]*/gi, '$1[redacted]');
}

/**
 * Fastify's two lines per request at debug rather than info, so that a Service at the default level
 * logs what happens to it, not every call it answers; its other lines (errors) are unchanged.
 */
export class RequestLinesAtDebug extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    if (this.isLogDisabled(request)) return;
    // An Event Solution's token travels in the query string: never in a log line.
    const req = { method: request.method, url: withoutSecrets(request.url), host: request.host, ip: request.ip };
    request.log.debug({ req }, 'incoming request');
  }

  override requestCompleted(
    error: Error | null | undefined,
    request: FastifyRequest,
    reply: FastifyReply,
    metadata?: Record<string, unknown>,
  ): void {
    if (error) super.requestCompleted(error, request, reply, metadata);
    else if (!this.isLogDisabled(request))
      reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
  }
}

/**
 * The Fastify application of the `/v1` API: validation by zod, problem+json for every error, the
 * guard (authentication, Security Rules, rate limits, roles) and one plugin per resource.
 */
export async function buildApp(deps: ServiceDeps): Promise<FastifyInstance> {
  const app = Fastify({
    loggerInstance: deps.log,
    logController: new RequestLinesAtDebug(),
    bodyLimit: deps.config.bodyLimit,
    trustProxy: deps.config.trustProxy ? deps.config.trustProxy.split(',').map((s) => s.trim()) : false,
    // The no-slash form `subscriptions{subscriptionId}` of SPEC.md is served by the slash route.
    rewriteUrl: (req) => (req.url ?? '/').replace(/^(\/v1\/orgs\/[^/]+\/subscriptions)([0-9a-fA-F]{8}-)/, '$1/$2'),
    routerOptions: { caseSensitive: false, ignoreTrailingSlash: true, maxParamLength: MAX_PARAM_LENGTH },
    // The router answers a path it cannot decode, or a too-long parameter, before any route or
    // error handler runs: without this, those answers would be Fastify's own JSON, not problems.
    clientErrorHandler: answerClientError,
    frameworkErrors: (err, req, reply) => {
      req.log.debug({ code: err.code }, 'request refused by the router');
      void sendProblem(reply, frameworkError(err));
    },
    // Answered below as a problem: Fastify's own 503 while closing is plain JSON.
    return503OnClosing: false,
  }).withTypeProvider<ZodTypeProvider>();

  // A request that reaches a closing Service (on a connection kept alive) is told to come back.
  let closing = false;
  app.addHook('preClose', (done) => {
    closing = true;
    done();
  });
  app.addHook('onRequest', async (_req, reply) => {
    if (!closing) return;
    void reply.header('Connection', 'close');
    throw new FerryError('SVC_UNAVAILABLE', 'The Service is shutting down; retry in a few seconds.', {
      details: { retryAfterSeconds: 5 },
    });
  });

  registerJsonParser(app);
  registerEmptyBodyParser(app);

  app.setValidatorCompiler(validatorCompiler);
  app.setSerializerCompiler(serializerCompiler);

  app.setErrorHandler((err: FastifyError | FerryError, req, reply) => {
    const ferry = err.code === 'FST_ERR_CTP_INVALID_MEDIA_TYPE' ? unsupportedMediaType(req) : toFerryError(err);
    if (ferry.kind === 'system') req.log.error({ err }, 'request failed');
    else req.log.debug({ code: ferry.code }, 'request refused');
    return sendProblem(reply, ferry, req.url.split('?')[0]);
  });
  app.setNotFoundHandler((req, reply) =>
    sendProblem(
      reply,
      new FerryError('API_ROUTE_NOT_FOUND', `There is no endpoint ${req.method} ${req.url.split('?')[0]}.`),
    ),
  );

  // Schemas named with a zod `id` become components of the document (`transformObject`), referenced where used.
  registerMapModelComponents();
  await app.register(fastifySwagger, {
    openapi: {
      openapi: '3.1.0',
      info: { title: 'Ferry API', version: packageVersion(), description: 'The /v1 REST API of the Ferry Service.' },
      components: { securitySchemes: { basic: { type: 'http', scheme: 'basic' } } },
      security: [{ basic: [] }],
    },
    transform: jsonSchemaTransform,
    transformObject: jsonSchemaTransformObject,
  });
  await app.register(fastifySwaggerUi, { routePrefix: '/docs' });

  if (deps.metrics) registerMetrics(app, deps.metrics, deps.config);
  const sessions = consoleSessions(deps.store.db);
  const login = registerGuard(app, deps, (req) => sessions.userOf(req));
  registerSharedGuard(app, deps.store.db);
  registerPolling(app);
  registerAgentParamCheck(app, deps);

  app.get('/healthz', { config: { access: 'public' }, schema: { hide: true } }, async () => {
    await deps.store.db.selectFrom('orgs').select('id').limit(1).execute();
    return { status: 'ok' };
  });
  // Readiness for a load balancer: 503 while this replica drains before it stops, or when its store is unreachable.
  app.get('/readyz', { config: { access: 'public' }, schema: { hide: true } }, async () => {
    if (deps.readiness.draining) {
      throw new FerryError(
        'SVC_DRAINING',
        'This Service replica is stopping: it finishes the requests it has and takes no new ones. Send requests to another replica.',
      );
    }
    await deps.store.db.selectFrom('orgs').select('id').limit(1).execute();
    return { status: 'ready' };
  });
  app.get('/v1/openapi.json', { config: { access: 'public' }, schema: { hide: true } }, async () => app.swagger());

  for (const route of ROUTES) await app.register(route, deps);
  registerConsole(app, sessions, login);
  return app;
}

/** Longest path parameter the router accepts; no ID or name of the API is longer. */
const MAX_PARAM_LENGTH = 500;

/** The router's own refusals as problems: an undecodable path, an over-long parameter. */
function frameworkError(err: FastifyError): FerryError {
  if (err.code === 'FST_ERR_BAD_URL') {
    return new FerryError(
      'API_MALFORMED_URL',
      'The request path cannot be decoded: a percent-encoding (%XX) is not valid UTF-8. Encode each path segment as UTF-8.',
    );
  }
  if (err.code === 'FST_ERR_MAX_PARAM_LENGTH') {
    return new FerryError(
      'API_URI_TOO_LONG',
      `A path parameter is longer than ${MAX_PARAM_LENGTH} characters; no ID or name of the API is that long.`,
    );
  }
  return toFerryError(err);
}

/**
 * Fastify's JSON parser, behind a check of the raw text's nesting depth: a body deeper than
 * MAX_JSON_DEPTH is refused before anything walks the parsed value by recursion.
 */
function registerJsonParser(app: FastifyInstance): void {
  const parseJson = app.getDefaultJsonParser('error', 'error');
  app.removeContentTypeParser('application/json');
  // JSON sent as text/plain would reach the schema as a string ("expected object, received
  // string"): refused as the wrong content type instead. Routes that take text register it.
  app.removeContentTypeParser('text/plain');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    const text = typeof body === 'string' ? body : body.toString('utf8');
    // Clients of the original service send `Content-Type: application/json` with no body on
    // start, provision and install: an empty body is no body.
    if (text.trim() === '') {
      done(null, undefined);
      return;
    }
    if (jsonNestsDeeperThan(text, MAX_JSON_DEPTH)) {
      done(
        new FerryError(
          'API_BODY_TOO_DEEP',
          `The request body nests arrays and objects deeper than ${MAX_JSON_DEPTH} levels; send a flatter document.`,
        ),
        undefined,
      );
      return;
    }
    void parseJson(req, text, done);
  });
}

/**
 * Every content type no route takes: an empty body (Content-Length 0, or a chunked body with no
 * bytes) is no body, whatever type it claims; anything else is a 415 naming the types the route
 * takes. axios 0.21 sends each body-less POST as `application/x-www-form-urlencoded` with
 * `Content-Length: 0`, and such clients start, prepare and test this way. The body is not read
 * into memory: the first byte decides.
 */
function registerEmptyBodyParser(app: FastifyInstance): void {
  app.addContentTypeParser('*', (req, payload, done) => {
    let settled = false;
    const settle = (err: Error | null): void => {
      if (settled) return;
      settled = true;
      done(err, undefined);
    };
    payload.on('data', (chunk: Buffer) => {
      // A path no route serves is a 404 whatever its body.
      if (chunk.length > 0) settle(req.is404 ? null : unsupportedMediaType(req));
    });
    payload.on('end', () => settle(null));
    payload.on('error', (err: Error) => settle(err));
  });
  // A Content-Type that is no media type at all (`foo`) is refused by Fastify before any parser
  // runs; with Content-Length 0 it announces nothing, so it is dropped and the request has no body.
  app.addHook('onRequest', async (req) => {
    const type = req.headers['content-type'];
    if (
      type !== undefined &&
      req.headers['content-length'] === '0' &&
      req.headers['transfer-encoding'] === undefined &&
      !MEDIA_TYPE.test(type)
    ) {
      delete req.raw.headers['content-type'];
    }
  });
}

/** `type/subtype` with optional parameters (RFC 9110 tokens). */
const MEDIA_TYPE = /^\s*[!#$%&'*+.^_`|~0-9A-Za-z-]+\/[!#$%&'*+.^_`|~0-9A-Za-z-]+\s*(;.*)?$/;

const FASTIFY_CODES: Record<string, () => FerryError> = {
  FST_ERR_CTP_BODY_TOO_LARGE: () =>
    new FerryError('API_PAYLOAD_TOO_LARGE', 'The request body is larger than the Service accepts (FERRY_BODY_LIMIT).'),
  FST_ERR_CTP_INVALID_MEDIA_TYPE: () =>
    new FerryError('API_UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json.'),
  FST_ERR_CTP_INVALID_TYPE: () => new FerryError('API_UNSUPPORTED_MEDIA_TYPE', 'Send the body as application/json.'),
  FST_ERR_CTP_EMPTY_JSON_BODY: () =>
    new FerryError('API_MALFORMED_BODY', 'The request body is empty but its content type says JSON.'),
};

/** Every error becomes a FerryError: Fastify's own (body parsing, limits) by their codes and statuses. */
function toFerryError(err: FastifyError | FerryError): FerryError {
  if (isFerryError(err)) return err;
  // A write that lost a race for a unique name or ID: a conflict the caller can resolve by retrying.
  if (isUniqueViolation(err))
    return new FerryError(
      'API_CONFLICT',
      'Another request took the same name or ID at the same moment; read the current state and retry.',
    );
  const known = FASTIFY_CODES[err.code];
  if (known) return known();
  const status = err.statusCode;
  if (err instanceof SyntaxError || err.code === 'FST_ERR_CTP_INVALID_JSON_BODY') {
    return new FerryError('API_MALFORMED_BODY', `The request body is not valid JSON: ${err.message}`);
  }
  if (typeof status === 'number' && status >= 400 && status < 500) {
    return new FerryError(
      status === 413 ? 'API_PAYLOAD_TOO_LARGE' : status === 415 ? 'API_UNSUPPORTED_MEDIA_TYPE' : 'API_MALFORMED_BODY',
      err.message,
    );
  }
  return new FerryError('SVC_INTERNAL', 'The Service failed to answer this request; the error is in its log.', {
    cause: err,
  });
}
