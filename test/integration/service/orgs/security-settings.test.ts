import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface Settings {
  apiCryptoToken: string;
  eventSolutionAccessToken: string;
  captureOnFailedRecordsForReprocessing: boolean;
  captureDuringCloudAppRuns: boolean;
  captureDuringLocalAgentAppRuns: boolean;
  isSourceDataLocal: boolean;
  isAgentLogDownloadAllowed: boolean;
}

const GUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

describe.each(STORE_TARGETS)('Security Settings on $name', (target) => {
  let svc: TestService;
  let path: string;
  beforeAll(async () => {
    svc = await startService(target);
    path = `/v1/orgs/${svc.orgId}/SecuritySettings`;
  });
  afterAll(async () => svc?.close());

  it('returns the tokens and capture settings, the crypto token matching the Organization apiToken', async () => {
    const res = await svc.request<Settings>('GET', path);
    expect(res.status).toBe(200);
    expect(res.body.apiCryptoToken).toMatch(GUID);
    expect(res.body.eventSolutionAccessToken).toMatch(GUID);
    const org = await svc.request<{ apiToken: string }>('GET', `/v1/orgs/${svc.orgId}`);
    expect(org.body.apiToken).toBe(res.body.apiCryptoToken);
  });

  it('stores the tokens encrypted, never in clear', async () => {
    const res = await svc.request<Settings>('GET', path);
    const row = await svc.service.store.db
      .selectFrom('orgs')
      .selectAll()
      .where('id', '=', svc.orgId)
      .executeTakeFirstOrThrow();
    expect(JSON.stringify(row)).not.toContain(res.body.apiCryptoToken);
    expect(JSON.stringify(row)).not.toContain(res.body.eventSolutionAccessToken);
  });

  it('modifies the capture settings, all three together', async () => {
    const partial = await svc.request('PUT', path, { body: { captureOnFailedRecordsForReprocessing: false } });
    expect(partial.status).toBe(400);
    const res = await svc.request<Settings>('PUT', path, {
      body: {
        CaptureOnFailedRecordsForReprocessing: true,
        CaptureDuringCloudAppRuns: false,
        CaptureDuringLocalAgentAppRuns: true,
        IsSourceDataLocal: false,
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ captureDuringCloudAppRuns: false, isSourceDataLocal: false });
  });

  it('accepts a model read with GET back, tokens unchanged', async () => {
    const before = await svc.request<Settings>('GET', path);
    const res = await svc.request<Settings>('PUT', path, {
      body: { ...before.body, apiCryptoToken: 'ignored', isAgentLogDownloadAllowed: false },
    });
    expect(res.status).toBe(200);
    expect(res.body.apiCryptoToken).toBe(before.body.apiCryptoToken);
    // No longer used: ignored on write.
    expect(res.body.isAgentLogDownloadAllowed).toBe(true);
  });

  it('regenerates each token on its own', async () => {
    const before = await svc.request<Settings>('GET', path);
    const access = await svc.request<Settings>('PUT', `${path}/resetaccesstoken`);
    expect(access.status).toBe(200);
    expect(access.body.eventSolutionAccessToken).not.toBe(before.body.eventSolutionAccessToken);
    expect(access.body.apiCryptoToken).toBe(before.body.apiCryptoToken);
    const crypto = await svc.request<Settings>('PUT', `${path}/resetcryptotoken`);
    expect(crypto.body.apiCryptoToken).not.toBe(before.body.apiCryptoToken);
    expect(crypto.body.apiCryptoToken).toMatch(GUID);
    expect(crypto.body.eventSolutionAccessToken).toBe(access.body.eventSolutionAccessToken);
  });

  it('shows the tokens to Administrators only', async () => {
    const user = await addUser(svc, svc.orgId, 'User');
    expect((await svc.request('GET', path, { auth: user })).status).toBe(403);
    expect((await svc.request('PUT', `${path}/resetcryptotoken`, { auth: user })).status).toBe(403);
  });
});
