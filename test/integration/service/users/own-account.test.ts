import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startService, type Credentials, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface User {
  id: string;
  email: string;
  firstName: string | null;
  lastName: string | null;
  company: string | null;
  phone: string | null;
  jobTitle: string | null;
  isApproved: boolean;
  password: null;
  omittedFields: string | null;
  orgId: number | null;
  orgName: string | null;
  tenantId: string | null;
  roleType: string | null;
  connectorActivationEmail: boolean | null;
  eventFailedJobEmail: boolean | null;
  failedJobEmail: boolean | null;
  failedRowsEmail: boolean | null;
  heartbeatEmail: boolean | null;
  systemUpdateEmail: boolean | null;
}

interface Invitation {
  id: string;
  orgId: number;
  orgName: string;
  sender: string;
  message: string | null;
  invitationDate: string;
  status: string;
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
const SWITCHES = [
  'connectorActivationEmail',
  'eventFailedJobEmail',
  'failedJobEmail',
  'failedRowsEmail',
  'heartbeatEmail',
  'systemUpdateEmail',
] as const;

describe.each(STORE_TARGETS)('Own account on $name', (target) => {
  let svc: TestService;
  beforeAll(async () => {
    svc = await startService(target);
  });
  afterAll(async () => svc?.close());

  const newOrg = async (name: string): Promise<{ id: number; name: string }> => {
    const res = await svc.request<{ id: number; name: string }>('POST', '/v1/orgs', {
      body: { name, parentId: svc.orgId, securityRules: [loopbackRule] },
    });
    expect(res.status).toBe(201);
    return res.body;
  };
  const tenantOf = async (orgId: number): Promise<string> =>
    (await svc.service.store.db.selectFrom('orgs').select('tenantId').where('id', '=', orgId).executeTakeFirstOrThrow())
      .tenantId;
  const setPlatformHosted = (orgId: number) =>
    svc.service.store.db.updateTable('orgs').set({ isSvcOrg: 1 }).where('id', '=', orgId).execute();
  const me = async (who: Credentials) => svc.request<User>('GET', '/v1/users', { auth: who });

  describe('GET /v1/users', () => {
    it('returns your User model with your first membership and a null password', async () => {
      const res = await me(svc.admin);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        email: svc.admin.email,
        firstName: 'Ferry',
        lastName: 'Administrator',
        isApproved: true,
        password: null,
        orgId: svc.orgId,
        orgName: expect.any(String),
        tenantId: await tenantOf(svc.orgId),
        roleType: 'Administrator',
        connectorActivationEmail: true,
        failedRowsEmail: false,
      });
      expect(res.body.id).toMatch(/^[0-9a-f-]{36}$/);
      expect(res.text).not.toMatch(/passwordHash|scrypt/);
    });

    it('gives nulls for the Organization of a user without memberships', async () => {
      const loner = await addUser(svc, undefined, 'User');
      const res = await me(loner);
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        email: loner.email,
        orgId: null,
        orgName: null,
        tenantId: null,
        roleType: null,
        heartbeatEmail: null,
      });
    });

    it('needs credentials but no Security Rule', async () => {
      expect((await svc.request('GET', '/v1/users', { auth: null })).status).toBe(401);
      const user = await addUser(svc, svc.orgId, 'User');
      // 127.0.0.2 is outside every rule of the bootstrap Organization.
      expect((await svc.request('GET', `/v1/orgs/${svc.orgId}`, { auth: user, from: '127.0.0.2' })).status).toBe(403);
      expect((await svc.request('GET', '/v1/users', { auth: user, from: '127.0.0.2' })).status).toBe(200);
    });
  });

  describe('PUT /v1/users', () => {
    it('modifies your own record and accepts the GET model back', async () => {
      const user = await addUser(svc, svc.orgId, 'User');
      const got = (await me(user)).body;
      const roundTrip = await svc.request<User>('PUT', '/v1/users', { auth: user, body: got });
      expect(roundTrip.status).toBe(200);
      expect(roundTrip.body).toEqual(got);
      const res = await svc.request<User>('PUT', '/v1/users', {
        auth: user,
        body: {
          Email: user.email,
          FirstName: 'Grace',
          LastName: 'Hopper',
          Company: 'Navy',
          Phone: '555',
          JobTitle: '',
        },
      });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        firstName: 'Grace',
        lastName: 'Hopper',
        company: 'Navy',
        phone: '555',
        jobTitle: null,
        password: null,
      });
      expect((await me(user)).body).toEqual(res.body);
      // Absent fields stay; null clears.
      const cleared = await svc.request<User>('PUT', '/v1/users', {
        auth: user,
        body: { email: user.email, firstName: 'Grace', lastName: 'Hopper', company: null },
      });
      expect(cleared.body).toMatchObject({ company: null, phone: '555' });
    });

    it('leaves fields named in omittedFields unchanged', async () => {
      const user = await addUser(svc, undefined, 'User');
      await svc.request('PUT', '/v1/users', {
        auth: user,
        body: { email: user.email, firstName: 'A', lastName: 'B', company: 'Kept', phone: '1' },
      });
      const res = await svc.request<User>('PUT', '/v1/users', {
        auth: user,
        body: {
          email: user.email,
          firstName: 'A',
          lastName: 'B',
          company: null,
          phone: null,
          omittedFields: 'Company, password',
          password: null,
        },
      });
      expect(res.body).toMatchObject({ company: 'Kept', phone: null });
    });

    it('changes the password (at least 8 characters)', async () => {
      const user = await addUser(svc, undefined, 'User');
      const base = { email: user.email, firstName: 'P', lastName: 'W' };
      const short = await svc.request<Problem>('PUT', '/v1/users', {
        auth: user,
        body: { ...base, password: 'short' },
      });
      expect(short.status).toBe(400);
      expect(short.body.errors?.[0]?.path).toBe('body.password');
      expect(
        (await svc.request('PUT', '/v1/users', { auth: user, body: { ...base, password: 'a-new-password' } })).status,
      ).toBe(200);
      expect((await me(user)).status).toBe(401);
      expect((await me({ email: user.email, password: 'a-new-password' })).status).toBe(200);
    });

    it('refuses a change of email to another address, so nobody can claim invitations sent there', async () => {
      const user = await addUser(svc, undefined, 'User');
      const other = await addUser(svc, undefined, 'User');
      const taken = await svc.request<Problem>('PUT', '/v1/users', {
        auth: user,
        body: { email: other.email.toUpperCase(), firstName: 'E', lastName: 'M' },
      });
      expect(taken.status).toBe(400);
      const invitee = 'cfo@victim.example';
      const child = await svc.request<{ id: number }>('POST', '/v1/orgs', {
        body: {
          name: 'Victim',
          parentId: svc.orgId,
          securityRules: [
            {
              name: 'lo',
              allowedIpRangeStartAddress: '127.0.0.1',
              allowedIpRangeEndAddress: '127.0.0.1',
              apiAccessEnabled: true,
            },
          ],
        },
      });
      expect(
        (
          await svc.request('POST', `/v1/orgs/${child.body.id}/invitedusers`, {
            body: { email: invitee, roleType: 'Administrator', statusType: 'Pending' },
          })
        ).status,
      ).toBe(201);
      const claim = await svc.request<Problem>('PUT', '/v1/users', {
        auth: user,
        body: { email: invitee, firstName: 'E', lastName: 'M' },
      });
      expect(claim.status).toBe(400);
      expect(claim.body.code).toBe('API_UNSUPPORTED');
      expect((await svc.request<unknown[]>('GET', '/v1/users/invitations', { auth: user })).body).toEqual([]);
      expect((await me(user)).status).toBe(200);
      // Only the case may change: same login, new spelling.
      const recased = await svc.request<User>('PUT', '/v1/users', {
        auth: user,
        body: { email: user.email.toUpperCase(), firstName: 'E', lastName: 'M' },
      });
      expect(recased.status).toBe(200);
      expect(recased.body.email).toBe(user.email.toUpperCase());
      expect((await me(user)).body.id).toBe(user.id);
    });

    it("refuses bad models with 400 and another user's ID with 403", async () => {
      const user = await addUser(svc, undefined, 'User');
      const other = await addUser(svc, undefined, 'User');
      const cases: Array<[Record<string, unknown>, string]> = [
        [{ firstName: 'A', lastName: 'B' }, 'body.email'],
        [{ email: user.email, lastName: 'B' }, 'body.firstName'],
        [{ email: user.email, firstName: 'A' }, 'body.lastName'],
        [{ email: user.email, firstName: ' ', lastName: 'B' }, 'body.firstName'],
        [{ email: 'no-at-sign', firstName: 'A', lastName: 'B' }, 'body.email'],
        [{ email: user.email, firstName: 'A', lastName: 'B', isAdmin: true }, 'body.isAdmin'],
        [{ email: user.email, firstName: 'A', lastName: 'B', roleType: 'Root' }, 'body.roleType'],
        [{ email: user.email, firstName: 'A', lastName: 'B', company: 'nul\u0000' }, 'body.company'],
        [{ email: user.email, firstName: 'A\u0000', lastName: 'B' }, 'body.firstName'],
      ];
      for (const [body, path] of cases) {
        const res = await svc.request<Problem>('PUT', '/v1/users', { auth: user, body });
        expect(res.status, JSON.stringify(body)).toBe(400);
        expect(res.body.errors?.map((e) => e.path)).toContain(path);
      }
      const foreign = await svc.request<Problem>('PUT', '/v1/users', {
        auth: user,
        body: { id: other.id, email: user.email, firstName: 'A', lastName: 'B' },
      });
      expect(foreign.status).toBe(403);
      expect(foreign.body.code).toBe('API_FORBIDDEN_OTHER_USER');
      expect(
        (
          await svc.request('PUT', '/v1/users', {
            auth: null,
            body: { email: user.email, firstName: 'A', lastName: 'B' },
          })
        ).status,
      ).toBe(401);
    });

    it('is refused for members of a platform-hosted Organization', async () => {
      const org = await newOrg('Hosted member');
      const user = await addUser(svc, org.id, 'User');
      await addUser(svc, undefined, 'User');
      await setPlatformHosted(org.id);
      const res = await svc.request<Problem>('PUT', '/v1/users', {
        auth: user,
        body: { email: user.email, firstName: 'No', lastName: 'Way' },
      });
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('API_PLATFORM_HOSTED');
      expect((await me(user)).body.firstName).toBe('Test');
    });
  });

  describe('notification settings', () => {
    it('lists one entry per membership, paged, and only your own', async () => {
      const org = await newOrg('Notify list');
      const user = await addUser(svc, svc.orgId, 'User');
      await svc.service.store.db
        .insertInto('memberships')
        .values({
          orgId: org.id,
          userId: user.id,
          roleType: 'ReadOnly',
          connectorActivationEmail: 0,
          eventFailedJobEmail: 0,
          failedJobEmail: 1,
          failedRowsEmail: 1,
          heartbeatEmail: 0,
          systemUpdateEmail: 0,
          createdAt: new Date(Date.now() + 1000).toISOString(),
        })
        .execute();
      const res = await svc.request<User[]>('GET', `/v1/users/${user.id}/notificationsettings`, { auth: user });
      expect(res.status).toBe(200);
      expect(res.headers['total-count']).toBe('2');
      expect(res.body.map((u) => [u.orgId, u.roleType])).toEqual([
        [svc.orgId, 'User'],
        [org.id, 'ReadOnly'],
      ]);
      expect(res.body[1]).toMatchObject({
        id: user.id,
        email: user.email,
        orgName: 'Notify list',
        tenantId: await tenantOf(org.id),
        failedRowsEmail: true,
        heartbeatEmail: false,
        password: null,
      });
      const page = await svc.request<User[]>(
        'GET',
        `/v1/users/${user.id.toUpperCase()}/notificationsettings?limit=1&offset=1`,
        { auth: user },
      );
      expect(page.body.map((u) => u.orgId)).toEqual([org.id]);
      expect(page.headers['total-count']).toBe('2');

      const other = await svc.request<Problem>('GET', `/v1/users/${user.id}/notificationsettings`);
      expect(other.status).toBe(403);
      expect(other.body.code).toBe('API_FORBIDDEN_OTHER_USER');
      expect((await svc.request('GET', '/v1/users/not-a-guid/notificationsettings', { auth: user })).status).toBe(400);
      expect((await svc.request('GET', `/v1/users/${user.id}/notificationsettings`, { auth: null })).status).toBe(401);
    });

    it('sets the switches of the membership named by tenantId', async () => {
      const user = await addUser(svc, svc.orgId, 'ReadOnly');
      const url = `/v1/users/${user.id}/notificationsettings`;
      const [entry] = (await svc.request<User[]>('GET', url, { auth: user })).body;
      if (!entry) throw new Error('no entry');
      const flipped = Object.fromEntries(SWITCHES.map((s) => [s, !entry[s]]));
      const res = await svc.request<User>('PUT', url, { auth: user, body: { ...entry, ...flipped } });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ ...entry, ...flipped });
      expect((await svc.request<User[]>('GET', url, { auth: user })).body[0]).toEqual(res.body);
      // Only the switches sent change; PascalCase and an upper-case tenantId are fine.
      const one = await svc.request<User>('PUT', url, {
        auth: user,
        body: { OrgName: entry.orgName, TenantId: entry.tenantId?.toUpperCase(), HeartbeatEmail: true },
      });
      expect(one.body).toEqual({ ...entry, ...flipped, heartbeatEmail: true });
      // Other User fields in the model are ignored here.
      const ignored = await svc.request<User>('PUT', url, {
        auth: user,
        body: { orgName: entry.orgName, tenantId: entry.tenantId, firstName: 'Changed' },
      });
      expect(ignored.body.firstName).toBe('Test');
    });

    it('refuses bad settings: missing orgName or tenantId, unknown tenant, another user', async () => {
      const user = await addUser(svc, svc.orgId, 'User');
      const url = `/v1/users/${user.id}/notificationsettings`;
      const tenantId = await tenantOf(svc.orgId);
      const noTenant = await svc.request<Problem>('PUT', url, {
        auth: user,
        body: { orgName: 'x', failedJobEmail: false },
      });
      expect(noTenant.status).toBe(400);
      expect(noTenant.body.errors?.[0]?.path).toBe('body.tenantId');
      const noName = await svc.request<Problem>('PUT', url, { auth: user, body: { tenantId, failedJobEmail: false } });
      expect(noName.status).toBe(400);
      expect(noName.body.errors?.[0]?.path).toBe('body.orgName');
      expect((await svc.request('PUT', url, { auth: user, body: { orgName: 'x', tenantId: 'nope' } })).status).toBe(
        400,
      );
      expect(
        (await svc.request('PUT', url, { auth: user, body: { orgName: 'x', tenantId, failedJobEmail: 'yes' } })).status,
      ).toBe(400);
      expect(
        (await svc.request('PUT', url, { auth: user, body: { orgName: 'x', tenantId, pagerEmail: true } })).status,
      ).toBe(400);
      const unknown = await svc.request<Problem>('PUT', url, {
        auth: user,
        body: { orgName: 'x', tenantId: '7d7b1f6a-8a53-4c39-9a0e-2f2f5d6b1e11' },
      });
      expect(unknown.status).toBe(404);
      // A tenant of an Organization the user does not belong to.
      const foreignOrg = await newOrg('Notify foreign');
      expect(
        (await svc.request('PUT', url, { auth: user, body: { orgName: 'x', tenantId: await tenantOf(foreignOrg.id) } }))
          .status,
      ).toBe(404);
      const other = await svc.request<Problem>('PUT', url, { body: { orgName: 'x', tenantId } });
      expect(other.status).toBe(403);
    });
  });

  describe('your invitations', () => {
    const inviteTo = async (orgId: number, email: string, roleType = 'User') => {
      const res = await svc.request('POST', `/v1/orgs/${orgId}/invitedusers`, {
        body: { email, roleType, statusType: 'Pending', message: 'Join us' },
      });
      expect(res.status).toBe(201);
    };
    const invitationsOf = async (who: Credentials) =>
      svc.request<Invitation[]>('GET', '/v1/users/invitations', { auth: who });

    it('lists the invitations addressed to your email, matched case-insensitively', async () => {
      const a = await newOrg('Inviting A');
      const b = await newOrg('Inviting B');
      const user = await addUser(svc, undefined, 'User', 'Invitee.One@ferry.test');
      await inviteTo(a.id, 'INVITEE.ONE@ferry.test', 'Administrator');
      await inviteTo(b.id, 'invitee.one@ferry.test');
      await inviteTo(b.id, 'someone.else@ferry.test');
      const res = await invitationsOf(user);
      expect(res.status).toBe(200);
      expect(res.headers['total-count']).toBe('2');
      expect(res.body[0]).toEqual({
        id: expect.stringMatching(/^[0-9a-f-]{36}$/),
        orgId: a.id,
        orgName: 'Inviting A',
        sender: svc.admin.email,
        message: 'Join us',
        invitationDate: expect.any(String),
        status: 'Pending',
        roleType: 'Administrator',
      });
      expect(res.body[1]?.orgId).toBe(b.id);
      const page = await svc.request<Invitation[]>('GET', '/v1/users/invitations?limit=1&offset=1', { auth: user });
      expect(page.body.map((i) => i.orgId)).toEqual([b.id]);
      expect((await svc.request('GET', '/v1/users/invitations', { auth: null })).status).toBe(401);
    });

    it('accepts: you become a member with the invited role and the invitation goes', async () => {
      const org = await newOrg('Accepting');
      const user = await addUser(svc, undefined, 'User');
      await inviteTo(org.id, user.email, 'Administrator');
      const [invitation] = (await invitationsOf(user)).body;
      const res = await svc.request<Invitation>(
        'PUT',
        `/v1/users/invitations/${invitation?.id.toUpperCase()}?Accept=TRUE`,
        { auth: user },
      );
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({
        id: invitation?.id,
        orgId: org.id,
        status: 'Accepted',
        roleType: 'Administrator',
      });
      expect((await invitationsOf(user)).body).toEqual([]);
      const members = await svc.request<Array<{ email: string; roleType: string }>>('GET', `/v1/orgs/${org.id}/users`, {
        auth: user,
      });
      expect(members.status).toBe(200);
      expect(members.body).toContainEqual({
        email: user.email,
        firstName: 'Test',
        lastName: 'User',
        roleType: 'Administrator',
      });
      expect(
        (await svc.request('GET', `/v1/orgs/${org.id}/invitedusers/${encodeURIComponent(user.email)}`)).status,
      ).toBe(404);
      expect((await me(user)).body.orgId).toBe(org.id);
      expect(
        (await svc.request('PUT', `/v1/users/invitations/${invitation?.id}?accept=true`, { auth: user })).status,
      ).toBe(404);
    });

    it('declines: the invitation stays as Declined and cannot be accepted afterwards', async () => {
      const org = await newOrg('Declining');
      const user = await addUser(svc, undefined, 'User');
      await inviteTo(org.id, user.email);
      const [invitation] = (await invitationsOf(user)).body;
      const res = await svc.request<Invitation>('PUT', `/v1/users/invitations/${invitation?.id}?accept=false`, {
        auth: user,
      });
      expect(res.status).toBe(200);
      expect(res.body.status).toBe('Declined');
      expect((await invitationsOf(user)).body[0]?.status).toBe('Declined');
      const orgSide = await svc.request<{ statusType: string }>(
        'GET',
        `/v1/orgs/${org.id}/invitedusers/${encodeURIComponent(user.email)}`,
      );
      expect(orgSide.body.statusType).toBe('Declined');
      expect(
        (await svc.request('PUT', `/v1/users/invitations/${invitation?.id}?accept=false`, { auth: user })).status,
      ).toBe(200);
      const late = await svc.request<Problem>('PUT', `/v1/users/invitations/${invitation?.id}?accept=true`, {
        auth: user,
      });
      expect(late.status).toBe(409);
      expect((await svc.request('GET', `/v1/orgs/${org.id}/users`, { auth: user })).status).toBe(404);
    });

    it('acts only on your own invitations, and refuses bad input', async () => {
      const org = await newOrg('Not yours');
      const invitee = await addUser(svc, undefined, 'User');
      const intruder = await addUser(svc, undefined, 'User');
      await inviteTo(org.id, invitee.email);
      const [invitation] = (await invitationsOf(invitee)).body;
      expect((await invitationsOf(intruder)).body).toEqual([]);
      const res = await svc.request<Problem>('PUT', `/v1/users/invitations/${invitation?.id}?accept=true`, {
        auth: intruder,
      });
      expect(res.status).toBe(404);
      expect(
        (
          await svc.request('PUT', '/v1/users/invitations/7d7b1f6a-8a53-4c39-9a0e-2f2f5d6b1e11?accept=true', {
            auth: invitee,
          })
        ).status,
      ).toBe(404);
      expect((await svc.request('PUT', `/v1/users/invitations/${invitation?.id}`, { auth: invitee })).status).toBe(400);
      expect(
        (await svc.request('PUT', `/v1/users/invitations/${invitation?.id}?accept=maybe`, { auth: invitee })).status,
      ).toBe(400);
      expect((await svc.request('PUT', '/v1/users/invitations/42?accept=true', { auth: invitee })).status).toBe(400);
      expect(
        (await svc.request('PUT', `/v1/users/invitations/${invitation?.id}?accept=true`, { auth: null })).status,
      ).toBe(401);
      expect((await invitationsOf(invitee)).body[0]?.status).toBe('Pending');
    });

    it('refuses answering an invitation of a platform-hosted Organization', async () => {
      const org = await newOrg('Hosted invite');
      const user = await addUser(svc, undefined, 'User');
      await inviteTo(org.id, user.email);
      await setPlatformHosted(org.id);
      const [invitation] = (await invitationsOf(user)).body;
      for (const accept of ['true', 'false']) {
        const res = await svc.request<Problem>('PUT', `/v1/users/invitations/${invitation?.id}?accept=${accept}`, {
          auth: user,
        });
        expect(res.status).toBe(403);
        expect(res.body.code).toBe('API_PLATFORM_HOSTED');
      }
      expect((await invitationsOf(user)).body[0]?.status).toBe('Pending');
    });
  });
});
