import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { FUNCTION_CATEGORIES } from '../../../../src/maps/formula/catalogue.js';
import { secondsAsMinutes } from '../../../../service/orgs/settings.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Setting {
  id: string;
  name: string;
  valueType: 1 | 2;
  decimalValue: string | null;
  blobValue: string[] | null;
}

describe.each(STORE_TARGETS)('Settings and Message Endpoints on $name', (target) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(target, { rateLimitPerMinute: 600_000, rateLimitPerDay: 9_000_000, bodyLimit: 2_000_000 });
  });
  afterAll(async () => svc?.close());

  it('lists the effective settings from the configuration and the fixed limits', async () => {
    const res = await svc.request<Setting[]>('GET', `/v1/orgs/${svc.orgId}/Settings`);
    expect(res.status).toBe(200);
    expect(res.headers['total-count']).toBe(String(res.body.length));
    const value = (name: string) => res.body.find((s) => s.name === name);
    const decimals: Record<string, string> = {
      MaxBlocksPerMap: '250',
      HistoryRetentionDays: '45',
      DefaultBulkBatchSize: '2000',
      ApiRateLimitPerMinute: '600000',
      ApiRateLimitPerDay: '9000000',
      DefaultPageSize: '100',
      MaxPageSize: '1000',
      RequestBodyLimitBytes: '2000000',
      HeartbeatLateAfterMinutes: '15',
      HeartbeatFailedAfterMinutes: '60',
    };
    for (const [name, decimal] of Object.entries(decimals)) {
      expect(value(name), name).toMatchObject({ valueType: 1, decimalValue: decimal, blobValue: null });
    }
    expect(value('FunctionCategories')).toMatchObject({
      valueType: 2,
      decimalValue: null,
      blobValue: [...FUNCTION_CATEGORIES],
    });
    expect(value('MaxBlocksPerMap')?.id).toBe('f8c335cc-0008-469d-bcfc-6bd03a2a2b85');
    expect(new Set(res.body.map((s) => s.id)).size).toBe(res.body.length);
    expect(new Set(res.body.map((s) => s.name)).size).toBe(res.body.length);
    for (const s of res.body) expect(s.id).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/);
  });

  it('lets Read-only users read the settings', async () => {
    const reader = await addUser(svc, svc.orgId, 'ReadOnly');
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/settings`, { auth: reader })).status).toBe(200);
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/Settings`, { auth: null })).status).toBe(401);
  });

  it('lists no Message Endpoints while no Event Solution exists, paging as every list does', async () => {
    const res = await svc.request<unknown[]>('GET', `/v1/orgs/${svc.orgId}/endpoints?limit=10&offset=5`);
    expect(res.status).toBe(200);
    expect(res.body).toEqual([]);
    expect(res.headers['total-count']).toBe('0');
    // MaxPageSize is what the API enforces.
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/endpoints?limit=1000`)).status).toBe(200);
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/endpoints?limit=1001`)).status).toBe(400);
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/endpoints?offset=-1`)).status).toBe(400);
  });

  it('answers clear of an unknown endpoint with 404, and needs the User role', async () => {
    const res = await svc.request<{ code: string; detail: string }>('PUT', `/v1/orgs/${svc.orgId}/endpoints/7/clear`);
    expect(res.status).toBe(404);
    expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(res.body).toMatchObject({ code: 'API_NOT_FOUND', detail: 'Message Endpoint 7 was not found.' });
    expect((await svc.request('PUT', `/v1/orgs/${svc.orgId}/endpoints/abc/clear`)).status).toBe(400);
    expect((await svc.request('PUT', `/v1/orgs/${svc.orgId}/endpoints/0/clear`)).status).toBe(400);
    const user = await addUser(svc, svc.orgId, 'User');
    expect((await svc.request('PUT', `/v1/orgs/${svc.orgId}/endpoints/7/clear`, { auth: user })).status).toBe(404);
    const reader = await addUser(svc, svc.orgId, 'ReadOnly');
    expect((await svc.request('PUT', `/v1/orgs/${svc.orgId}/endpoints/7/clear`, { auth: reader })).status).toBe(403);
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/endpoints`, { auth: reader })).status).toBe(200);
  });
});

describe('Heartbeat Settings', () => {
  it('show the heartbeat limits in force, in minutes, fractional when the limit is not whole minutes', async () => {
    const svc = await startService({ name: 'sqlite' }, { heartbeatLateAfter: 30, heartbeatFailedAfter: 60 });
    try {
      const res = await svc.request<Setting[]>('GET', `/v1/orgs/${svc.orgId}/Settings`);
      expect(res.status).toBe(200);
      const decimal = (name: string) => res.body.find((s) => s.name === name)?.decimalValue;
      expect(decimal('HeartbeatLateAfterMinutes')).toBe('0.5');
      expect(decimal('HeartbeatFailedAfterMinutes')).toBe('1');
    } finally {
      await svc.close();
    }
  });

  it('round a limit of a repeating fraction of a minute to six decimals', async () => {
    expect(secondsAsMinutes(20)).toBe(0.333333);
    expect(secondsAsMinutes(5400)).toBe(90);
  });
});
