/**
 * Error answers that say what to do: refused credentials, the wrong content type, a missing field,
 * a near miss of a query parameter, an empty JSON body; and POLL answers with Retry-After outside
 * the per-minute rate limit.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestChannel, registerTestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}

const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
const MISSING = '11111111-1111-4111-8111-111111111111';

describe.each(STORE_TARGETS)('errors that say what to do on $name', (target) => {
  let svc: TestService;
  let O: string;
  beforeAll(async () => {
    svc = await startService(target);
    O = `/v1/orgs/${svc.orgId}`;
  });
  afterAll(async () => svc?.close());

  it('tells refused credentials from missing ones, with one text for an unknown login and a wrong password', async () => {
    const none = await svc.request<Problem>('GET', '/v1/orgs', { auth: null });
    const wrong = await svc.request<Problem>('GET', '/v1/orgs', {
      auth: { email: svc.admin.email, password: 'Not-the-password' },
    });
    const unknown = await svc.request<Problem>('GET', '/v1/orgs', {
      auth: { email: 'nobody@ferry.test', password: 'Not-the-password' },
    });
    for (const r of [none, wrong, unknown]) {
      expect(r.status).toBe(401);
      expect(r.body.code).toBe('API_UNAUTHENTICATED');
    }
    expect(none.body.detail).toBe('Send your email and password with HTTP Basic authentication.');
    expect(wrong.body.detail).toContain('The email and password were refused');
    expect(wrong.body.detail).toContain('ferry service set-password');
    expect(unknown.body.detail).toBe(wrong.body.detail);
  });

  it('names every accepted content type for a Lookup Table import sent as a form (curl -d)', async () => {
    const table = await svc.request<{ id: string }>('POST', `${O}/lookuptables`, { body: { name: 'Media types' } });
    expect(table.status).toBe(201);
    const res = await svc.request<Problem>('POST', `${O}/lookuptables/${table.body.id}/import`, {
      body: 'value1,value2\nNO,Norway\n',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(res.status).toBe(415);
    expect(res.body.code).toBe('API_UNSUPPORTED_MEDIA_TYPE');
    for (const type of ['text/csv', 'application/csv', 'text/plain', 'application/json'])
      expect(res.body.detail).toContain(type);
    expect(res.body.detail).toContain('application/x-www-form-urlencoded');
    expect(res.body.detail).toContain("-H 'Content-Type: text/csv'");
  });

  it('says the content type is wrong for JSON sent as text/plain where a JSON object is expected', async () => {
    const res = await svc.request<Problem>('POST', `${O}/lookuptables`, {
      body: JSON.stringify({ name: 'Plain' }),
      headers: { 'content-type': 'text/plain' },
    });
    expect(res.status).toBe(415);
    expect(res.body.code).toBe('API_UNSUPPORTED_MEDIA_TYPE');
    expect(res.body.detail).toBe(
      'The body is sent as text/plain, which this operation does not take; send it as application/json.',
    );
  });

  it('says a missing field is required, at any depth', async () => {
    const res = await svc.request<Problem>('POST', `${O}/lookuptables`, { body: { lookupTableValues: [] } });
    expect(res.status).toBe(400);
    expect(res.body.detail).toBe('The request is not valid: body.name is required.');
    expect(res.body.errors).toEqual([{ path: 'body.name', message: 'is required' }]);
    const nested = await svc.request<Problem>('POST', `${O}/lookuptables`, {
      body: { name: 'Nested', lookupTableValues: [{ value2: 'a' }] },
    });
    expect(nested.body.errors).toEqual([{ path: 'body.lookupTableValues.0.value1', message: 'is required' }]);
    // A value of the wrong type is not "required".
    const typed = await svc.request<Problem>('POST', `${O}/lookuptables`, { body: { name: 5 } });
    expect(typed.body.errors?.[0]?.message).not.toContain('required');
  });

  it('refuses a near miss of a known query parameter and ignores other unknown ones', async () => {
    const miss = await svc.request<Problem>('GET', `${O}/lookuptables?includeLookupTableValue=true`);
    expect(miss.status).toBe(400);
    expect(miss.body.code).toBe('API_VALIDATION');
    expect(miss.body.detail).toContain('did you mean includeLookupTableValues?');
    expect(miss.body.errors).toEqual([
      {
        path: 'query.includeLookupTableValue',
        message: expect.stringContaining('did you mean includeLookupTableValues?') as string,
      },
    ]);
    expect((await svc.request<Problem>('GET', `${O}/lookuptables?limt=5`)).body.detail).toContain(
      'did you mean limit?',
    );
    // Another letter case is the same parameter; an unrelated extra is ignored.
    expect((await svc.request('GET', `${O}/lookuptables?IncludeLookupTableValues=true`)).status).toBe(200);
    expect((await svc.request('GET', `${O}/lookuptables?expand=false&_=12345`)).status).toBe(200);
    expect((await svc.request('GET', `${O}/connections?expand=false`)).status).toBe(200);
  });

  it('treats an empty body sent as application/json as no body: provision, connector install, solution start', async () => {
    const variants: Array<Record<string, string>> = [
      { 'content-type': 'application/json' },
      { 'content-type': 'application/json', 'content-length': '0' },
    ];
    for (const headers of variants) {
      const provision = await svc.request<{ agentInstallationKey: string }>(
        'POST',
        `${O}/agents/provision_onpremise_agent`,
        { body: '', headers },
      );
      expect(provision.status).toBe(200);
      expect(provision.body.agentInstallationKey).toEqual(expect.any(String));
      const install = await svc.request<Problem>('POST', `${O}/connectors/${SQLITE}/install`, { body: '', headers });
      expect(install.status).toBe(200);
      // Past body parsing and validation: the Solution is what is missing.
      const start = await svc.request<Problem>('POST', `${O}/solutions/${MISSING}/start`, { body: '', headers });
      expect(start.status).toBe(404);
      expect(start.body.code).toBe('API_NOT_FOUND');
    }
  });

  it('treats an empty body of any content type as no body, and still refuses a non-empty one it does not take', async () => {
    // axios 0.21 sends a body-less POST as a form with Content-Length 0; others send text/plain, another type or none.
    const empty: Array<Record<string, string>> = [
      { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '0' },
      { 'content-type': 'application/x-www-form-urlencoded' },
      { 'content-type': 'text/plain;charset=utf-8', 'content-length': '0' },
      { 'content-type': 'application/xml', 'content-length': '0' },
      { 'content-type': 'not a media type', 'content-length': '0' },
      { 'content-length': '0' },
    ];
    for (const headers of empty) {
      const start = await svc.request<Problem>('POST', `${O}/solutions/${MISSING}/start`, { body: '', headers });
      expect(start.status, JSON.stringify(headers)).toBe(404);
      expect(start.body.code).toBe('API_NOT_FOUND');
      const provision = await svc.request('POST', `${O}/agents/provision_onpremise_agent`, { body: '', headers });
      expect(provision.status, JSON.stringify(headers)).toBe(200);
    }
    // A route that needs a body says so, as for no body at all.
    const noBody = await svc.request<Problem>('POST', `${O}/lookuptables`, {
      body: '',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': '0' },
    });
    expect(noBody.status).toBe(400);
    expect(noBody.body.code).toBe('API_VALIDATION');
    const form = await svc.request<Problem>('POST', `${O}/solutions/${MISSING}/start`, {
      body: 'a=1',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(form.status).toBe(415);
    expect(form.body.code).toBe('API_UNSUPPORTED_MEDIA_TYPE');
    expect(form.body.detail).toContain('application/x-www-form-urlencoded');
    expect(
      (
        await svc.request<Problem>('POST', `${O}/solutions/${MISSING}/start`, {
          body: 'a',
          headers: { 'content-type': 'not a media type' },
        })
      ).status,
    ).toBe(415);
    // A path no route serves stays a 404, whatever its body.
    const nowhere = await svc.request<Problem>('POST', `${O}/no-such-thing`, {
      body: 'a=1',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
    });
    expect(nowhere.status).toBe(404);
    expect(nowhere.body.code).toBe('API_ROUTE_NOT_FOUND');
  });
});

describe.each(STORE_TARGETS)('POLL answers on $name', (target) => {
  let svc: TestService;
  let ch: TestChannel;
  let connection = '';
  let agentId = '';
  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off', rateLimitPerMinute: 5 });
    const agent = await registerTestAgent(svc, { name: 'Silent agent' });
    ch = await TestChannel.connect(svc, agent);
    await ch.hello(agent, { installedConnectors: [{ connectorId: SQLITE, version: '1.0.0' }] });
    // Metadata loads are never answered: every POLL call sees "not ready yet".
    ch.autoReply = () => undefined;
    const conn = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/connections`, {
      body: { name: 'Polled', connectorId: SQLITE, color: '#FF000000' },
    });
    expect(conn.status).toBe(201);
    connection = `/v1/orgs/${svc.orgId}/connections/${conn.body.id}`;
    agentId = agent.agentId;
  });
  afterAll(async () => {
    await ch?.close();
    await svc?.close();
  });

  it('answers not ready with Retry-After, and polling does not use up the per-minute limit', async () => {
    // Past the per-minute limit of 5 (one call already made: the Connection).
    for (let i = 0; i < 12; i++) {
      const r = await svc.request<Problem>('GET', `${connection}/entities${i === 0 ? `?agentId=${agentId}` : ''}`);
      expect(r.status).toBe(404);
      expect(r.body.code).toBe('API_METADATA_LOADING');
      expect(r.headers['retry-after']).toBe('2');
    }
    // Other calls still have their minute's budget.
    expect((await svc.request('GET', `/v1/orgs/${svc.orgId}/connections`)).status).toBe(200);
    // A final 404 of a POLL operation (no such Connection) carries no Retry-After.
    const gone = await svc.request<Problem>('GET', `/v1/orgs/${svc.orgId}/connections/${MISSING}/entities`);
    expect(gone.status).toBe(404);
    expect(gone.headers['retry-after']).toBeUndefined();
  });
});
