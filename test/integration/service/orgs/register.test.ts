import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { sql } from 'kysely';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addRootOrganization } from '../../../../service/bootstrap.js';
import { SecretBox } from '../../../../service/crypto/master-key.js';
import { setManagedConnectorVendor } from '../../../../service/store/repos/connector-installs.repo.js';
import { startService, type Credentials, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

const PRIVATE = '5b0c7e1a-3d2f-4a6b-8c9d-0e1f2a3b4c5d';
const FOREIGN = '6c1d8f2b-4e3a-4b7c-9dae-1f2a3b4c5d6e';
const EXTRA = '7d2e9a3c-5f4b-4c8d-aebf-2a3b4c5d6e7f';

interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}
interface Org {
  id: number;
  name: string;
  parentId: number;
  isSvcOrg: boolean;
  dataCenterId: number;
  dataCenterName: string;
  administrators: Array<{ email: string }>;
  apiToken: string | null;
  securityRules: Array<{
    name: string;
    allowedIpRangeStartAddress: string;
    allowedIpRangeEndAddress: string;
    apiAccessEnabled: boolean;
  }>;
}
interface Subscription {
  name: string;
  orgId: number;
  isTrial: boolean;
  recordsAllowed: string;
  sku: string | null;
  startDate: string;
  expirationDate: string;
}

/** Plugins in the operator's extra folder: two private ones and a public one that is not preinstalled. */
function vendorConnectorsDir(): string {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-register-'));
  const plugins = [
    { id: PRIVATE, name: 'Operator ERP', isPublic: false },
    { id: FOREIGN, name: 'Other ERP', isPublic: false },
    { id: EXTRA, name: 'Extra Feed', isPublic: true },
  ];
  for (const p of plugins) {
    const folder = path.join(dir, p.id);
    fs.mkdirSync(folder);
    fs.writeFileSync(
      path.join(folder, 'manifest.json'),
      JSON.stringify({
        id: p.id,
        name: p.name,
        description: `${p.name} connector`,
        vendor: 'Test',
        version: '1.0.0',
        sdkVersion: '^1.0.0',
        main: 'index.js',
        solutionRoles: ['Svc.IS2.Source'],
        isCloudSupported: true,
        isPublic: p.isPublic,
        uiDecorations: [{ propertyName: 'apiKey', label: 'API key', inputType: 'Password', isRequired: true }],
      }),
    );
    fs.writeFileSync(
      path.join(folder, 'index.js'),
      'export default { connect: async () => { throw new Error("offline"); } };\n',
    );
  }
  return dir;
}

const rule = {
  name: 'Customer office',
  allowedIpRangeStartAddress: '127.0.0.1',
  allowedIpRangeEndAddress: '127.0.0.1',
  apiAccessEnabled: true,
};

describe.each(STORE_TARGETS)('POST /v1/register on $name', (target) => {
  let svc: TestService;
  let operatorId: number;
  const operator: Credentials = { email: 'operator@ferry.test', password: 'Operator-password-1' };
  const connectorsDir = vendorConnectorsDir();

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off', connectorsDir });
    // As `ferry service create-org --platform-hosted` does.
    operatorId = (
      await addRootOrganization(svc.service.store, SecretBox.fromDataDir(svc.dataDir), {
        name: 'Operator',
        adminEmail: operator.email,
        adminPassword: operator.password,
        platformHosted: true,
        allow: '127.0.0.1,::1',
      })
    ).orgId;
    const at = new Date().toISOString();
    await setManagedConnectorVendor(svc.service.store.db, PRIVATE, operatorId, at);
    await setManagedConnectorVendor(svc.service.store.db, FOREIGN, svc.orgId, at);
  });
  afterAll(async () => {
    await svc?.close();
    fs.rmSync(connectorsDir, { recursive: true, force: true });
  });

  const register = (body: unknown, auth: Credentials = operator, query = '') =>
    svc.request<Org & Problem>('POST', `/v1/register${query}`, { auth, body });
  const orgCount = async (): Promise<number> =>
    Number(
      (
        await svc.service.store.db
          .selectFrom('orgs')
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const tableCount = async (
    table: 'subscriptions' | 'orgConnectors' | 'managedConnectorCustomers' | 'memberships' | 'securityRules',
  ): Promise<number> =>
    Number(
      (
        await svc.service.store.db
          .selectFrom(table)
          .select((eb) => eb.fn.countAll().as('n'))
          .executeTakeFirstOrThrow()
      ).n,
    );
  const snapshot = async () =>
    Promise.all([
      orgCount(),
      tableCount('subscriptions'),
      tableCount('orgConnectors'),
      tableCount('managedConnectorCustomers'),
      tableCount('memberships'),
      tableCount('securityRules'),
    ]);

  it('creates a customer Organization with every field, in one call', async () => {
    const customer = await addUser(svc, undefined, 'User', `customer-admin-${target.name}@ferry.test`);
    const res = await register({
      orgName: 'Customer One',
      dataCenterId: 13,
      securityRules: [rule],
      userId: customer.email,
      connectors: ['Extra Feed', PRIVATE, 'sqlite'],
      subscriptionSkus: ['FERRY-IS-5M', 'ferry-rs-unlimited'],
    });
    expect(res.status).toBe(201);
    expect(res.headers.location).toBe(`/v1/orgs/${res.body.id}`);
    const id = res.body.id;
    expect(res.body).toMatchObject({
      name: 'Customer One',
      parentId: operatorId,
      isSvcOrg: true,
      dataCenterId: 13,
      dataCenterName: 'AU',
    });
    expect(res.body.administrators.map((a) => a.email)).toEqual([customer.email]);
    expect(res.body.apiToken).toEqual(expect.any(String));

    // The answer is the Organization as GET answers it.
    const got = await svc.request<Org>('GET', `/v1/orgs/${id}`, { auth: operator });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);

    const rules = await svc.request<Org['securityRules']>('GET', `/v1/orgs/${id}/securityrules`, { auth: operator });
    expect(rules.body).toEqual([expect.objectContaining(rule)]);

    // The named user logs in and administers it.
    const mine = await svc.request<Org[]>('GET', '/v1/orgs', { auth: customer });
    expect(mine.body.map((o) => o.id)).toEqual([id]);
    const subs = await svc.request<Subscription[]>('GET', `/v1/orgs/${id}/subscriptions`, { auth: customer });
    expect(subs.status).toBe(200);
    const byName = new Map(subs.body.map((s) => [s.name, s]));
    expect(subs.body).toHaveLength(3);
    expect(byName.get('Integration Services (IS)')).toMatchObject({
      orgId: id,
      isTrial: false,
      recordsAllowed: '5000000',
      sku: 'FERRY-IS-5M',
    });
    expect(byName.get('Replication Services (RS)')).toMatchObject({
      isTrial: false,
      recordsAllowed: 'Unlimited',
      sku: 'FERRY-RS-UNLIMITED',
    });
    expect(byName.get('Migration Services (MS)')).toMatchObject({ isTrial: true, sku: 'FERRY-MS-TRIAL' });
    const is = byName.get('Integration Services (IS)');
    expect(new Date(is?.expirationDate ?? '').getUTCFullYear()).toBe(
      new Date(is?.startDate ?? '').getUTCFullYear() + 1,
    );

    const installed = await svc.request<Array<{ id: string; name: string }>>('GET', `/v1/orgs/${id}/connectors`, {
      auth: customer,
    });
    expect(installed.status).toBe(200);
    const ids = installed.body.map((c) => c.id.toLowerCase());
    expect(ids).toEqual(expect.arrayContaining([PRIVATE, EXTRA]));
    expect(installed.body.map((c) => c.name)).toContain('SQLite');
    expect(ids).not.toContain(FOREIGN);

    const customers = await svc.request<Array<{ orgId: number; provisionedBy: string }>>(
      'GET',
      `/v1/orgs/${operatorId}/managedconnectors/${PRIVATE}/customers`,
      { auth: operator },
    );
    expect(customers.body).toEqual([expect.objectContaining({ orgId: id, provisionedBy: operator.email })]);

    // The operator manages it from its own Organization: the parent sees the customer's Subscriptions.
    const operatorSubs = await svc.request<Subscription[]>('GET', `/v1/orgs/${operatorId}/subscriptions`, {
      auth: operator,
    });
    expect(operatorSubs.body.filter((s) => s.orgId === id)).toHaveLength(3);
  });

  it('makes the caller the Administrator by default and keeps the trial Subscriptions without SKUs', async () => {
    const res = await register({ orgName: 'Customer Two', securityRules: [rule] });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ dataCenterId: 1, isSvcOrg: true, parentId: operatorId });
    expect(res.body.administrators.map((a) => a.email)).toEqual([operator.email]);
    const subs = await svc.request<Subscription[]>('GET', `/v1/orgs/${res.body.id}/subscriptions`, { auth: operator });
    expect(subs.body.map((s) => s.isTrial)).toEqual([true, true, true]);
  });

  it('takes keys and a user ID in any case', async () => {
    const customer = await addUser(svc, undefined, 'User');
    const res = await register({
      ORGNAME: 'Customer Three',
      DataCenterId: 2,
      SecurityRules: [
        {
          Name: 'Office',
          AllowedIpRangeStartAddress: '127.0.0.1',
          ALLOWEDIPRANGEENDADDRESS: '127.0.0.1',
          apiaccessenabled: true,
        },
      ],
      USERID: customer.id.toUpperCase(),
      Connectors: ['EXTRA FEED'],
      SubscriptionSkus: ['FERRY-MS-250K'],
    });
    expect(res.status).toBe(201);
    expect(res.body).toMatchObject({ name: 'Customer Three', dataCenterId: 2 });
    expect(res.body.securityRules).toEqual([expect.objectContaining({ name: 'Office', apiAccessEnabled: true })]);
    expect(res.body.administrators.map((a) => a.email)).toEqual([customer.email]);
    const subs = await svc.request<Subscription[]>('GET', `/v1/orgs/${res.body.id}/subscriptions`, { auth: customer });
    expect(subs.body.find((s) => s.sku === 'FERRY-MS-250K')).toMatchObject({
      recordsAllowed: '250000',
      isTrial: false,
    });
  });

  it('refuses callers who are not Administrators of a platform-hosted root Organization, creating nothing', async () => {
    const member = await addUser(svc, operatorId, 'User');
    const before = await snapshot();
    const callers: Credentials[] = [svc.admin, member];
    for (const auth of callers) {
      const res = await register({ orgName: 'Not allowed', securityRules: [rule] }, auth);
      expect(res.status).toBe(403);
      expect(res.body.code).toBe('API_FORBIDDEN_ROLE');
      expect(res.body.detail).toContain('platform-hosted root Organization');
      expect(res.body.detail).toContain('create-org --platform-hosted');
    }
    // An Administrator of a customer Organization (a platform-hosted child) cannot register further ones.
    const customerAdmin = await addUser(svc, undefined, 'User');
    const customer = await register({ orgName: 'Customer Four', securityRules: [rule], userId: customerAdmin.email });
    expect(customer.status).toBe(201);
    const after = await snapshot();
    const refused = await register({ orgName: 'Nested', securityRules: [rule] }, customerAdmin);
    expect(refused.status).toBe(403);
    expect(refused.body.code).toBe('API_FORBIDDEN_ROLE');
    // Naming an Organization the caller is not an operator of.
    const named = await register({ orgName: 'Named', securityRules: [rule] }, svc.admin, `?orgId=${svc.orgId}`);
    expect(named.status).toBe(403);
    expect(await snapshot()).toEqual(after);
    expect(after[0]).toBe(before[0] + 1);
    expect(
      (await svc.request('POST', '/v1/register', { auth: null, body: { orgName: 'x', securityRules: [rule] } })).status,
    ).toBe(401);
  });

  const BAD: Array<[string, Record<string, unknown>, string]> = [
    ['orgName missing', { orgName: undefined }, 'body.orgName'],
    ['securityRules missing', { securityRules: undefined }, 'body.securityRules'],
    ['securityRules empty', { securityRules: [] }, 'body.securityRules'],
    ['a bad range', { securityRules: [{ ...rule, allowedIpRangeStartAddress: '127.1' }] }, 'body.securityRules.0'],
    ['an unknown data center', { dataCenterId: 7 }, 'body.dataCenterId'],
    ['an unknown user', { userId: 'nobody@ferry.test' }, 'body.userId'],
    ['an unknown user ID', { userId: '00000000-0000-4000-8000-000000000000' }, 'body.userId'],
    ['an unknown Connector', { connectors: ['SQLite', 'No Such Connector'] }, 'body.connectors.1'],
    ["another vendor's private Connector", { connectors: [FOREIGN] }, 'body.connectors.0'],
    ['an unknown SKU form', { subscriptionSkus: ['FERRY-IS-1M', 'FERRY-XX-1M'] }, 'body.subscriptionSkus.1'],
    ['a trial SKU', { subscriptionSkus: ['FERRY-IS-TRIAL'] }, 'body.subscriptionSkus.0'],
    ['two SKUs of one type', { subscriptionSkus: ['FERRY-IS-1M', 'FERRY-IS-2M'] }, 'body.subscriptionSkus.1'],
    ['an unknown key', { parentId: 1 }, 'parentId'],
  ];

  it.each(BAD)('refuses %s with 400 naming the field, creating nothing', async (_what, change, field) => {
    const body: Record<string, unknown> = {
      orgName: 'Bad',
      securityRules: [rule],
      connectors: [PRIVATE],
      subscriptionSkus: ['FERRY-IS-1M'],
      ...change,
    };
    const before = await snapshot();
    const res = await register(body);
    expect(res.status).toBe(400);
    expect(['API_VALIDATION', 'API_INVALID_IP_RANGE']).toContain(res.body.code);
    expect(JSON.stringify(res.body.errors ?? [])).toContain(field);
    expect(await snapshot()).toEqual(before);
  });

  it('refuses a Security Rule ID that exists already with 409, creating nothing', async () => {
    const before = await snapshot();
    const existing = (
      await svc.request<Array<{ id: string }>>('GET', `/v1/orgs/${operatorId}/securityrules`, { auth: operator })
    ).body[0]?.id;
    expect(existing).toBeDefined();
    const res = await register({ orgName: 'Taken rule', securityRules: [{ ...rule, id: existing }] });
    expect(res.status).toBe(409);
    expect(res.body.code).toBe('API_CONFLICT');
    expect(await snapshot()).toEqual(before);
  });

  it('leaves nothing half-made when the store fails inside the transaction', async () => {
    const { db } = svc.service.store;
    // The customer grant is written after the Organization, its rules, members and Subscriptions.
    if (target.name === 'postgres') {
      await sql`CREATE FUNCTION refuse_grant() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$`.execute(
        db,
      );
      await sql`CREATE TRIGGER refuse_grant BEFORE INSERT ON managed_connector_customers FOR EACH ROW EXECUTE FUNCTION refuse_grant()`.execute(
        db,
      );
    } else {
      await sql`CREATE TRIGGER refuse_grant BEFORE INSERT ON managed_connector_customers BEGIN SELECT RAISE(ABORT, 'refused'); END`.execute(
        db,
      );
    }
    try {
      const before = await snapshot();
      const res = await register({
        orgName: 'Half',
        securityRules: [rule],
        connectors: [PRIVATE],
        subscriptionSkus: ['FERRY-IS-1M'],
      });
      expect(res.status).toBe(500);
      expect(await snapshot()).toEqual(before);
    } finally {
      await sql`DROP TRIGGER refuse_grant${sql.raw(target.name === 'postgres' ? ' ON managed_connector_customers' : '')}`.execute(
        db,
      );
    }
    expect((await register({ orgName: 'Whole', securityRules: [rule], connectors: [PRIVATE] })).status).toBe(201);
  });

  it('needs ?orgId= from a caller who administers several platform-hosted root Organizations', async () => {
    const second = (
      await addRootOrganization(svc.service.store, SecretBox.fromDataDir(svc.dataDir), {
        name: 'Operator Two',
        adminEmail: operator.email,
        platformHosted: true,
        allow: '127.0.0.1,::1',
      })
    ).orgId;
    const before = await snapshot();
    const ambiguous = await register({ orgName: 'Which', securityRules: [rule] });
    expect(ambiguous.status).toBe(400);
    expect(ambiguous.body.errors?.[0]?.path).toBe('query.orgId');
    expect(await snapshot()).toEqual(before);
    const res = await register({ orgName: 'Under two', securityRules: [rule] }, operator, `?orgId=${second}`);
    expect(res.status).toBe(201);
    expect(res.body.parentId).toBe(second);
  });
});
