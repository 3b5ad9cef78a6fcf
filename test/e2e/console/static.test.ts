/**
 * The console's files as the Service serves them at /console: index.html for the page and its
 * routes with a Content-Security-Policy, hashed assets cached for good, no other path of the file
 * system, and a 503 that says what to do when the console was never built.
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Fastify from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isFerryError } from '../../../src/errors/ferry-error.js';
import { ConsoleFiles } from '../../../service/http/console/static-files.js';
import { startService, type TestService } from '../../helpers/service.js';
import { CONSOLE_BUILT } from './browser.js';

describe.skipIf(!CONSOLE_BUILT)('the built console at /console', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ name: 'sqlite' });
  });
  afterAll(() => svc?.close());

  it('serves index.html, without credentials, with a policy that allows only its own origin', async () => {
    for (const at of ['/console', '/console/', '/console/solutions']) {
      const res = await svc.request('GET', at, { auth: null });
      expect(res.status, at).toBe(200);
      expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
      expect(res.headers['content-security-policy']).toMatch(/default-src 'self'/);
      expect(res.headers['content-security-policy']).toMatch(/frame-ancestors 'none'/);
      expect(res.headers['x-content-type-options']).toBe('nosniff');
      expect(res.headers['cache-control']).toBe('no-cache');
      expect(res.text).toContain('<div id="app">');
    }
  });

  it('serves the hashed assets for a year, and nothing that is not a built file', async () => {
    const html = (await svc.request<string>('GET', '/console/', { auth: null })).text;
    const script = /src="(\/console\/assets\/[^"]+\.js)"/.exec(html)?.[1];
    expect(script).toBeDefined();
    const js = await svc.request('GET', script ?? '', { auth: null });
    expect(js.status).toBe(200);
    expect(js.headers['content-type']).toBe('text/javascript; charset=utf-8');
    expect(js.headers['cache-control']).toBe('public, max-age=31536000, immutable');

    for (const at of ['/console/assets/missing.js', '/console/..%2f..%2fpackage.json', '/console/.source-hash']) {
      const res = await svc.request<{ code: string }>('GET', at, { auth: null });
      expect(res.status, at).toBe(404);
      expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    }
  });
});

describe('a console that was never built', () => {
  it('answers 503 SVC_UNAVAILABLE saying to build it', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-console-'));
    const app = Fastify();
    const files = new ConsoleFiles(dir);
    app.get('/console', async (_req, reply) => {
      try {
        return files.send(reply, '');
      } catch (err) {
        return reply
          .code(isFerryError(err) ? 503 : 500)
          .send({ code: isFerryError(err) ? err.code : '', detail: String(err) });
      }
    });
    try {
      const res = await app.inject({ method: 'GET', url: '/console' });
      expect(res.statusCode).toBe(503);
      expect(res.json()).toMatchObject({ code: 'SVC_UNAVAILABLE' });
      expect(res.body).toMatch(/npm run build/);
    } finally {
      await app.close();
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
