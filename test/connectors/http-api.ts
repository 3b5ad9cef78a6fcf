/**
 * Loopback HTTP servers for the tests of the HTTP / JSON API connector: `serve(handler)` starts a
 * node:http server on 127.0.0.1 (port 0) that records every request, and {@link PeopleApi} is a
 * small in-memory REST API holding the conformance suite's `people` (and the generated `big`).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import pino from 'pino';
import { ConnectorHost } from '../../src/connectors/host.js';
import type { HostConnection } from '../../src/connectors/connection.js';
import type { ConnectorRecord } from '../../src/connectors/sdk.js';
import { CONNECTORS_DIR, PEOPLE, PEOPLE_FIELDS } from './conformance.js';

export const HTTP_CONNECTOR = 'HTTP / JSON API';

export interface SeenRequest {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

export interface Served {
  url: string;
  requests: SeenRequest[];
  close(): Promise<void>;
}

export type Handler = (req: SeenRequest, res: http.ServerResponse) => void | Promise<void>;

/** A server on 127.0.0.1 and a free port, answering with `handler`. */
export async function serve(handler: Handler): Promise<Served> {
  const requests: SeenRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const u = new URL(req.url ?? '/', 'http://localhost');
      const seen: SeenRequest = {
        method: req.method ?? 'GET',
        path: u.pathname,
        query: u.searchParams,
        headers: req.headers,
        body: Buffer.concat(chunks).toString('utf8'),
        at: Date.now(),
      };
      requests.push(seen);
      Promise.resolve(handler(seen, res)).catch((err: unknown) => {
        if (!res.headersSent) json(res, 500, { message: String(err) });
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

export function json(
  res: http.ServerResponse,
  status: number,
  body: unknown,
  headers: http.OutgoingHttpHeaders = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

/** Parses a request body as an API that keeps integers exact would: digits beyond 2^53 stay text. */
export function parseBody(text: string): unknown {
  return JSON.parse(text.replace(/([:[,]\s*)(-?\d{16,})(?=\s*[,}\]])/g, '$1"$2"'));
}

/** A host with the plugins loaded, and a Connection of the HTTP connector with `properties`. */
export async function openHttp(
  properties: Record<string, string>,
  log = pino({ level: 'silent' }),
): Promise<{ host: ConnectorHost; conn: HostConnection }> {
  const host = new ConnectorHost({ dir: CONNECTORS_DIR, log });
  await host.loadAll();
  const conn = await host.open({ connectorId: HTTP_CONNECTOR, connectionId: `http-${Math.random()}`, properties });
  return { host, conn };
}

/** The fields of `people` as a definition declares them. */
export const PEOPLE_DEFINITION_FIELDS = PEOPLE_FIELDS.map((f) => ({ name: f.name, type: f.type }));

type Row = Record<string, unknown>;

/** A record's id as the path of its resource holds it. */
const keyOf = (v: unknown): string => (typeof v === 'string' ? v : JSON.stringify(v));

/**
 * `people` over REST, as many APIs shape it:
 *
 *   GET    /people?page=&per_page=[&updated_since=][&id=1,2][&name=]   { data: { items }, meta }
 *   POST   /people/batch  { records: [...] }  → { results: [{ status, message? }] }   (per record)
 *   POST   /people        one record → 201 | 409
 *   PATCH  /people/{id}   merge → 200 | 404        PUT /people/{id}  merge or create → 200 | 201
 *   DELETE /people/{id}   → 204 | 404
 *   GET    /big?cursor=&limit=   { items, next }   (`bigRows` generated records)
 *
 * While `down` is set, every request to /people has its connection dropped unanswered.
 */
export class PeopleApi {
  readonly rows = new Map<string, Row>();
  bigRows = 0;
  down = false;

  constructor(rows: readonly ConnectorRecord[] = PEOPLE) {
    for (const r of rows) this.rows.set(keyOf(r['id']), { ...r });
  }

  readonly handle: Handler = (req, res) => {
    if (req.path === '/big') return this.big(req, res);
    if (!req.path.startsWith('/people')) return json(res, 404, { message: `no route ${req.path}` });
    if (this.down) {
      res.socket?.destroy();
      return;
    }
    const id = /^\/people\/([^/]+)$/.exec(req.path)?.[1];
    if (req.path === '/people' && req.method === 'GET') return this.list(req, res);
    if (req.path === '/people/batch' && req.method === 'POST') {
      const { records } = parseBody(req.body) as { records: Row[] };
      return json(res, 200, { results: records.map((r) => this.insert(r)) });
    }
    if (req.path === '/people' && req.method === 'POST') {
      const r = this.insert(parseBody(req.body) as Row);
      return json(res, r.status, r.status === 201 ? this.rows.get(keyOf((parseBody(req.body) as Row)['id'])) : r);
    }
    if (id === undefined) return json(res, 404, { message: 'not found' });
    const key = decodeURIComponent(id);
    const existing = this.rows.get(key);
    switch (req.method) {
      case 'PATCH':
        if (!existing) return json(res, 404, { message: `person ${key} not found` });
        Object.assign(existing, parseBody(req.body) as Row);
        return json(res, 200, existing);
      case 'PUT':
        this.rows.set(key, { ...(existing ?? {}), ...(parseBody(req.body) as Row), id: Number(key) });
        return json(res, existing ? 200 : 201, this.rows.get(key));
      case 'DELETE':
        if (!existing) return json(res, 404, { error: { message: `person ${key} not found` } });
        this.rows.delete(key);
        res.writeHead(204).end();
        return;
      default:
        return json(res, 405, { message: 'method not allowed' });
    }
  };

  private insert(r: Row): { status: number; message?: string } {
    if (r['id'] === undefined || r['id'] === null) return { status: 422, message: 'id is required' };
    const key = keyOf(r['id']);
    if (this.rows.has(key)) return { status: 409, message: `a person with id ${key} exists` };
    this.rows.set(key, { ...r });
    return { status: 201 };
  }

  private list(req: SeenRequest, res: http.ServerResponse): void {
    const page = Number(req.query.get('page') ?? 1);
    const size = Number(req.query.get('per_page') ?? 10);
    const since = req.query.get('updated_since');
    const ids = req.query.get('id')?.split(',');
    const name = req.query.get('name');
    const all = [...this.rows.values()]
      .filter((r) => !since || (typeof r['updated_at'] === 'string' && r['updated_at'] >= since))
      .filter((r) => !ids || ids.includes(keyOf(r['id'])))
      .filter((r) => name === null || r['name'] === name)
      .sort((a, b) => Number(a['id']) - Number(b['id']));
    json(res, 200, { data: { items: all.slice((page - 1) * size, page * size) }, meta: { page, total: all.length } });
  }

  private big(req: SeenRequest, res: http.ServerResponse): void {
    const from = Number(req.query.get('cursor') ?? 0);
    const limit = Number(req.query.get('limit') ?? 1000);
    const to = Math.min(this.bigRows, from + limit);
    const items: Row[] = [];
    for (let i = from + 1; i <= to; i++) items.push({ id: i, payload: `${'x'.repeat(90)}${i}` });
    json(res, 200, { items, next: to < this.bigRows ? to : null });
  }
}

/** The definition of {@link PeopleApi}'s entities. */
export function peopleDefinition(pageSize = 25): string {
  return JSON.stringify({
    entities: [
      {
        name: 'people',
        path: '/people',
        recordsPath: 'data.items',
        fields: PEOPLE_DEFINITION_FIELDS,
        key: 'id',
        pagination: { type: 'page', pageParam: 'page', sizeParam: 'per_page', pageSize },
        netChange: { field: 'updated_at', param: 'updated_since' },
        filters: [
          { field: 'id', param: 'id', op: 'in' },
          { field: 'name', param: 'name' },
        ],
        create: { path: '/people/batch', wrap: 'records', batch: { maxSize: 500, resultsPath: 'results' } },
        update: { method: 'PATCH', path: '/people/{id}' },
        upsert: { method: 'PUT', path: '/people/{id}' },
        delete: { path: '/people/{id}' },
      },
      {
        name: 'big',
        path: '/big',
        recordsPath: 'items',
        fields: [
          { name: 'id', type: 'integer' },
          { name: 'payload', type: 'string' },
        ],
        key: 'id',
        pagination: { type: 'cursor', cursorPath: 'next', cursorParam: 'cursor', sizeParam: 'limit', pageSize: 5000 },
      },
    ],
  });
}
