import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface OrgUser {
  email: string;
  firstName: string | null;
  lastName: string | null;
  roleType: string;
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

describe.each(STORE_TARGETS)('Organization users on $name', (target) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(target);
  });
  afterAll(async () => svc?.close());

  /** A fresh child Organization whose only Administrator member is the bootstrap administrator. */
  const newOrg = async (name: string): Promise<number> => {
    const res = await svc.request<{ id: number }>('POST', '/v1/orgs', {
      body: { name, parentId: svc.orgId, securityRules: [loopbackRule] },
    });
    expect(res.status).toBe(201);
    return res.body.id;
  };
  const members = async (orgId: number) => (await svc.request<OrgUser[]>('GET', `/v1/orgs/${orgId}/users`)).body;

  it('lists members with their role, paged, with Total-Count', async () => {
    const orgId = await newOrg('Members list');
    const user = await addUser(svc, orgId, 'User', 'b-member@ferry.test');
    await addUser(svc, orgId, 'ReadOnly', 'c-member@ferry.test');
    const all = await svc.request<OrgUser[]>('GET', `/v1/orgs/${orgId}/users`);
    expect(all.status).toBe(200);
    expect(all.headers['total-count']).toBe('3');
    expect(all.body).toEqual([
      { email: svc.admin.email, firstName: 'Ferry', lastName: 'Administrator', roleType: 'Administrator' },
      { email: user.email, firstName: 'Test', lastName: 'User', roleType: 'User' },
      { email: 'c-member@ferry.test', firstName: 'Test', lastName: 'ReadOnly', roleType: 'ReadOnly' },
    ]);
    const page = await svc.request<OrgUser[]>('GET', `/v1/orgs/${orgId}/users?limit=1&offset=1`);
    expect(page.headers['total-count']).toBe('3');
    expect(page.body.map((m) => m.email)).toEqual([user.email]);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/users?limit=-1`)).status).toBe(400);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/users?limit=1001`)).status).toBe(400);
  });

  it('lets Users and Read-only users read members but not change them', async () => {
    const orgId = await newOrg('Member roles');
    const user = await addUser(svc, orgId, 'User');
    const reader = await addUser(svc, orgId, 'ReadOnly');
    for (const who of [user, reader]) {
      const list = await svc.request<OrgUser[]>('GET', `/v1/orgs/${orgId}/users`, { auth: who });
      expect(list.status).toBe(200);
      expect(list.body).toHaveLength(3);
      const put = await svc.request<Problem>('PUT', `/v1/orgs/${orgId}/users`, {
        auth: who,
        body: { email: who.email, roleType: 'Administrator' },
      });
      expect(put.status).toBe(403);
      expect(put.body.code).toBe('API_FORBIDDEN_ROLE');
      const del = await svc.request<Problem>(
        'DELETE',
        `/v1/orgs/${orgId}/users?email=${encodeURIComponent(reader.email)}`,
        { auth: who },
      );
      expect(del.status).toBe(403);
    }
    expect((await members(orgId)).find((m) => m.email === user.email)?.roleType).toBe('User');
    const outsider = await addUser(svc, undefined, 'User');
    expect((await svc.request('GET', `/v1/orgs/${orgId}/users`, { auth: outsider })).status).toBe(404);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/users`, { auth: null })).status).toBe(401);
  });

  it("changes a member's role and names, matching the email case-insensitively", async () => {
    const orgId = await newOrg('Member modify');
    const user = await addUser(svc, orgId, 'User', 'Mixed.Case@ferry.test');
    const res = await svc.request<OrgUser>('PUT', `/v1/orgs/${orgId}/users`, {
      body: { Email: 'MIXED.case@FERRY.test', FirstName: 'Ada', LastName: 'Lovelace', RoleType: 'ReadOnly' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ email: user.email, firstName: 'Ada', lastName: 'Lovelace', roleType: 'ReadOnly' });
    expect((await members(orgId)).find((m) => m.email === user.email)).toEqual(res.body);
    // The new role takes effect: a Read-only member cannot invite.
    const invite = await svc.request('POST', `/v1/orgs/${orgId}/invitedusers`, {
      auth: user,
      body: { email: 'x@ferry.test', roleType: 'User', statusType: 'Pending' },
    });
    expect(invite.status).toBe(403);
    // A model read with GET goes back unchanged; absent and null fields stay.
    const roundTrip = await svc.request<OrgUser>('PUT', `/v1/orgs/${orgId}/users`, { body: res.body });
    expect(roundTrip.body).toEqual(res.body);
    const onlyRole = await svc.request<OrgUser>('PUT', `/v1/orgs/${orgId}/users`, {
      body: { email: user.email, firstName: null, roleType: 'Administrator' },
    });
    expect(onlyRole.body).toEqual({ ...res.body, roleType: 'Administrator' });
  });

  it('refuses bad member models with 400', async () => {
    const orgId = await newOrg('Member input');
    const user = await addUser(svc, orgId, 'User');
    const cases: Array<[unknown, string]> = [
      [{ roleType: 'User' }, 'body.email'],
      [{ email: 'not-an-email', roleType: 'User' }, 'body.email'],
      [{ email: user.email, roleType: 'Owner' }, 'body.roleType'],
      [{ email: user.email, firstName: '' }, 'body.firstName'],
      [{ email: user.email, firstName: 'x'.repeat(256) }, 'body.firstName'],
      [{ email: user.email, nickname: 'x' }, 'body.nickname'],
      [{ email: user.email, roleType: 3 }, 'body.roleType'],
      [{ email: user.email, lastName: 'nul\u0000byte' }, 'body.lastName'],
    ];
    for (const [body, path] of cases) {
      const res = await svc.request<Problem>('PUT', `/v1/orgs/${orgId}/users`, { body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      expect(res.body.errors?.map((e) => e.path)).toContain(path);
    }
    expect((await svc.request('PUT', `/v1/orgs/${orgId}/users`, { body: '{"email":' })).status).toBe(400);
    expect((await svc.request('PUT', `/v1/orgs/${orgId}/users`, { body: [] })).status).toBe(400);
    expect((await svc.request('PUT', '/v1/orgs/abc/users', { body: { email: user.email } })).status).toBe(400);
    expect((await svc.request('DELETE', `/v1/orgs/${orgId}/users?email=a%00b@ferry.test`)).status).toBe(400);
    expect((await svc.request('DELETE', `/v1/orgs/${orgId}/users?email=${'x'.repeat(321)}`)).status).toBe(400);
  });

  it('answers 404 for someone who is not a member, pointing to a pending invitation', async () => {
    const orgId = await newOrg('Member 404');
    const stranger = await addUser(svc, svc.orgId, 'User');
    const notMember = await svc.request<Problem>('PUT', `/v1/orgs/${orgId}/users`, {
      body: { email: stranger.email, roleType: 'User' },
    });
    expect(notMember.status).toBe(404);
    const invited = await svc.request('POST', `/v1/orgs/${orgId}/invitedusers`, {
      body: { email: stranger.email, roleType: 'User', statusType: 'Pending' },
    });
    expect(invited.status).toBe(201);
    const pending = await svc.request<Problem>(
      'DELETE',
      `/v1/orgs/${orgId}/users?email=${encodeURIComponent(stranger.email)}`,
    );
    expect(pending.status).toBe(404);
    expect(pending.body.detail).toMatch(/invitedusers/);
    expect((await svc.request('DELETE', `/v1/orgs/${orgId}/users?email=nobody@ferry.test`)).status).toBe(404);
  });

  it('keeps the last Administrator: no demotion, no removal', async () => {
    const orgId = await newOrg('Last admin');
    const demote = await svc.request<Problem>('PUT', `/v1/orgs/${orgId}/users`, {
      body: { email: svc.admin.email, roleType: 'User' },
    });
    expect(demote.status).toBe(409);
    expect(demote.body.code).toBe('API_CONFLICT');
    const remove = await svc.request<Problem>(
      'DELETE',
      `/v1/orgs/${orgId}/users?email=${encodeURIComponent(svc.admin.email)}`,
    );
    expect(remove.status).toBe(409);
    expect((await members(orgId)).map((m) => m.roleType)).toEqual(['Administrator']);

    const second = await addUser(svc, orgId, 'Administrator');
    const ok = await svc.request<OrgUser>('PUT', `/v1/orgs/${orgId}/users`, {
      body: { email: svc.admin.email, roleType: 'ReadOnly' },
    });
    expect(ok.status).toBe(200);
    expect(ok.body.roleType).toBe('ReadOnly');
    // Now `second` is the last one.
    expect(
      (
        await svc.request('DELETE', `/v1/orgs/${orgId}/users?email=${encodeURIComponent(second.email)}`, {
          auth: second,
        })
      ).status,
    ).toBe(409);
    // A demoted member who administers the parent still manages this Organization: the highest right wins.
    const restore = await svc.request<OrgUser>('PUT', `/v1/orgs/${orgId}/users`, {
      body: { email: svc.admin.email, roleType: 'Administrator' },
    });
    expect(restore.status).toBe(200);
    expect(restore.body.roleType).toBe('Administrator');
    // A member whose only right is their own membership is bound by it.
    const reader = await addUser(svc, orgId, 'ReadOnly');
    expect((await svc.request('PUT', `/v1/orgs/${orgId}`, { auth: reader, body: { city: 'x' } })).status).toBe(403);
  });

  it('lets exactly one of two concurrent demotions of the last two Administrators through', async () => {
    const orgId = await newOrg('Concurrent demotions');
    const a = await addUser(svc, orgId, 'Administrator');
    const b = await addUser(svc, orgId, 'Administrator');
    await svc.request('PUT', `/v1/orgs/${orgId}/users`, { body: { email: svc.admin.email, roleType: 'User' } });
    const results = await Promise.all([
      svc.request('PUT', `/v1/orgs/${orgId}/users`, { auth: a, body: { email: a.email, roleType: 'User' } }),
      svc.request('PUT', `/v1/orgs/${orgId}/users`, { auth: b, body: { email: b.email, roleType: 'User' } }),
    ]);
    expect(results.map((r) => r.status).sort()).toEqual([200, 409]);
    expect((await members(orgId)).filter((m) => m.roleType === 'Administrator')).toHaveLength(1);
  });

  it('removes a member who accepted; the account stays and can be invited again', async () => {
    const orgId = await newOrg('Member remove');
    const user = await addUser(svc, orgId, 'User');
    const res = await svc.request(
      'DELETE',
      `/v1/orgs/${orgId}/users?email=${encodeURIComponent(user.email.toUpperCase())}`,
    );
    expect(res.status).toBe(204);
    expect((await members(orgId)).map((m) => m.email)).not.toContain(user.email);
    expect((await svc.request('GET', `/v1/orgs/${orgId}/users`, { auth: user })).status).toBe(404);
    expect((await svc.request('GET', '/v1/users', { auth: user })).status).toBe(200);
    expect(
      (await svc.request('DELETE', `/v1/orgs/${orgId}/users?email=${encodeURIComponent(user.email)}`)).status,
    ).toBe(404);
    const again = await svc.request('POST', `/v1/orgs/${orgId}/invitedusers`, {
      body: { email: user.email, roleType: 'User', statusType: 'Pending' },
    });
    expect(again.status).toBe(201);
    const noEmail = await svc.request<Problem>('DELETE', `/v1/orgs/${orgId}/users`);
    expect(noEmail.status).toBe(400);
    expect(noEmail.body.errors?.[0]?.path).toBe('query.email');
  });

  it('an Administrator may remove another Administrator, and themselves while another remains', async () => {
    const orgId = await newOrg('Self removal');
    const other = await addUser(svc, orgId, 'Administrator');
    const self = await addUser(svc, orgId, 'Administrator');
    expect(
      (await svc.request('DELETE', `/v1/orgs/${orgId}/users?email=${encodeURIComponent(other.email)}`, { auth: self }))
        .status,
    ).toBe(204);
    expect(
      (await svc.request('DELETE', `/v1/orgs/${orgId}/users?email=${encodeURIComponent(self.email)}`, { auth: self }))
        .status,
    ).toBe(204);
    expect((await members(orgId)).map((m) => m.email)).toEqual([svc.admin.email]);
  });
});
