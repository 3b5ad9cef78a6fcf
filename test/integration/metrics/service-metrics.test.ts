import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildService, REDACT_PATHS } from '../../../service/build-service.js';
import { parseServiceConfig } from '../../../service/config.js';
import { startService, testServiceConfig, type TestService } from '../../helpers/service.js';
import { STORE_TARGETS } from '../../helpers/stores.js';
import { conventionBreaches, parseExposition, valueOf } from './exposition.js';

const TOKEN = 'metrics-token-0123456789abcdef';

/** GET a URL with optional headers; answers status, content type and text. */
async function get(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  return { status: res.status, type: res.headers.get('content-type') ?? '', auth: res.headers, text: await res.text() };
}

describe.each(STORE_TARGETS)('GET /metrics of the Service on $name', (target) => {
  describe('off by default', () => {
    let svc: TestService;
    beforeAll(async () => (svc = await startService(target)), 60_000);
    afterAll(() => svc?.close());

    it('has no /metrics route and no metrics listener', async () => {
      const res = await get(`${svc.url}/metrics`);
      expect(res.status).toBe(404);
      expect(JSON.parse(res.text)).toMatchObject({ code: 'API_ROUTE_NOT_FOUND' });
      expect(svc.service.metricsUrl()).toBeUndefined();
    });
  });

  describe('with a token on the API port', () => {
    let svc: TestService;
    beforeAll(async () => (svc = await startService(target, { metricsToken: TOKEN })), 60_000);
    afterAll(() => svc?.close());

    it('refuses a scrape without the token, with a wrong one and with Basic credentials', async () => {
      const basic = `Basic ${Buffer.from(`${svc.admin.email}:${svc.admin.password}`).toString('base64')}`;
      const attempts: Record<string, string>[] = [
        {},
        { authorization: 'Bearer wrong-token-0123456789abcdef' },
        { authorization: basic },
      ];
      for (const headers of attempts) {
        const res = await get(`${svc.url}/metrics`, headers);
        expect(res.status).toBe(401);
        expect(res.auth.get('www-authenticate')).toMatch(/^Bearer/);
        expect(JSON.parse(res.text)).toMatchObject({ code: 'API_UNAUTHENTICATED' });
        expect(res.text).not.toContain(TOKEN);
      }
    });

    it('answers the token with the text format; the HTTP counter moves by route pattern and status', async () => {
      const scrape = async () => {
        const res = await get(`${svc.url}/metrics`, { authorization: `Bearer ${TOKEN}` });
        expect(res.status).toBe(200);
        expect(res.type).toMatch(/^text\/plain; version=0\.0\.4/);
        return parseExposition(res.text);
      };
      const route = { method: 'GET', route: '/v1/orgs/:orgId/agents', status_code: '200' };
      const before = await scrape();
      for (let i = 0; i < 3; i++) expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/agents`)).status).toBe(200);
      expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/agents/${crypto.randomUUID()}`)).status).toBe(404);
      expect((await svc.request('GET', '/nowhere/12345')).status).toBe(404);
      const after = await scrape();
      expect(
        valueOf(after, 'ferry_http_requests_total', route) - valueOf(before, 'ferry_http_requests_total', route),
      ).toBe(3);
      expect(valueOf(after, 'ferry_http_request_duration_seconds_count', route)).toBeGreaterThanOrEqual(3);
      expect(
        valueOf(after, 'ferry_http_requests_total', { route: '/v1/orgs/:orgId/agents/:agentId', status_code: '404' }),
      ).toBe(1);
      expect(
        valueOf(after, 'ferry_http_requests_total', { route: 'unmatched', status_code: '404' }),
      ).toBeGreaterThanOrEqual(1);
      // Scrape-time gauges and process metrics.
      expect(valueOf(after, 'ferry_agents_connected')).toBe(0);
      expect(after.has('ferry_agents')).toBe(true);
      expect(after.has('ferry_event_queue_messages')).toBe(true);
      expect(valueOf(after, 'ferry_jobs_queued', { queue: 'prepare' })).toBe(0);
      expect(valueOf(after, 'ferry_process_cpu_seconds_total')).toBeGreaterThan(0);
      expect(valueOf(after, 'ferry_metrics_store_read_errors_total')).toBe(0);
      expect(conventionBreaches(after)).toEqual([]);
    });

    it('is not part of the /v1 OpenAPI document', async () => {
      const doc = (await svc.request<{ paths: Record<string, unknown> }>('GET', '/v1/openapi.json')).body;
      expect(Object.keys(doc.paths).filter((p) => p.includes('metrics'))).toEqual([]);
    });
  });

  describe('on a listener of its own', () => {
    let svc: TestService;
    beforeAll(async () => (svc = await startService(target, { metricsListen: '127.0.0.1:0' })), 60_000);
    afterAll(() => svc?.close());

    it('serves /metrics there without a token, and nothing on the API port', async () => {
      const url = svc.service.metricsUrl();
      expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
      const res = await get(url as string);
      expect(res.status).toBe(200);
      expect(conventionBreaches(parseExposition(res.text))).toEqual([]);
      expect((await get(url!.replace(/\/metrics$/, '/v1/orgs'))).status).toBe(404);
      expect((await fetch(url as string, { method: 'POST' })).status).toBe(405);
      expect((await get(`${svc.url}/metrics`)).status).toBe(404);
    });
  });
});

describe('the metrics token', () => {
  it('is refused when short, and appears in no log line (config, request lines at debug)', async () => {
    expect(() => parseServiceConfig({ FERRY_METRICS_TOKEN: 'short' })).toThrow(/metricsToken/);
    expect(() => parseServiceConfig({ FERRY_METRICS_LISTEN: 'nowhere' })).toThrow(/metricsListen/);
    expect(parseServiceConfig({ FERRY_METRICS_TOKEN: TOKEN, FERRY_METRICS_LISTEN: '[::1]:9464' })).toMatchObject({
      metricsToken: TOKEN,
      metricsListen: '[::1]:9464',
    });
    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-metrics-log-'));
    let lines = '';
    const sink = new Writable({
      write(chunk: Buffer, _enc, done) {
        lines += chunk.toString();
        done();
      },
    });
    const config = testServiceConfig(dataDir, undefined, { metricsToken: TOKEN, logLevel: 'trace' });
    const logger = pino({ level: 'trace', redact: { paths: REDACT_PATHS, censor: '[redacted]' } }, sink);
    const service = await buildService(config, { logger });
    try {
      const url = await service.listen();
      logger.info({ config }, 'configuration');
      expect((await get(`${url}/metrics`, { authorization: `Bearer ${TOKEN}` })).status).toBe(200);
      expect((await get(`${url}/metrics`, { authorization: `Bearer ${TOKEN}x` })).status).toBe(401);
    } finally {
      await service.close();
      fs.rmSync(dataDir, { recursive: true, force: true });
    }
    expect(lines).toContain('request completed');
    expect(lines).not.toContain(TOKEN);
  }, 60_000);
});
