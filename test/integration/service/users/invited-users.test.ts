import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sha256 } from '../../../../service/auth/password.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface InvitedUser {
  email: string;
  roleType: string;
  statusType: string;
  invitedDate: string;
  message: string | null;
  invitationId?: string;
  invitationToken?: string;
}

interface Invitation {
  id: string;
  orgId: number;
  status: string;
}

interface User {
  id: string;
  email: string;
  isApproved: boolean;
  password: null;
  orgId: number | null;
  roleType: string | null;
}

interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string }>;
}

const loopbackRule = {
  name: 'loopback',
  allowedIpRangeStartAddress: '127.0.0.1',
  allowedIpRangeEndAddress: '127.0.0.1',
  apiAccessEnabled: true,
};

describe.each(STORE_TARGETS)('Invited users on $name', (target) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(target);
  });
  afterAll(async () => svc?.close());

  const newOrg = async (name: string): Promise<number> => {
    const res = await svc.request<{ id: number }>('POST', '/v1/orgs', {
      body: { name, parentId: svc.orgId, securityRules: [loopbackRule] },
    });
    expect(res.status).toBe(201);
    return res.body.id;
  };
  const invite = (orgId: number, email: string, extra: Record<string, unknown> = {}) =>
    svc.request<InvitedUser>('POST', `/v1/orgs/${orgId}/invitedusers`, {
      body: { email, roleType: 'User', statusType: 'Pending', ...extra },
    });
  const q = encodeURIComponent;

  it('invites an existing user: 201 with Location, listed and readable, no token', async () => {
    const orgId = await newOrg('Invite existing');
    const person = await addUser(svc, svc.orgId, 'User', 'Existing.Person@ferry.test');
    const before = Date.now();
    const res = await svc.request<InvitedUser>('POST', `/v1/orgs/${orgId}/invitedusers`, {
      body: { Email: person.email, RoleType: 'ReadOnly', StatusType: 'Pending', Message: 'Welcome aboard' },
    });
    expect(res.status).toBe(201);
    expect(res.headers['location']).toBe(`/v1/orgs/${orgId}/invitedusers/Existing.Person@ferry.test`);
    expect(res.body).toEqual({
      email: person.email,
      roleType: 'ReadOnly',
      statusType: 'Pending',
      invitedDate: expect.any(String),
      message: 'Welcome aboard',
    });
    expect(Date.parse(res.body.invitedDate)).toBeGreaterThanOrEqual(before - 1000);
    expect(res.body).not.toHaveProperty('invitationToken');

    const one = await svc.request<InvitedUser>(
      'GET',
      `/v1/orgs/${orgId}/invitedusers/${q('existing.person@FERRY.TEST')}`,
    );
    expect(one.status).toBe(200);
    expect(one.body).toEqual(res.body);
    const list = await svc.request<InvitedUser[]>('GET', `/v1/orgs/${orgId}/invitedusers`);
    expect(list.headers['total-count']).toBe('1');
    expect(list.body).toEqual([res.body]);
  });

  it('pages the list with limit and offset', async () => {
    const orgId = await newOrg('Invite paging');
    for (const n of [1, 2, 3]) expect((await invite(orgId, `page${n}@ferry.test`)).status).toBe(201);
    const page = await svc.request<InvitedUser[]>('GET', `/v1/orgs/${orgId}/invitedusers?limit=2&offset=1`);
    expect(page.headers['total-count']).toBe('3');
    expect(page.body.map((i) => i.email)).toEqual(['page2@ferry.test', 'page3@ferry.test']);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/invitedusers?offset=x`)).status).toBe(400);
  });

  it('refuses bad invitations with 400', async () => {
    const orgId = await newOrg('Invite input');
    const cases: Array<[Record<string, unknown>, string]> = [
      [{ roleType: 'User', statusType: 'Pending' }, 'body.email'],
      [{ email: 'nobody', roleType: 'User', statusType: 'Pending' }, 'body.email'],
      [{ email: 'a@ferry.test', statusType: 'Pending' }, 'body.roleType'],
      [{ email: 'a@ferry.test', roleType: 'Owner', statusType: 'Pending' }, 'body.roleType'],
      [{ email: 'a@ferry.test', roleType: 'User' }, 'body.statusType'],
      [{ email: 'a@ferry.test', roleType: 'User', statusType: 'Declined' }, 'body.statusType'],
      [{ email: 'a@ferry.test', roleType: 'User', statusType: 'Accepted' }, 'body.statusType'],
      [{ email: 'a@ferry.test', roleType: 'User', statusType: 'Pending', token: 'x' }, 'body.token'],
      [{ email: 'a@ferry.test', roleType: 'User', statusType: 'Pending', message: 'x'.repeat(4001) }, 'body.message'],
      [{ email: 'a@ferry.test', roleType: 'User', statusType: 'Pending', message: 'nul\u0000' }, 'body.message'],
      [{ email: 'a\u0000@ferry.test', roleType: 'User', statusType: 'Pending' }, 'body.email'],
    ];
    for (const [body, path] of cases) {
      const res = await svc.request<Problem>('POST', `/v1/orgs/${orgId}/invitedusers`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.errors?.map((e) => e.path)).toContain(path);
    }
    expect((await svc.request('POST', `/v1/orgs/${orgId}/invitedusers`, { body: 'null' })).status).toBe(400);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/invitedusers/a%00b@ferry.test`)).status).toBe(400);
    expect((await svc.request('DELETE', `/v1/orgs/${orgId}/invitedusers?email=a%00b`)).status).toBe(400);
    const list = await svc.request<InvitedUser[]>('GET', `/v1/orgs/${orgId}/invitedusers`);
    expect(list.body).toEqual([]);
  });

  it('refuses to invite a member or someone already invited (409)', async () => {
    const orgId = await newOrg('Invite conflicts');
    const member = await addUser(svc, orgId, 'User');
    const asMember = await invite(orgId, member.email.toUpperCase());
    expect(asMember.status).toBe(409);
    expect((await invite(orgId, 'twice@ferry.test')).status).toBe(201);
    const twice = await svc.request<Problem>('POST', `/v1/orgs/${orgId}/invitedusers`, {
      body: { email: 'TWICE@ferry.test', roleType: 'Administrator', statusType: 'Pending' },
    });
    expect(twice.status).toBe(409);
    expect(twice.body.code).toBe('API_CONFLICT');
    // Concurrent duplicates: one wins, the other is a conflict, never a 500.
    const racing = await Promise.all([invite(orgId, 'race@ferry.test'), invite(orgId, 'Race@ferry.test')]);
    expect(racing.map((r) => r.status).sort()).toEqual([201, 409]);
  });

  it('modifies role and message, and refuses changing email or status', async () => {
    const orgId = await newOrg('Invite modify');
    const { invitationId: _id, invitationToken: _token, ...created } = (await invite(orgId, 'modify@ferry.test')).body;
    const path = `/v1/orgs/${orgId}/invitedusers/${q('MODIFY@ferry.test')}`;
    const res = await svc.request<InvitedUser>('PUT', path, {
      body: { RoleType: 'Administrator', Message: 'Please join' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ ...created, roleType: 'Administrator', message: 'Please join' });
    expect((await svc.request<InvitedUser>('GET', path)).body).toEqual(res.body);
    const roundTrip = await svc.request<InvitedUser>('PUT', path, { body: res.body });
    expect(roundTrip.status).toBe(200);
    const cleared = await svc.request<InvitedUser>('PUT', path, { body: { message: null } });
    expect(cleared.body).toMatchObject({ roleType: 'Administrator', message: null });

    const status = await svc.request<Problem>('PUT', path, { body: { statusType: 'Declined' } });
    expect(status.status).toBe(400);
    expect(status.body.errors?.[0]?.path).toBe('body.statusType');
    const email = await svc.request<Problem>('PUT', path, { body: { email: 'other@ferry.test' } });
    expect(email.status).toBe(400);
    expect((await svc.request('PUT', path, { body: { roleType: 'Boss' } })).status).toBe(400);
    expect((await svc.request('PUT', path, { body: { extra: 1 } })).status).toBe(400);
    expect(
      (
        await svc.request('PUT', `/v1/orgs/${orgId}/invitedusers/${q('ghost@ferry.test')}`, {
          body: { roleType: 'User' },
        })
      ).status,
    ).toBe(404);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/invitedusers/${q('ghost@ferry.test')}`)).status).toBe(404);
  });

  it('deletes Pending and Declined invitations; an accepted one is gone (404 pointing to the users delete)', async () => {
    const orgId = await newOrg('Invite delete');
    expect((await invite(orgId, 'pending@ferry.test')).status).toBe(201);
    expect(
      (await svc.request('DELETE', `/v1/orgs/${orgId}/invitedusers?email=${q('PENDING@ferry.test')}`)).status,
    ).toBe(204);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/invitedusers/${q('pending@ferry.test')}`)).status).toBe(404);

    const decliner = await addUser(svc, undefined, 'User');
    const accepter = await addUser(svc, undefined, 'User');
    await invite(orgId, decliner.email);
    await invite(orgId, accepter.email);
    const mine = async (who: typeof decliner) =>
      (await svc.request<Invitation[]>('GET', '/v1/users/invitations', { auth: who })).body[0];
    const declined = await svc.request('PUT', `/v1/users/invitations/${(await mine(decliner))?.id}?accept=false`, {
      auth: decliner,
    });
    expect(declined.status).toBe(200);
    expect(
      (await svc.request<InvitedUser>('GET', `/v1/orgs/${orgId}/invitedusers/${q(decliner.email)}`)).body.statusType,
    ).toBe('Declined');
    const accepted = await svc.request('PUT', `/v1/users/invitations/${(await mine(accepter))?.id}?accept=true`, {
      auth: accepter,
    });
    expect(accepted.status).toBe(200);

    expect((await svc.request('DELETE', `/v1/orgs/${orgId}/invitedusers?email=${q(decliner.email)}`)).status).toBe(204);
    const gone = await svc.request<Problem>('DELETE', `/v1/orgs/${orgId}/invitedusers?email=${q(accepter.email)}`);
    expect(gone.status).toBe(404);
    expect(gone.body.detail).toContain(`/v1/orgs/${orgId}/users?email=`);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/invitedusers/${q(accepter.email)}`)).status).toBe(404);
    expect((await svc.request('DELETE', `/v1/orgs/${orgId}/invitedusers?email=${q('never@ferry.test')}`)).status).toBe(
      404,
    );
    expect((await svc.request('DELETE', `/v1/orgs/${orgId}/invitedusers`)).status).toBe(400);
    expect((await svc.request<InvitedUser[]>('GET', `/v1/orgs/${orgId}/invitedusers`)).body).toEqual([]);
  });

  it('lets Users and Read-only users read invitations but not manage them', async () => {
    const orgId = await newOrg('Invite roles');
    await invite(orgId, 'roles@ferry.test');
    for (const role of ['User', 'ReadOnly'] as const) {
      const who = await addUser(svc, orgId, role);
      expect((await svc.request('GET', `/v1/orgs/${orgId}/invitedusers`, { auth: who })).status).toBe(200);
      expect(
        (await svc.request('GET', `/v1/orgs/${orgId}/invitedusers/${q('roles@ferry.test')}`, { auth: who })).status,
      ).toBe(200);
      const post = await svc.request<Problem>('POST', `/v1/orgs/${orgId}/invitedusers`, {
        auth: who,
        body: { email: 'new@ferry.test', roleType: 'User', statusType: 'Pending' },
      });
      expect(post.status).toBe(403);
      expect(post.body.code).toBe('API_FORBIDDEN_ROLE');
      expect(
        (
          await svc.request('PUT', `/v1/orgs/${orgId}/invitedusers/${q('roles@ferry.test')}`, {
            auth: who,
            body: { roleType: 'Administrator' },
          })
        ).status,
      ).toBe(403);
      expect(
        (await svc.request('DELETE', `/v1/orgs/${orgId}/invitedusers?email=${q('roles@ferry.test')}`, { auth: who }))
          .status,
      ).toBe(403);
    }
    const outsider = await addUser(svc, undefined, 'User');
    expect((await svc.request('GET', `/v1/orgs/${orgId}/invitedusers`, { auth: outsider })).status).toBe(404);
  });

  it('refuses invitations to platform-hosted Organizations', async () => {
    const orgId = await newOrg('Invite platform');
    await svc.service.store.db.updateTable('orgs').set({ isSvcOrg: 1 }).where('id', '=', orgId).execute();
    const res = await svc.request<Problem>('POST', `/v1/orgs/${orgId}/invitedusers`, {
      body: { email: 'p@ferry.test', roleType: 'User', statusType: 'Pending' },
    });
    expect(res.status).toBe(403);
    expect(res.body.code).toBe('API_PLATFORM_HOSTED');
  });

  describe('a person without an account', () => {
    it('gets a one-time token, stored only as its hash, valid 7 days', async () => {
      const orgId = await newOrg('Token');
      const res = await invite(orgId, 'Newcomer@ferry.test', { roleType: 'Administrator' });
      expect(res.status).toBe(201);
      const { invitationId, invitationToken } = res.body;
      expect(invitationId).toMatch(/^[0-9a-f-]{36}$/);
      expect(invitationToken).toMatch(/^[A-Za-z0-9_-]{32}$/);
      const row = await svc.service.store.db
        .selectFrom('invitations')
        .selectAll()
        .where('id', '=', invitationId ?? '')
        .executeTakeFirstOrThrow();
      expect(row.tokenHash).toBe(sha256(invitationToken ?? ''));
      const days = (Date.parse(row.tokenExpiresAt ?? '') - Date.parse(row.invitedDate)) / 86_400_000;
      expect(days).toBe(7);
      const again = await svc.request<InvitedUser>('GET', `/v1/orgs/${orgId}/invitedusers/${q('newcomer@ferry.test')}`);
      expect(again.body).not.toHaveProperty('invitationToken');
      expect(JSON.stringify((await svc.request('GET', `/v1/orgs/${orgId}/invitedusers`)).body)).not.toContain(
        invitationToken,
      );
    });

    it('registers with the token once, then signs in with Basic auth as a member', async () => {
      const orgId = await newOrg('Register');
      const { invitationId, invitationToken } = (
        await invite(orgId, 'Joiner@ferry.test', { roleType: 'Administrator' })
      ).body;
      const url = `/v1/users/invitations/${invitationId}/register`;
      const body = { token: invitationToken, firstName: 'Jo', lastName: 'Iner', password: 'joiner-password' };

      const wrong = await svc.request<Problem>('POST', url, { auth: null, body: { ...body, token: 'not-the-token' } });
      expect(wrong.status).toBe(401);
      expect(wrong.body.code).toBe('API_INVITATION_TOKEN_INVALID');
      const short = await svc.request<Problem>('POST', url, { auth: null, body: { ...body, password: 'short' } });
      expect(short.status).toBe(400);
      expect(short.body.errors?.[0]?.path).toBe('body.password');
      expect((await svc.request('POST', url, { auth: null, body: { ...body, firstName: '' } })).status).toBe(400);
      expect((await svc.request('POST', url, { auth: null, body: { ...body, email: 'x@ferry.test' } })).status).toBe(
        400,
      );
      expect((await svc.request('POST', url, { auth: null, body: { token: invitationToken } })).status).toBe(400);
      expect(
        (await svc.request('POST', '/v1/users/invitations/not-a-guid/register', { auth: null, body })).status,
      ).toBe(400);
      const unknown = await svc.request<Problem>(
        'POST',
        '/v1/users/invitations/7d7b1f6a-8a53-4c39-9a0e-2f2f5d6b1e11/register',
        { auth: null, body },
      );
      expect(unknown.status).toBe(401);

      const res = await svc.request<User>('POST', url, { auth: null, body });
      expect(res.status).toBe(201);
      expect(res.headers['location']).toBe('/v1/users');
      expect(res.body).toMatchObject({
        email: 'Joiner@ferry.test',
        firstName: 'Jo',
        lastName: 'Iner',
        isApproved: true,
        password: null,
        orgId,
        roleType: 'Administrator',
      });

      const creds = { email: 'joiner@FERRY.test', password: 'joiner-password' };
      const me = await svc.request<User>('GET', '/v1/users', { auth: creds });
      expect(me.status).toBe(200);
      expect(me.body.id).toBe(res.body.id);
      expect((await svc.request('GET', `/v1/orgs/${orgId}/users`, { auth: creds })).status).toBe(200);
      const members = await svc.request<Array<{ email: string; roleType: string }>>('GET', `/v1/orgs/${orgId}/users`);
      expect(members.body).toContainEqual(
        expect.objectContaining({ email: 'Joiner@ferry.test', roleType: 'Administrator' }),
      );
      expect((await svc.request<InvitedUser[]>('GET', `/v1/orgs/${orgId}/invitedusers`)).body).toEqual([]);

      const replay = await svc.request<Problem>('POST', url, { auth: null, body });
      expect(replay.status).toBe(401);
      expect(replay.body.code).toBe('API_INVITATION_TOKEN_INVALID');
    });

    it('lets exactly one of two concurrent registrations with one token through', async () => {
      const orgId = await newOrg('Register race');
      const { invitationId, invitationToken } = (await invite(orgId, 'racer@ferry.test')).body;
      const body = { token: invitationToken, firstName: 'Ra', lastName: 'Cer', password: 'racer-password' };
      const results = await Promise.all(
        [1, 2].map(() => svc.request('POST', `/v1/users/invitations/${invitationId}/register`, { auth: null, body })),
      );
      const statuses = results.map((r) => r.status).sort();
      expect(statuses[0]).toBe(201);
      expect([401, 409]).toContain(statuses[1]);
    });

    it('refuses an expired token with 410', async () => {
      const orgId = await newOrg('Expired');
      const { invitationId, invitationToken } = (await invite(orgId, 'late@ferry.test')).body;
      await svc.service.store.db
        .updateTable('invitations')
        .set({ tokenExpiresAt: new Date(Date.now() - 1000).toISOString() })
        .where('id', '=', invitationId ?? '')
        .execute();
      const res = await svc.request<Problem>('POST', `/v1/users/invitations/${invitationId}/register`, {
        auth: null,
        body: { token: invitationToken, firstName: 'La', lastName: 'Te', password: 'late-password' },
      });
      expect(res.status).toBe(410);
      expect(res.body.code).toBe('API_INVITATION_TOKEN_EXPIRED');
      expect(
        (await svc.request('GET', '/v1/users', { auth: { email: 'late@ferry.test', password: 'late-password' } }))
          .status,
      ).toBe(401);
    });

    it('refuses registration when the account exists meanwhile, or the Organization is platform-hosted', async () => {
      const orgId = await newOrg('Register refusals');
      const first = (await invite(orgId, 'meanwhile@ferry.test')).body;
      const person = await addUser(svc, undefined, 'User', 'meanwhile@ferry.test');
      const exists = await svc.request<Problem>('POST', `/v1/users/invitations/${first.invitationId}/register`, {
        auth: null,
        body: { token: first.invitationToken, firstName: 'M', lastName: 'W', password: 'meanwhile-password' },
      });
      expect(exists.status).toBe(409);
      expect(exists.body.detail).toContain('accept=true');
      // The person accepts with their account instead.
      expect(
        (await svc.request('PUT', `/v1/users/invitations/${first.invitationId}?accept=true`, { auth: person })).status,
      ).toBe(200);

      const second = (await invite(orgId, 'hosted@ferry.test')).body;
      await svc.service.store.db.updateTable('orgs').set({ isSvcOrg: 1 }).where('id', '=', orgId).execute();
      const hosted = await svc.request<Problem>('POST', `/v1/users/invitations/${second.invitationId}/register`, {
        auth: null,
        body: { token: second.invitationToken, firstName: 'H', lastName: 'O', password: 'hosted-password' },
      });
      expect(hosted.status).toBe(403);
      expect(hosted.body.code).toBe('API_PLATFORM_HOSTED');
    });
  });

  it('documents the endpoints in the OpenAPI document', async () => {
    const doc = await svc.request<{ paths: Record<string, Record<string, { tags?: string[] }>> }>(
      'GET',
      '/v1/openapi.json',
      { auth: null },
    );
    expect(doc.status).toBe(200);
    const paths = doc.body.paths;
    expect(Object.keys(paths['/v1/orgs/{orgId}/invitedusers'] ?? {})).toEqual(
      expect.arrayContaining(['get', 'post', 'delete']),
    );
    expect(Object.keys(paths['/v1/orgs/{orgId}/invitedusers/{email}'] ?? {})).toEqual(
      expect.arrayContaining(['get', 'put']),
    );
    expect(Object.keys(paths['/v1/orgs/{orgId}/users'] ?? {})).toEqual(
      expect.arrayContaining(['get', 'put', 'delete']),
    );
    expect(Object.keys(paths['/v1/users'] ?? {})).toEqual(expect.arrayContaining(['get', 'put']));
    expect(paths['/v1/users/invitations/{inviteId}/register']?.['post']).toBeDefined();
    expect(paths['/v1/users/{userId}/notificationsettings']?.['put']?.tags).toEqual(['Users (own account)']);
  });
});
