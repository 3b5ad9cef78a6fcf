/**
 * The world the Solution copy tests share (clone.test.ts, clone-by-reference.test.ts): a Service
 * whose bootstrap Organization holds a played Agent, two SQLite Connections and a Lookup Table,
 * and three child Organizations — one that holds the same Connections (names in another case), the
 * Lookup Table and a played Agent that answers metadata, so a copy can be prepared and run; one
 * that lacks a Connection and the Lookup Table; one whose Connection of the same name uses another
 * Connector — and users with the roles the access rules depend on. Also the API calls those tests
 * make: prepared source Solutions, clone jobs polled to their end, refused requests.
 */
import { expect } from 'vitest';
import { addMembership } from '../../../service/store/repos/users.repo.js';
import { nowIso } from '../../../service/util/values.js';
import { OpenChannels, registerTestAgent, until } from '../../helpers/agent-client.js';
import { startService, type ApiResponse, type Credentials, type TestService } from '../../helpers/service.js';
import type { StoreTarget } from '../../helpers/stores.js';
import { addUser } from '../../helpers/users.js';
import { metadataAction, metadataField } from '../../helpers/metadata-fixtures.js';

export const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
export const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
export const LOOKUP = 'LOOKUPTABLEVALUE1("Regions", Q.name)';

export interface CloneJob {
  id: string;
  clonedSolutionId: string;
  creationDate: string;
  isComplete: boolean;
  hasError: boolean;
  message: string | null;
}
export interface PrepareJob {
  id: string;
  isComplete: boolean;
  hasError: boolean;
  message: string | null;
}
export interface Problem {
  code: string;
  detail: string;
}
export interface MapLink {
  id: number;
  name: string;
  enabled: boolean;
  valid: boolean;
}
export interface SolutionModel {
  id: string;
  name: string;
  description: string;
  solutionType: string;
  status: string;
  agentId: string;
  mapLinks: MapLink[];
}
export interface Block {
  name: string;
  connectionId: string;
  entity: string;
  fieldMappings?: Array<{ targetField: string; targetFormula: string }>;
}
export interface MapModel {
  id: number;
  name: string;
  revision: number;
  blocks: Block[];
}

// ── what the played Agents answer: two tables, `customers` and `orders`, of `id` and `name` ──────

const ACTIONS = [metadataAction('Query', 'Starter'), metadataAction('Create', 'Operation')];
export const METADATA = {
  actions: ACTIONS,
  entities: ['customers', 'orders'].map((name) => ({
    id: name,
    name,
    fullName: name,
    originalName: name,
    description: 'table',
    isHidden: false,
    actions: ACTIONS,
    fields: [metadataField('id', 1, true), metadataField('name', 2, false)],
    relationships: [],
  })),
};
/** Command type → the result a played Agent answers with; any other command is answered `{}`. */
export const PLAYED_RESULTS: Record<string, unknown> = {
  assignSolutions: { need: [] },
  loadMetadata: METADATA,
  startSolution: { started: true },
};

export const SCHEDULE = {
  scheduleOption: 'Recurring',
  runOnceOptions: null,
  recurringOptions: {
    days: { daysOption: 'DaysInterval', daysIntervalStartDate: '2024-1-1', daysInterval: 2 },
    times: { timeOption: 'TimeOfDay', timeOfDay: '4:15' },
    timeZone: 'UTC',
  },
};

/** A Map model: a Query of `entity` on `from`, a Create into `table` on `to` copying id and name (by `nameFormula`). */
export function copyModel(o: {
  name: string;
  from: string;
  entity: string;
  to: string;
  table: string;
  nameFormula?: string;
}) {
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

export interface OrgWorld {
  id: number;
  agentId: string;
  /** Connection name as the test knows it → its ID in this Organization. */
  conns: Record<string, string>;
}
export interface World {
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

export const solutionsOf = (orgId: number) => `/v1/orgs/${orgId}/solutions`;

export async function createOrg(svc: TestService, name: string): Promise<number> {
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

export async function createConnection(
  svc: TestService,
  orgId: number,
  name: string,
  connectorId: string,
): Promise<string> {
  const res = await svc.request<{ id: string }>('POST', `/v1/orgs/${orgId}/connections`, {
    body: { name, connectorId, color: '#FF00FF00' },
  });
  expect(res.status, res.text).toBe(201);
  return res.body.id;
}

export async function createTable(svc: TestService, orgId: number, name: string): Promise<void> {
  const res = await svc.request('POST', `/v1/orgs/${orgId}/lookuptables`, {
    body: { name, lookupTableValues: [{ value1: 'North', value2: 'ann' }] },
  });
  expect(res.status, res.text).toBe(201);
}

/**
 * Registers an Agent in the Organization and plays it on a channel: it answers metadata with
 * METADATA; `version` is the Agent version it registers and says hello with (default '1.2.3').
 */
export async function playedAgentIn(
  svc: TestService,
  channels: OpenChannels,
  orgId: number,
  name: string,
  version?: string,
  results: Record<string, unknown> = PLAYED_RESULTS,
): Promise<string> {
  const agent = await registerTestAgent(svc, { orgId, name, ...(version ? { version } : {}) });
  const ch = await channels.connect(svc, agent);
  ch.autoReply = (cmd) => ({ re: cmd['id'], ok: true, result: results[String(cmd['type'])] ?? {} });
  expect(await ch.hello(agent, version ? { version } : {})).toMatchObject({ ok: true });
  return agent.agentId;
}

/** A child Organization with an Agent (played or only registered), Connections and Lookup Tables. */
export async function childOrg(
  svc: TestService,
  channels: OpenChannels,
  o: {
    name: string;
    played: boolean;
    conns: Array<[string, string, string]>;
    tables: string[];
    /** What its played Agent answers (default PLAYED_RESULTS). */
    results?: Record<string, unknown>;
  },
): Promise<OrgWorld> {
  const id = await createOrg(svc, o.name);
  const agentId = o.played
    ? await playedAgentIn(svc, channels, id, `${o.name} agent`, undefined, o.results)
    : (await registerTestAgent(svc, { orgId: id, name: `${o.name} agent` })).agentId;
  const conns: Record<string, string> = {};
  for (const [key, name, connectorId] of o.conns) conns[key] = await createConnection(svc, id, name, connectorId);
  for (const t of o.tables) await createTable(svc, id, t);
  return { id, agentId, conns };
}

export async function buildWorld(target: StoreTarget): Promise<World> {
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

export interface Source {
  id: string;
  name: string;
  mapIds: number[];
}

export async function prepare(svc: TestService, orgId: number, solutionId: string): Promise<PrepareJob> {
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
export async function sourceSolution(
  w: World,
  name: string,
  kind: 'standard' | 'broken' = 'standard',
): Promise<Source> {
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

export const cloneQuery = (destOrgId: number, destAgentId: string) =>
  `destOrgId=${destOrgId}&destAgentId=${destAgentId}`;

export function postClone(
  w: World,
  src: Source,
  query: string,
  opts: { auth?: Credentials; deprecated?: boolean } = {},
) {
  const path = `${solutionsOf(w.root.id)}/${src.id}/${opts.deprecated ? 'clone' : 'cloneAsync'}?${query}`;
  return w.svc.request<CloneJob & Problem>('POST', path, opts.auth ? { auth: opts.auth } : {});
}

/** Starts a clone with cloneAsync as `auth` with `query`, expecting 200 and a job; answers the job as started. */
export async function startClone(w: World, src: Source, query: string, auth?: Credentials): Promise<CloneJob> {
  const started = await postClone(w, src, query, auth ? { auth } : {});
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
  return started.body;
}

/** Polls the clone job `jobId` of `src`, as `auth`, until it is complete. */
export async function finishedClone(w: World, src: Source, jobId: string, auth?: Credentials): Promise<CloneJob> {
  const job = await until(
    async () => {
      const res = await w.svc.request<CloneJob>(
        'GET',
        `${solutionsOf(w.root.id)}/${src.id}/cloneAsync/${jobId}`,
        auth ? { auth } : {},
      );
      expect(res.status, res.text).toBe(200);
      return res.body.isComplete ? res.body : undefined;
    },
    'the clone job',
    30_000,
  );
  expect(job.id).toBe(jobId);
  return job;
}

/**
 * Starts a clone with cloneAsync (expecting 200 and a job) and polls it, as `auth`, until it is
 * complete; `byReference` makes it a shared-resource copy.
 */
export async function cloned(
  w: World,
  src: Source,
  destOrgId: number,
  destAgentId: string,
  auth?: Credentials,
  byReference = false,
): Promise<CloneJob> {
  const query = `${cloneQuery(destOrgId, destAgentId)}${byReference ? '&byReference=true' : ''}`;
  const started = await startClone(w, src, query, auth);
  const job = await finishedClone(w, src, started.id, auth);
  expect(job).toMatchObject({ clonedSolutionId: started.clonedSolutionId, creationDate: started.creationDate });
  return job;
}

export async function solutionCount(svc: TestService, orgId: number): Promise<number> {
  const res = await svc.request('GET', solutionsOf(orgId));
  expect(res.status, res.text).toBe(200);
  return Number(res.headers['total-count']);
}

export async function mapsOf(svc: TestService, orgId: number, solutionId: string): Promise<MapModel[]> {
  const res = await svc.request<MapModel[]>('GET', `${solutionsOf(orgId)}/${solutionId}/maps`);
  expect(res.status, res.text).toBe(200);
  return res.body;
}

/** A job that ended in error: named pieces in its message, and no Solution made in `destOrgId`. */
export async function expectFailedClone(w: World, src: Source, dest: OrgWorld, named: string[]): Promise<void> {
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
export async function expectRefused(
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
