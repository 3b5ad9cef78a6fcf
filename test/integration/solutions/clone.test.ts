/**
 * Cloning a Solution (not by reference): `POST S/cloneAsync` and the deprecated `POST S/clone`.
 * A Service with three child Organizations — one that holds the same Connections (names in another
 * case), the Lookup Table and a played Agent that answers metadata, so the copy can be prepared;
 * one that lacks a Connection and the Lookup Table; one whose Connection of the same name uses
 * another Connector — and users with the roles the access rules depend on.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { addMembership } from '../../../service/store/repos/users.repo.js';
import { nowIso } from '../../../service/util/values.js';
import { OpenChannels, registerTestAgent, until } from '../../helpers/agent-client.js';
import { startService, type ApiResponse, type Credentials, type TestService } from '../../helpers/service.js';
import { STORE_TARGETS, type StoreTarget } from '../../helpers/stores.js';
import { addUser } from '../../helpers/users.js';

const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const LOOKUP = 'LOOKUPTABLEVALUE1("Regions", Q.name)';

interface CloneJob {
  id: string;
  clonedSolutionId: string;
  creationDate: string;
  isComplete: boolean;
  hasError: boolean;
  message: string | null;
}
interface PrepareJob {
  id: string;
  isComplete: boolean;
  hasError: boolean;
  message: string | null;
}
interface Problem {
  code: string;
  detail: string;
}
interface MapLink {
  id: number;
  name: string;
  enabled: boolean;
  valid: boolean;
}
interface SolutionModel {
  id: string;
  name: string;
  description: string;
  solutionType: string;
  status: string;
  agentId: string;
  mapLinks: MapLink[];
}
interface Block {
  name: string;
  connectionId: string;
  entity: string;
  fieldMappings?: Array<{ targetField: string; targetFormula: string }>;
}
interface MapModel {
  id: number;
  name: string;
  revision: number;
  blocks: Block[];
}

// ── what the played Agents answer: two tables, `customers` and `orders`, of `id` and `name` ──────

const action = (name: string, blockType: string) => ({
  action: name,
  operationName: name,
  blockType,
  supportsBulk: true,
  supportsConstraints: name === 'Query',
  supportsInput: name !== 'Query',
  supportsLookupConditions: false,
  supportsRelations: false,
  supportsMultipleRecordOperations: false,
  supportsSequences: false,
});
const field = (fullName: string, ordinal: number, pk: boolean) => ({
  name: fullName,
  fullName,
  originalName: fullName,
  description: '',
  isPrimaryKey: pk,
  nullable: !pk,
  size: pk ? 8 : 0,
  ordinal,
  propertyType: pk ? 'integer' : 'string',
  nativeType: pk ? 'INTEGER' : 'TEXT',
  hasDefault: false,
  requiredInActionInput: false,
  usedInLookupCondition: true,
  usedInActionInput: true,
  usedInQueryConstraint: true,
  usedInQuerySelect: true,
});
const ACTIONS = [action('Query', 'Starter'), action('Create', 'Operation')];
const METADATA = {
  actions: ACTIONS,
  entities: ['customers', 'orders'].map((name) => ({
    id: name,
    name,
    fullName: name,
    originalName: name,
    description: 'table',
    isHidden: false,
    actions: ACTIONS,
    fields: [field('id', 1, true), field('name', 2, false)],
    relationships: [],
  })),
};
const PLAYED_RESULTS: Record<string, unknown> = { assignSolutions: { need: [] }, loadMetadata: METADATA };

const SCHEDULE = {
  scheduleOption: 'Recurring',
  runOnceOptions: null,
  recurringOptions: {
    days: { daysOption: 'DaysInterval', daysIntervalStartDate: '2024-1-1', daysInterval: 2 },
    times: { timeOption: 'TimeOfDay', timeOfDay: '4:15' },
    timeZone: 'UTC',
  },
};

/** A Map model: a Query of `entity` on `from`, a Create into `table` on `to` copying id and name (by `nameFormula`). */
function copyModel(o: { name: string; from: string; entity: string; to: string; table: string; nameFormula?: string }) {
  return {
    version: '3.0',
    name: o.name,
    blocks: [
      {
        blockId: '55555555-5555-4555-8555-000000000001',
        name: 'Q',
        blockType: 'Query',
        action: 'Query',
        connectionId: o.from,
        entity: o.entity,
      },
      {
        blockId: '55555555-5555-4555-8555-000000000002',
        name: 'Put',
        blockType: 'Create',
        action: 'Create',
        connectionId: o.to,
        entity: o.table,
        fieldMappings: [
          { targetField: 'id', targetFormula: 'Q.id' },
          { targetField: 'name', targetFormula: o.nameFormula ?? 'Q.name' },
        ],
      },
    ],
  };
}

// ── the world ────────────────────────────────────────────────────────────────────────────────────

interface OrgWorld {
  id: number;
  agentId: string;
  /** Connection name as the test knows it → its ID in this Organization. */
  conns: Record<string, string>;
}
interface World {
  svc: TestService;
  channels: OpenChannels;
  /** The source Organization (the bootstrap one): Orders DB and Warehouse (SQLite), Regions. */
  root: OrgWorld;
  /** A child with `orders db` and `WAREHOUSE` (SQLite), Regions, and a played Agent. */
  dest: OrgWorld;
  /** A child with Orders DB only, and no Lookup Table. */
  lacking: OrgWorld;
  /** A child whose Orders DB is a CSV Connection; Warehouse and Regions as in the source. */
  otherConnector: OrgWorld;
  /** User in the source only; ReadOnly in the source and User in dest; User in the source and ReadOnly in dest. */
  outsider: Credentials;
  readOnlySource: Credentials;
  readOnlyDest: Credentials;
  /** User in both the source and dest. */
  memberOfBoth: Credentials;
}

const solutionsOf = (orgId: number) => `/v1/orgs/${orgId}/solutions`;

async function createOrg(svc: TestService, name: string): Promise<number> {
  const res = await svc.request<{ id: number }>('POST', '/v1/orgs', {
    body: {
      name,
      parentId: svc.orgId,
      securityRules: [
        {
          name: 'loopback',
          allowedIpRangeStartAddress: '127.0.0.1',
          allowedIpRangeEndAddress: '127.0.0.1',
          apiAccessEnabled: true,
        },
      ],
    },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

async function createConnection(svc: TestService, orgId: number, name: string, connectorId: string): Promise<string> {
  const res = await svc.request<{ id: string }>('POST', `/v1/orgs/${orgId}/connections`, {
    body: { name, connectorId, color: '#FF00FF00' },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

async function createTable(svc: TestService, orgId: number, name: string): Promise<void> {
  const res = await svc.request('POST', `/v1/orgs/${orgId}/lookuptables`, {
    body: { name, lookupTableValues: [{ value1: 'North', value2: 'ann' }] },
  });
  expect(res.status, res.text).toBe(201);
}

/** Registers an Agent in the Organization and plays it on a channel: it answers metadata with METADATA. */
async function playedAgentIn(svc: TestService, channels: OpenChannels, orgId: number, name: string): Promise<string> {
  const agent = await registerTestAgent(svc, { orgId, name });
  const ch = await channels.connect(svc, agent);
  ch.autoReply = (cmd) => ({ re: cmd['id'], ok: true, result: PLAYED_RESULTS[String(cmd['type'])] ?? {} });
  expect(await ch.hello(agent)).toMatchObject({ ok: true });
  return agent.agentId;
}

/** A child Organization with an Agent (played or only registered), Connections and Lookup Tables. */
async function childOrg(
  svc: TestService,
  channels: OpenChannels,
  o: { name: string; played: boolean; conns: Array<[string, string, string]>; tables: string[] },
): Promise<OrgWorld> {
  const id = await createOrg(svc, o.name);
  const agentId = o.played
    ? await playedAgentIn(svc, channels, id, `${o.name} agent`)
    : (await registerTestAgent(svc, { orgId: id, name: `${o.name} agent` })).agentId;
  const conns: Record<string, string> = {};
  for (const [key, name, connectorId] of o.conns) conns[key] = await createConnection(svc, id, name, connectorId);
  for (const t of o.tables) await createTable(svc, id, t);
  return { id, agentId, conns };
}

async function buildWorld(target: StoreTarget): Promise<World> {
  const svc = await startService(target, { cloudAgents: 'off' });
  const channels = new OpenChannels();
  const root: OrgWorld = {
    id: svc.orgId,
    agentId: await playedAgentIn(svc, channels, svc.orgId, 'Source agent'),
    conns: {
      orders: await createConnection(svc, svc.orgId, 'Orders DB', SQLITE),
      warehouse: await createConnection(svc, svc.orgId, 'Warehouse', SQLITE),
    },
  };
  await createTable(svc, svc.orgId, 'Regions');
  const dest = await childOrg(svc, channels, {
    name: 'Destination',
    played: true,
    // An unrelated Connection first: matching goes by name, not by position.
    conns: [
      ['unrelated', 'Unrelated', SQLITE],
      ['warehouse', 'WAREHOUSE', SQLITE],
      ['orders', 'orders db', SQLITE],
    ],
    tables: ['Regions'],
  });
  const lacking = await childOrg(svc, channels, {
    name: 'Lacking',
    played: false,
    conns: [['orders', 'Orders DB', SQLITE]],
    tables: [],
  });
  const otherConnector = await childOrg(svc, channels, {
    name: 'Other connector',
    played: false,
    conns: [
      ['orders', 'Orders DB', CSV],
      ['warehouse', 'Warehouse', SQLITE],
    ],
    tables: ['Regions'],
  });
  const { db } = svc.service.store;
  const outsider = await addUser(svc, svc.orgId, 'User');
  const readOnlySource = await addUser(svc, svc.orgId, 'ReadOnly');
  await addMembership(db, dest.id, readOnlySource.id, 'User', nowIso());
  const readOnlyDest = await addUser(svc, svc.orgId, 'User');
  await addMembership(db, dest.id, readOnlyDest.id, 'ReadOnly', nowIso());
  const memberOfBoth = await addUser(svc, svc.orgId, 'User');
  await addMembership(db, dest.id, memberOfBoth.id, 'User', nowIso());
  return { svc, channels, root, dest, lacking, otherConnector, outsider, readOnlySource, readOnlyDest, memberOfBoth };
}

// ── helpers on the API ──────────────────────────────────────────────────────────────────────────

interface Source {
  id: string;
  name: string;
  mapIds: number[];
}

async function prepare(svc: TestService, orgId: number, solutionId: string): Promise<PrepareJob> {
  const S = `${solutionsOf(orgId)}/${solutionId}`;
  const job = await svc.request<PrepareJob>('POST', `${S}/prepare`);
  expect(job.status, job.text).toBe(200);
  return until(
    async () => {
      const res = await svc.request<PrepareJob>('GET', `${S}/prepare/${job.body.id}`);
      expect(res.status, res.text).toBe(200);
      return res.body.isComplete ? res.body : undefined;
    },
    'the prepare job',
    30_000,
  );
}

/**
 * A prepared Integration Solution in the source Organization with a description and a schedule.
 * `standard`: "Customers to orders" saved twice (the second revision's name formula reads the
 * Regions Lookup Table) and "Orders to customers", disabled. `broken`: "Good feed" and "Broken
 * feed", which reads an entity the Connection does not have, so it is not valid after the prepare.
 */
async function sourceSolution(w: World, name: string, kind: 'standard' | 'broken' = 'standard'): Promise<Source> {
  const { svc, root } = w;
  const S = solutionsOf(root.id);
  const sol = await svc.request<SolutionModel>('POST', S, {
    body: { name, description: `${name}, every other day`, solutionType: 'Integration', agentId: root.agentId },
  });
  expect(sol.status, sol.text).toBe(201);
  const M = `${S}/${sol.body.id}/maps`;
  const add = async (model: unknown): Promise<number> => {
    const res = await svc.request<MapModel>('POST', `${M}/advanced`, { body: model });
    expect(res.status, res.text).toBe(201);
    return res.body.id;
  };
  const { orders, warehouse } = root.conns as { orders: string; warehouse: string };
  const mapIds: number[] = [];
  if (kind === 'standard') {
    const first = { name: 'Customers to orders', from: orders, entity: 'customers', to: warehouse, table: 'orders' };
    mapIds.push(await add(copyModel(first)));
    const saved = await svc.request('PUT', `${M}/advanced/${mapIds[0]}?comment=regions`, {
      body: copyModel({ ...first, nameFormula: LOOKUP }),
    });
    expect(saved.status, saved.text).toBe(200);
    mapIds.push(
      await add(
        copyModel({ name: 'Orders to customers', from: warehouse, entity: 'orders', to: orders, table: 'customers' }),
      ),
    );
    const disabled = await svc.request('PUT', `${M}/${mapIds[1]}/enable?enableState=false`);
    expect(disabled.status, disabled.text).toBe(200);
  } else {
    mapIds.push(
      await add(copyModel({ name: 'Good feed', from: orders, entity: 'customers', to: warehouse, table: 'orders' })),
    );
    mapIds.push(
      await add(copyModel({ name: 'Broken feed', from: orders, entity: 'nowhere', to: warehouse, table: 'orders' })),
    );
  }
  const schedule = await svc.request('PUT', `${S}/${sol.body.id}/schedule`, { body: SCHEDULE });
  expect(schedule.status, schedule.text).toBe(200);
  const prepared = await prepare(svc, root.id, sol.body.id);
  expect(prepared.hasError, prepared.message ?? '').toBe(kind === 'broken');
  return { id: sol.body.id, name, mapIds };
}

const cloneQuery = (destOrgId: number, destAgentId: string) => `destOrgId=${destOrgId}&destAgentId=${destAgentId}`;

function postClone(w: World, src: Source, query: string, opts: { auth?: Credentials; deprecated?: boolean } = {}) {
  const path = `${solutionsOf(w.root.id)}/${src.id}/${opts.deprecated ? 'clone' : 'cloneAsync'}?${query}`;
  return w.svc.request<CloneJob & Problem>('POST', path, opts.auth ? { auth: opts.auth } : {});
}

/** Starts a clone with cloneAsync (expecting 200 and a job) and polls it, as `auth`, until it is complete. */
async function cloned(
  w: World,
  src: Source,
  destOrgId: number,
  destAgentId: string,
  auth?: Credentials,
): Promise<CloneJob> {
  const started = await postClone(w, src, cloneQuery(destOrgId, destAgentId), auth ? { auth } : {});
  expect(started.status, started.text).toBe(200);
  expect(started.body).toMatchObject({
    id: expect.any(String) as string,
    clonedSolutionId: expect.any(String) as string,
    creationDate: expect.any(String) as string,
    isComplete: expect.any(Boolean) as boolean,
    hasError: expect.any(Boolean) as boolean,
  });
  expect(started.body.clonedSolutionId).not.toBe(started.body.id);
  expect(started.body.clonedSolutionId).not.toBe(src.id);
  const job = await until(
    async () => {
      const res = await w.svc.request<CloneJob>(
        'GET',
        `${solutionsOf(w.root.id)}/${src.id}/cloneAsync/${started.body.id}`,
        auth ? { auth } : {},
      );
      expect(res.status, res.text).toBe(200);
      return res.body.isComplete ? res.body : undefined;
    },
    'the clone job',
    30_000,
  );
  expect(job).toMatchObject({
    id: started.body.id,
    clonedSolutionId: started.body.clonedSolutionId,
    creationDate: started.body.creationDate,
  });
  return job;
}

async function solutionCount(svc: TestService, orgId: number): Promise<number> {
  const res = await svc.request('GET', solutionsOf(orgId));
  expect(res.status, res.text).toBe(200);
  return Number(res.headers['total-count']);
}

async function mapsOf(svc: TestService, orgId: number, solutionId: string): Promise<MapModel[]> {
  const res = await svc.request<MapModel[]>('GET', `${solutionsOf(orgId)}/${solutionId}/maps`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** The Blocks a copy of the standard source must have, on the Connections `conns`. */
function standardBlocks(conns: Record<string, string>) {
  return [
    [
      { name: 'Q', connectionId: conns['orders'], entity: 'customers' },
      {
        name: 'Put',
        connectionId: conns['warehouse'],
        entity: 'orders',
        fieldMappings: [
          { targetField: 'id', targetFormula: 'Q.id' },
          { targetField: 'name', targetFormula: LOOKUP },
        ],
      },
    ],
    [
      { name: 'Q', connectionId: conns['warehouse'], entity: 'orders' },
      { name: 'Put', connectionId: conns['orders'], entity: 'customers' },
    ],
  ];
}

/** A job that ended in error: named pieces in its message, and no Solution made in `destOrgId`. */
async function expectFailedClone(w: World, src: Source, dest: OrgWorld, named: string[]): Promise<void> {
  const before = await solutionCount(w.svc, dest.id);
  const job = await cloned(w, src, dest.id, dest.agentId);
  expect(job.isComplete).toBe(true);
  expect(job.hasError).toBe(true);
  for (const name of named) expect(job.message ?? '', `the message names ${name}`).toContain(name);
  const copy = await w.svc.request('GET', `${solutionsOf(dest.id)}/${job.clonedSolutionId}`);
  expect(copy.status, copy.text).toBe(404);
  expect(await solutionCount(w.svc, dest.id)).toBe(before);
}

/** A refused request: its status, problem+json with `code`, and no Solution made in the source or dest. */
async function expectRefused(
  w: World,
  call: () => Promise<ApiResponse<Problem>>,
  status: number | number[],
  code: string,
): Promise<void> {
  const before = [await solutionCount(w.svc, w.root.id), await solutionCount(w.svc, w.dest.id)];
  const res = await call();
  if (Array.isArray(status)) expect(status, res.text).toContain(res.status);
  else expect(res.status, res.text).toBe(status);
  expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
  expect(res.body.code, res.text).toBe(code);
  expect([await solutionCount(w.svc, w.root.id), await solutionCount(w.svc, w.dest.id)]).toEqual(before);
}

// ── the checks ──────────────────────────────────────────────────────────────────────────────────

async function copiesIntoAnotherOrganization(w: World): Promise<void> {
  const { svc, dest, root } = w;
  const src = await sourceSolution(w, 'Nightly sales');
  const before = await solutionCount(svc, dest.id);
  const job = await cloned(w, src, dest.id, dest.agentId);
  expect(job, job.message ?? '').toMatchObject({ isComplete: true, hasError: false });
  expect(await solutionCount(svc, dest.id)).toBe(before + 1);

  const D = `${solutionsOf(dest.id)}/${job.clonedSolutionId}`;
  const copy = await svc.request<SolutionModel>('GET', D);
  expect(copy.status, copy.text).toBe(200);
  expect(copy.body).toMatchObject({
    id: job.clonedSolutionId,
    name: 'Nightly sales',
    description: 'Nightly sales, every other day',
    solutionType: 'Integration',
    agentId: dest.agentId,
    status: 'Incomplete',
  });
  const srcSchedule = await svc.request<Record<string, unknown>>('GET', `${solutionsOf(root.id)}/${src.id}/schedule`);
  const copySchedule = await svc.request<Record<string, unknown>>('GET', `${D}/schedule`);
  expect(copySchedule.status, copySchedule.text).toBe(200);
  expect(copySchedule.body).toEqual({ ...srcSchedule.body, solutionId: job.clonedSolutionId });

  // The Maps: same names and order, the latest revision as revision 1, new IDs, enabled state kept.
  const maps = await mapsOf(svc, dest.id, job.clonedSolutionId);
  expect(maps.map((m) => m.name)).toEqual(['Customers to orders', 'Orders to customers']);
  expect(maps.map((m) => m.revision)).toEqual([1, 1]);
  for (const m of maps) expect(src.mapIds).not.toContain(m.id);
  expect(maps.map((m) => m.blocks)).toMatchObject(standardBlocks(dest.conns));
  for (const m of maps) {
    const revisions = await svc.request('GET', `${D}/maps/${m.id}/revisions`);
    expect(revisions.status, revisions.text).toBe(200);
    expect(revisions.headers['total-count'], `revisions of ${m.name}`).toBe('1');
  }
  expect(copy.body.mapLinks.map((l) => [l.name, l.enabled])).toEqual([
    ['Customers to orders', true],
    ['Orders to customers', false],
  ]);

  // The source is as it was.
  expect((await mapsOf(svc, root.id, src.id)).map((m) => [m.id, m.revision])).toEqual([
    [src.mapIds[0], 2],
    [src.mapIds[1], 1],
  ]);

  // Prepared on the destination's Agent, the copy is runnable.
  const prepared = await prepare(svc, dest.id, job.clonedSolutionId);
  expect(prepared.hasError, prepared.message ?? '').toBe(false);
  expect((await svc.request<SolutionModel>('GET', D)).body.status).not.toBe('Incomplete');
}

async function copiesWithinTheOrganization(w: World): Promise<void> {
  const { svc, root } = w;
  const src = await sourceSolution(w, 'Hourly stock');
  const first = await cloned(w, src, root.id, root.agentId);
  expect(first, first.message ?? '').toMatchObject({ isComplete: true, hasError: false });
  const copy = await svc.request<SolutionModel>('GET', `${solutionsOf(root.id)}/${first.clonedSolutionId}`);
  expect(copy.status, copy.text).toBe(200);
  expect(copy.body).toMatchObject({ name: 'Copy of Hourly stock 1', agentId: root.agentId, status: 'Incomplete' });
  const maps = await mapsOf(svc, root.id, first.clonedSolutionId);
  expect(maps.map((m) => m.name)).toEqual(['Customers to orders', 'Orders to customers']);
  // The same Connections as the source's.
  expect(maps.map((m) => m.blocks)).toMatchObject(standardBlocks(root.conns));

  // The deprecated clone answers the job already complete; the next copy takes the next number.
  const before = await solutionCount(svc, root.id);
  const second = await postClone(w, src, cloneQuery(root.id, root.agentId), { deprecated: true });
  expect(second.status, second.text).toBe(200);
  expect(second.body).toMatchObject({
    id: expect.any(String) as string,
    clonedSolutionId: expect.any(String) as string,
    creationDate: expect.any(String) as string,
    isComplete: true,
    hasError: false,
  });
  expect(await solutionCount(svc, root.id)).toBe(before + 1);
  const again = await svc.request<SolutionModel>('GET', `${solutionsOf(root.id)}/${second.body.clonedSolutionId}`);
  expect(again.status, again.text).toBe(200);
  expect(again.body.name).toBe('Copy of Hourly stock 2');
  expect((await mapsOf(svc, root.id, second.body.clonedSolutionId)).map((m) => m.name)).toEqual([
    'Customers to orders',
    'Orders to customers',
  ]);
}

async function refusesASolutionNameTaken(w: World): Promise<void> {
  const { svc, dest } = w;
  const taken = await svc.request('POST', solutionsOf(dest.id), {
    body: { name: 'Weekly ledger', solutionType: 'Integration', agentId: dest.agentId },
  });
  expect(taken.status, taken.text).toBe(201);
  const src = await sourceSolution(w, 'Weekly ledger');
  await expectFailedClone(w, src, dest, ['Weekly ledger']);
}

async function namesEveryMissingPiece(w: World): Promise<void> {
  const src = await sourceSolution(w, 'Monthly close');
  // Lacking has Orders DB, but neither Warehouse nor the Regions Lookup Table.
  await expectFailedClone(w, src, w.lacking, ['Warehouse', 'Regions']);
}

async function refusesAConnectionOfAnotherConnector(w: World): Promise<void> {
  const src = await sourceSolution(w, 'Quarterly audit');
  await expectFailedClone(w, src, w.otherConnector, ['Orders DB']);
}

async function refusesAnInvalidMap(w: World): Promise<void> {
  const src = await sourceSolution(w, 'Daily intake', 'broken');
  const links = (await w.svc.request<SolutionModel>('GET', `${solutionsOf(w.root.id)}/${src.id}`)).body.mapLinks;
  expect(links.map((l) => [l.name, l.valid])).toEqual([
    ['Good feed', true],
    ['Broken feed', false],
  ]);
  await expectFailedClone(w, src, w.dest, ['Broken feed']);
}

async function refusesBadRequests(w: World): Promise<void> {
  const { root, dest } = w;
  const src = await sourceSolution(w, 'Guarded one');
  const post =
    (query: string, deprecated = false) =>
    () =>
      postClone(w, src, query, { deprecated });
  await expectRefused(w, post(`destAgentId=${dest.agentId}`), 400, 'API_VALIDATION');
  await expectRefused(w, post(`destOrgId=${dest.id}`), 400, 'API_VALIDATION');
  await expectRefused(w, post(''), 400, 'API_VALIDATION');
  await expectRefused(w, post(`destOrgId=${dest.id}`, true), 400, 'API_VALIDATION');
  await expectRefused(w, post(`destAgentId=${dest.agentId}`, true), 400, 'API_VALIDATION');
  await expectRefused(w, post(`${cloneQuery(dest.id, dest.agentId)}&byReference=true`), [400, 409], 'API_UNSUPPORTED');
  await expectRefused(w, post(`${cloneQuery(root.id, root.agentId)}&byReference=true`), [400, 409], 'API_UNSUPPORTED');

  const unknown = await w.svc.request<Problem>('GET', `${solutionsOf(root.id)}/${src.id}/cloneAsync/${randomUUID()}`);
  expect(unknown.status, unknown.text).toBe(404);
  expect(unknown.body.code).toBe('API_NOT_FOUND');
}

async function checksTheCallerAndTheAgent(w: World): Promise<void> {
  const { root, dest } = w;
  const src = await sourceSolution(w, 'Access matters');
  const as = (auth: Credentials, query: string) => () => postClone(w, src, query, { auth });
  const toDest = cloneQuery(dest.id, dest.agentId);
  // Not a member of the destination, or no such Organization.
  await expectRefused(w, as(w.outsider, toDest), 404, 'API_NOT_FOUND');
  await expectRefused(w, as(w.svc.admin, cloneQuery(987_654, dest.agentId)), 404, 'API_NOT_FOUND');
  // Read-only in the source, or in the destination.
  await expectRefused(w, as(w.readOnlySource, toDest), 403, 'API_FORBIDDEN_ROLE');
  await expectRefused(w, as(w.readOnlyDest, toDest), 403, 'API_FORBIDDEN_ROLE');
  // The Agent must be one of the destination's.
  await expectRefused(w, as(w.svc.admin, cloneQuery(dest.id, root.agentId)), 404, 'API_NOT_FOUND');
  await expectRefused(w, as(w.svc.admin, cloneQuery(dest.id, randomUUID())), 404, 'API_NOT_FOUND');
  await expectRefused(w, as(w.svc.admin, cloneQuery(root.id, dest.agentId)), 404, 'API_NOT_FOUND');

  // A User of both Organizations may clone.
  const job = await cloned(w, src, dest.id, dest.agentId, w.memberOfBoth);
  expect(job, job.message ?? '').toMatchObject({ hasError: false });
  const copy = await w.svc.request<SolutionModel>('GET', `${solutionsOf(dest.id)}/${job.clonedSolutionId}`);
  expect(copy.body).toMatchObject({ name: 'Access matters', agentId: dest.agentId });
}

describe.each(STORE_TARGETS)('cloning a Solution (not by reference) on $name', (target) => {
  let w: World;

  beforeAll(async () => {
    w = await buildWorld(target);
  }, 60_000);
  afterAll(async () => {
    await w?.channels.closeAll();
    await w?.svc.close();
  });

  it(
    'copies into another Organization: same type, description and schedule, the Maps at their latest revision on its Connections and Agent, Incomplete until prepared, then runnable',
    () => copiesIntoAnotherOrganization(w),
    60_000,
  );
  it(
    'copies within the Organization as "Copy of <name> 1", then "… 2" (the deprecated clone, complete at once), on the same Connections',
    () => copiesWithinTheOrganization(w),
    60_000,
  );
  it('ends with an error naming the Solution and creates nothing when the destination has that name', () =>
    refusesASolutionNameTaken(w));
  it('ends with an error naming both a missing Connection and a missing Lookup Table, and creates nothing', () =>
    namesEveryMissingPiece(w));
  it('ends with an error naming a Connection of the same name on another Connector, and creates nothing', () =>
    refusesAConnectionOfAnotherConnector(w));
  it('ends with an error naming an invalid Map of the source, and creates nothing', () => refusesAnInvalidMap(w));
  it('refuses a missing destOrgId or destAgentId (400) and byReference (API_UNSUPPORTED); 404 for an unknown job', () =>
    refusesBadRequests(w));
  it('needs a non-read-only member of both Organizations and an Agent of the destination (404, 403)', () =>
    checksTheCallerAndTheAgent(w));
});
