/**
 * The web console's session (docs/console.md): sign-in and sign-out over real HTTP, the cookie's
 * attributes, the custom header without which the cookie does not count, the same roles, Security
 * Rules and login throttle as Basic authentication, and what the store keeps (a hash, ended by
 * sign-out, idleness or a new password). On SQLite, and on PostgreSQL when FERRY_TEST_DATABASE_URL is set.
 */
import { execFile, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashPassword } from '../../../service/auth/password.js';
import { checkOutputs, docExamples } from '../../helpers/doc-examples.js';
import { STORE_TARGETS } from '../../helpers/stores.js';
import { startService, type ApiResponse, type TestService } from '../../helpers/service.js';
import { addUser } from '../../helpers/users.js';

const exec = promisify(execFile);
const CONSOLE = { 'x-ferry-console': '1' };
const sha256 = (s: string): string => createHash('sha256').update(s).digest('hex');

describe.each(STORE_TARGETS)('console sessions on $name', (target) => {
  let svc: TestService;
  let O: string;

  beforeAll(async () => {
    svc = await startService(target, { trustProxy: '127.0.0.1' });
    O = `/v1/orgs/${svc.orgId}`;
  });
  afterAll(() => svc?.close());

  const signIn = (email: string, password: string, headers: Record<string, string> = CONSOLE) =>
    svc.request<{ email: string }>('POST', '/console/session', { auth: null, headers, body: { email, password } });
  /** The session token of a sign-in's Set-Cookie. */
  const tokenOf = (res: ApiResponse): string => {
    const cookie = String(res.headers['set-cookie'] ?? '');
    const m = /ferry_session=([^;]*)/.exec(cookie);
    if (!m?.[1]) throw new Error(`no session cookie in ${cookie}`);
    return m[1];
  };
  const withCookie = (token: string, headers: Record<string, string> = CONSOLE) => ({
    auth: null,
    headers: { ...headers, cookie: `other=1; ferry_session=${token}` },
  });
  const sessionRows = () => svc.service.store.db.selectFrom('consoleSessions').selectAll().execute();

  it('signs in with an API user: an HttpOnly, SameSite=Strict cookie for Path=/, Secure over HTTPS; the store keeps its hash only', async () => {
    const res = await signIn(svc.admin.email, svc.admin.password);
    expect(res.status, res.text).toBe(200);
    expect(res.body).toMatchObject({ email: svc.admin.email });
    const cookie = String(res.headers['set-cookie']);
    expect(cookie).toMatch(/HttpOnly/);
    expect(cookie).toMatch(/SameSite=Strict/);
    expect(cookie).toMatch(/Path=\//);
    expect(cookie).not.toMatch(/Secure/);
    expect(res.headers['cache-control']).toBe('no-store');
    const token = tokenOf(res);
    expect(res.text).not.toContain(token);
    const rows = await sessionRows();
    expect(rows.map((r) => r.tokenHash)).toContain(sha256(token));
    expect(JSON.stringify(rows)).not.toContain(token);

    const https = await signIn(svc.admin.email, svc.admin.password, { ...CONSOLE, 'x-forwarded-proto': 'https' });
    expect(String(https.headers['set-cookie'])).toMatch(/; Secure/);
  });

  it('refuses a sign-in without the console header, with a wrong password, or with a malformed body, as problems', async () => {
    const noHeader = await signIn(svc.admin.email, svc.admin.password, {});
    expect(noHeader.status).toBe(400);
    expect(noHeader.headers['content-type']).toMatch(/application\/problem\+json/);
    expect(noHeader.headers['set-cookie']).toBeUndefined();

    const wrong = await signIn(svc.admin.email, 'not-the-password');
    expect(wrong.status).toBe(401);
    expect(wrong.body).toMatchObject({ code: 'API_UNAUTHENTICATED' });
    expect(wrong.headers['set-cookie']).toBeUndefined();
    // The console's calls get no Basic challenge: a browser would open its login dialog.
    expect(wrong.headers['www-authenticate']).toBeUndefined();

    const malformed = await svc.request('POST', '/console/session', {
      auth: null,
      headers: CONSOLE,
      body: { email: svc.admin.email },
    });
    expect(malformed.status).toBe(400);
    expect(malformed.body).toMatchObject({ code: 'API_VALIDATION' });
  });

  it('the cookie authenticates /v1 calls only together with X-Ferry-Console: 1', async () => {
    const token = tokenOf(await signIn(svc.admin.email, svc.admin.password));
    const ok = await svc.request<{ email: string }>('GET', '/v1/users', withCookie(token));
    expect(ok.status, ok.text).toBe(200);
    expect(ok.body.email).toBe(svc.admin.email);
    expect((await svc.request('GET', `${O}/agents`, withCookie(token))).status).toBe(200);

    const without: Array<Record<string, string>> = [{}, { 'x-ferry-console': '0' }];
    for (const headers of without) {
      const refused = await svc.request<{ code: string; detail: string }>(
        'GET',
        `${O}/agents`,
        withCookie(token, headers),
      );
      expect(refused.status).toBe(401);
      expect(refused.headers['content-type']).toMatch(/application\/problem\+json/);
      expect(refused.body.code).toBe('API_UNAUTHENTICATED');
      expect(refused.body.detail).toMatch(/X-Ferry-Console/);
    }
    // A cross-site form's POST carries the cookie but cannot add the header.
    const form = await svc.request('POST', `${O}/agents/provision_onpremise_agent`, {
      ...withCookie(token, {}),
      headers: { cookie: `ferry_session=${token}`, 'content-type': 'application/x-www-form-urlencoded' },
      body: 'a=1',
    });
    expect(form.status).toBe(401);
  });

  it('gives the same roles and Security Rules as Basic authentication', async () => {
    const viewer = await addUser(svc, svc.orgId, 'ReadOnly');
    const token = tokenOf(await signIn(viewer.email, viewer.password));
    const provision = `${O}/agents/provision_onpremise_agent`;
    const bySession = await svc.request<{ code: string }>('POST', provision, withCookie(token));
    const byBasic = await svc.request<{ code: string }>('POST', provision, { auth: viewer });
    expect(bySession.status).toBe(403);
    expect(bySession.body.code).toBe('API_FORBIDDEN_ROLE');
    expect(byBasic.status).toBe(bySession.status);
    expect(byBasic.body.code).toBe(bySession.body.code);
    expect((await svc.request('GET', `${O}/agents`, withCookie(token))).status).toBe(200);

    // 127.0.0.2 is outside the Organization's Security Rules.
    const admin = tokenOf(await signIn(svc.admin.email, svc.admin.password));
    const far = await svc.request<{ code: string }>('GET', `${O}/agents`, { ...withCookie(admin), from: '127.0.0.2' });
    expect(far.status).toBe(403);
    expect(far.body.code).toBe('API_FORBIDDEN_IP');
  });

  it('counts wrong sign-ins in the same login throttle as Basic authentication', async () => {
    const user = await addUser(svc, svc.orgId, 'User');
    for (let i = 0; i < 10; i++) expect((await signIn(user.email, `wrong-${i}`)).status).toBe(401);
    const locked = await signIn(user.email, user.password);
    expect(locked.status).toBe(429);
    expect(locked.headers['retry-after']).toBeDefined();
    expect((await svc.request('GET', '/v1/users', { auth: user })).status).toBe(429);
  });

  it('signing out deletes the session: the cookie is cleared and no longer works', async () => {
    const token = tokenOf(await signIn(svc.admin.email, svc.admin.password));
    const out = await svc.request('DELETE', '/console/session', withCookie(token));
    expect(out.status).toBe(204);
    expect(String(out.headers['set-cookie'])).toMatch(/ferry_session=;.*Max-Age=0/);
    expect((await sessionRows()).map((r) => r.tokenHash)).not.toContain(sha256(token));
    const after = await svc.request<{ code: string }>('GET', '/v1/users', withCookie(token));
    expect(after.status).toBe(401);
    expect(after.body.code).toBe('API_UNAUTHENTICATED');
  });

  it('ends a session unused for 12 hours, and every session of a user whose password changed', async () => {
    const user = await addUser(svc, svc.orgId, 'User');
    const idle = tokenOf(await signIn(user.email, user.password));
    const { db } = svc.service.store;
    await db
      .updateTable('consoleSessions')
      .set({ lastSeenAt: new Date(Date.now() - 13 * 3600_000).toISOString() })
      .where('tokenHash', '=', sha256(idle))
      .execute();
    expect((await svc.request('GET', '/v1/users', withCookie(idle))).status).toBe(401);
    expect((await sessionRows()).map((r) => r.tokenHash)).not.toContain(sha256(idle));

    const live = tokenOf(await signIn(user.email, user.password));
    expect((await svc.request('GET', '/v1/users', withCookie(live))).status).toBe(200);
    await db
      .updateTable('users')
      .set({ passwordHash: await hashPassword('A-new-password-2') })
      .where('id', '=', user.id)
      .execute();
    expect((await svc.request('GET', '/v1/users', withCookie(live))).status).toBe(401);
  });
});

describe('docs/console.md: the curl example of a session runs against a Service', () => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService({ name: 'sqlite' });
  });
  afterAll(() => svc?.close());

  it('prints what the document says', { timeout: 60_000 }, async (ctx) => {
    const missing = ['curl', 'jq'].filter((tool) => spawnSync('sh', ['-c', `command -v ${tool}`]).status !== 0);
    if (missing.length > 0) {
      if (process.env['CI'] === 'true') throw new Error(`${missing.join(' and ')} missing: .ci/run installs them`);
      ctx.skip(`${missing.join(' and ')} missing`);
    }
    const blocks = docExamples(path.resolve(import.meta.dirname, '../../../docs/console.md'), 'console-session');
    expect(blocks).toHaveLength(1);
    const script = blocks.join('\n\n');
    const { stdout } = await exec('bash', ['-eo', 'pipefail', '-c', script], {
      cwd: svc.dataDir,
      timeout: 30_000,
      env: {
        ...process.env,
        FERRY_URL: svc.url,
        EMAIL: svc.admin.email,
        PASSWORD: svc.admin.password,
        ORG: String(svc.orgId),
      },
    });
    checkOutputs(script, stdout, (message) => expect.fail(message));
  });
});
