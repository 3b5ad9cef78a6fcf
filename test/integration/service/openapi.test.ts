import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../../helpers/service.js';

interface OpenApi {
  openapi: string;
  paths: Record<string, Record<string, { summary?: string; responses?: Record<string, unknown> }>>;
}

describe('the OpenAPI document, /docs and /healthz', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ name: 'sqlite' });
  });
  afterAll(async () => svc?.close());

  it('serves an OpenAPI 3.1 document that lists every /v1 route with a summary', async () => {
    const res = await svc.request<OpenApi>('GET', '/v1/openapi.json', { auth: null });
    expect(res.status).toBe(200);
    expect(res.body.openapi).toBe('3.1.0');
    const routes = svc.service.app.printRoutes({ commonPrefix: false });
    expect(routes).toContain('/v1/orgs');
    const documented = Object.entries(res.body.paths).flatMap(([p, methods]) => Object.keys(methods).map((m) => `${m.toUpperCase()} ${p}`));
    for (const expected of ['GET /v1/orgs', 'POST /v1/orgs', 'PUT /v1/orgs/{orgId}', 'DELETE /v1/orgs/{orgId}/securityrules', 'PUT /v1/orgs/{orgId}/SecuritySettings/resetcryptotoken']) {
      expect(documented).toContain(expected);
    }
    for (const [p, methods] of Object.entries(res.body.paths)) {
      for (const [m, op] of Object.entries(methods)) expect(op.summary, `${m} ${p}`).toBeTruthy();
    }
  });

  it('gives the API the version of the package', async () => {
    const res = await svc.request<OpenApi & { info: { version: string } }>('GET', '/v1/openapi.json', { auth: null });
    const pkg = JSON.parse(fs.readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(res.body.info.version).toBe(pkg.version);
  });

  it('matches the copy in docs/openapi.json (regenerate it with npm run openapi)', async () => {
    const res = await svc.request<OpenApi>('GET', '/v1/openapi.json', { auth: null });
    const committed = JSON.parse(fs.readFileSync(new URL('../../../docs/openapi.json', import.meta.url), 'utf8')) as OpenApi;
    expect(res.body).toEqual(committed);
  });

  it('serves the browsable documentation without credentials', async () => {
    const res = await svc.request('GET', '/docs/', { auth: null });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toMatch(/text\/html/);
  });

  it('answers /healthz', async () => {
    const res = await svc.request<{ status: string }>('GET', '/healthz', { auth: null });
    expect(res.body).toEqual({ status: 'ok' });
  });

  it('answers unknown routes with a 404 problem', async () => {
    const res = await svc.request<{ code: string }>('GET', '/v1/nothing-here');
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body.code).toBe('API_ROUTE_NOT_FOUND');
  });
});
