import { walkBlocks, type MapModel } from '../../src/protocol/map.js';
import type { MapView } from '../solutions/maps.js';

/** A request/reply Map as its document shows it: the Map and its endpoint's URL Map ID. */
export interface RequestMapEntry {
  readonly view: MapView;
  readonly solutionName: string;
  readonly urlMapId: number;
}

type Schema = Record<string, unknown>;

/** The reply fields that set the HTTP status (service/events/requests.ts). */
const STATUS_FIELDS = new Set(['statuscode', 'httpstatus']);

const PROBLEM: Schema = {
  description: 'application/problem+json (docs/errors.md)',
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
};

/**
 * An OpenAPI 3 document of request/reply Maps (docs/events.md, "Request/reply Maps"), as the
 * original service offered one per Map for callers to generate clients from: one POST per Map at
 * its endpoint's URL, the request's fields (its Wait For Request Block's `fields`) and the reply's
 * (the target fields of its Build Reply Blocks, but the status), the token as `accesstoken`.
 * Only enabled, valid Maps with an endpoint (prepared) are in it.
 */
export function requestMapsDocument(opts: {
  readonly title: string;
  readonly version: string;
  readonly baseUrl: string;
  readonly orgId: number;
  readonly maps: readonly RequestMapEntry[];
}): Schema {
  const paths: Record<string, Schema> = {};
  for (const { view, solutionName, urlMapId } of opts.maps) {
    const { row, model } = view;
    paths[`/v1/orgs/${opts.orgId}/requests/${urlMapId}`] = {
      post: {
        operationId: `requestMap${urlMapId}`,
        summary: row.name,
        ...(row.description ? { description: row.description } : {}),
        tags: [solutionName],
        security: [{ accesstoken: [] }, { accessTokenHeader: [] }],
        requestBody: { required: true, content: { 'application/json': { schema: requestSchema(model) } } },
        responses: {
          '200': {
            description: "The Map's reply (Send Reply); a statusCode field of the reply sets the status instead",
            content: { 'application/json': { schema: replySchema(model) } },
          },
          '400': PROBLEM,
          '401': PROBLEM,
          '403': PROBLEM,
          '422': PROBLEM,
          '502': PROBLEM,
          '503': PROBLEM,
          '504': PROBLEM,
        },
      },
    };
  }
  return {
    openapi: '3.0.3',
    info: { title: opts.title, version: opts.version },
    servers: [{ url: opts.baseUrl }],
    paths,
    components: {
      securitySchemes: {
        accesstoken: { type: 'apiKey', in: 'query', name: 'accesstoken' },
        accessTokenHeader: { type: 'apiKey', in: 'header', name: 'X-Access-Token' },
      },
      schemas: {
        Problem: {
          type: 'object',
          properties: {
            type: { type: 'string' },
            title: { type: 'string' },
            status: { type: 'integer' },
            detail: { type: 'string' },
            code: { type: 'string' },
          },
        },
      },
    },
  };
}

/** Whether a Map answers requests: its first Block is Wait For Request. */
export function isRequestMap(model: MapModel): boolean {
  return model.blocks[0]?.blockType === 'WaitForRequest';
}

function requestSchema(model: MapModel): Schema {
  const fields = model.blocks[0]?.fields ?? [];
  return fields.length > 0
    ? { type: 'object', properties: Object.fromEntries(fields.map((f) => [f, {}])), additionalProperties: true }
    : { type: 'object', additionalProperties: true };
}

function replySchema(model: MapModel): Schema {
  const fields = new Set<string>();
  for (const b of walkBlocks(model.blocks)) {
    if (b.blockType !== 'BuildReply') continue;
    for (const m of b.fieldMappings ?? [])
      if (!STATUS_FIELDS.has(m.targetField.toLowerCase())) fields.add(m.targetField);
  }
  return { type: 'object', properties: Object.fromEntries([...fields].map((f) => [f, {}])) };
}
