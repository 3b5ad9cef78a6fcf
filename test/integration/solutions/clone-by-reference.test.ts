/**
 * Shared-resource copies: `POST S/cloneAsync?byReference=true` (SPEC.md "Shared-resource cloning
 * (byReference true)", docs/solutions.md "Copies"). A source Solution in the bootstrap Organization
 * is copied as a target into child Organizations; the target runs the source's Maps without a
 * prepare. The world is clone-world.ts's, plus a second destination and an Agent of the
 * destination older than the source's.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ApiResponse, Credentials } from '../../helpers/service.js';
import { STORE_TARGETS, type StoreTarget } from '../../helpers/stores.js';
import {
  buildWorld,
  childOrg,
  cloned,
  cloneQuery,
  copyModel,
  expectRefused,
  finishedClone,
  METADATA,
  PLAYED_RESULTS,
  playedAgentIn,
  postClone,
  prepare,
  SCHEDULE,
  SQLITE,
  solutionCount,
  solutionsOf,
  sourceSolution,
  startClone,
  type MapModel,
  type OrgWorld,
  type Problem,
  type SolutionModel,
  type Source,
  type World,
} from './clone-world.js';

interface RefWorld extends World {
  /** A second destination like dest (its Connections, Regions, a played Agent), for a source's second target. */
  dest2: OrgWorld;
  /** Every piece, but metadata without the orders entity. */
  narrow: OrgWorld;
  /** Every piece, but an Agent that is not connected. */
  offline: OrgWorld;
  /** A played Agent of dest of version 1.0.0, older than the source's Agent (1.2.3). */
  oldAgentId: string;
}

interface StartAnswer {
  solutionId: string;
  runId: string | null;
  started: boolean;
  prepareId: string | null;
}

async function buildRefWorld(target: StoreTarget): Promise<RefWorld> {
  const w = await buildWorld(target);
  const dest2 = await childOrg(w.svc, w.channels, {
    name: 'Second destination',
    played: true,
    conns: [
      ['orders', 'Orders DB', SQLITE],
      ['warehouse', 'Warehouse', SQLITE],
    ],
    tables: ['Regions'],
  });
  const oldAgentId = await playedAgentIn(w.svc, w.channels, w.dest.id, 'Old agent', '1.0.0');
  const pieces = {
    conns: [
      ['orders', 'Orders DB', SQLITE],
      ['warehouse', 'Warehouse', SQLITE],
    ] as Array<[string, string, string]>,
    tables: ['Regions'],
  };
  // Every piece by name, but its databases hold no orders table: the shared Maps do not fit.
  const narrow = await childOrg(w.svc, w.channels, {
    name: 'Narrow',
    played: true,
    ...pieces,
    results: {
      ...PLAYED_RESULTS,
      loadMetadata: { ...METADATA, entities: METADATA.entities.filter((e) => e.name !== 'orders') },
    },
  });
  // Every piece, but its Agent is not connected: the metadata cannot be loaded through it.
  const offline = await childOrg(w.svc, w.channels, { name: 'Offline', played: false, ...pieces });
  return { ...w, dest2, oldAgentId, narrow, offline };
}

// ── helpers ─────────────────────────────────────────────────────────────────────────────────────

const pathOf = (orgId: number, solutionId: string) => `${solutionsOf(orgId)}/${solutionId}`;
const byRef = (dest: OrgWorld, agentId = dest.agentId) => `${cloneQuery(dest.id, agentId)}&byReference=true`;

/** Copies `src` by reference into `dest` (expecting the job to succeed) and answers the target's ID. */
async function sharedCopy(w: RefWorld, src: Source, dest: OrgWorld = w.dest): Promise<string> {
  const job = await cloned(w, src, dest.id, dest.agentId, undefined, true);
  expect(job, job.message ?? '').toMatchObject({ isComplete: true, hasError: false });
  const target = await w.svc.request<SolutionModel>('GET', pathOf(dest.id, job.clonedSolutionId));
  expect(target.status, target.text).toBe(200);
  expect(target.body).toMatchObject({ id: job.clonedSolutionId, name: src.name, agentId: dest.agentId });
  return job.clonedSolutionId;
}

/**
 * A by-reference copy into `dest` on `agentId` that ends in error: each of `named` in its message
 * (a string as is, a RegExp matched), and no Solution made in the destination.
 */
async function expectFailedShare(
  w: RefWorld,
  src: Source,
  named: Array<string | RegExp>,
  dest: OrgWorld = w.dest,
  agentId: string = dest.agentId,
): Promise<void> {
  const before = await solutionCount(w.svc, dest.id);
  const job = await cloned(w, src, dest.id, agentId, undefined, true);
  expect(job).toMatchObject({ isComplete: true, hasError: true });
  for (const name of named) {
    if (typeof name === 'string') expect(job.message ?? '', `the message names ${name}`).toContain(name);
    else expect(job.message ?? '', `the message says ${String(name)}`).toMatch(name);
  }
  const copy = await w.svc.request('GET', pathOf(dest.id, job.clonedSolutionId));
  expect(copy.status, copy.text).toBe(404);
  expect(await solutionCount(w.svc, dest.id)).toBe(before);
}

/** An answer that is problem+json with `status` and `code`; `what` says which request it was. */
function expectProblem(res: ApiResponse<unknown>, status: number, code: string, what: string): void {
  expect(res.status, `${what}: ${res.text}`).toBe(status);
  expect(res.headers['content-type'], what).toMatch(/application\/problem\+json/);
  expect((res.body as Problem).code, `${what}: ${res.text}`).toBe(code);
}

/** An Integration Solution in the source Organization with one Map, `disabled` or not, prepared when `prepared`. */
async function oneMapSolution(w: RefWorld, name: string, o: { prepared: boolean; disabled: boolean }): Promise<Source> {
  const { svc, root } = w;
  const sol = await svc.request<SolutionModel>('POST', solutionsOf(root.id), {
    body: { name, solutionType: 'Integration', agentId: root.agentId },
  });
  expect(sol.status, sol.text).toBe(201);
  const M = `${pathOf(root.id, sol.body.id)}/maps`;
  const { orders, warehouse } = root.conns as { orders: string; warehouse: string };
  const map = await svc.request<MapModel>('POST', `${M}/advanced`, {
    body: copyModel({ name: 'Customers to orders', from: orders, entity: 'customers', to: warehouse, table: 'orders' }),
  });
  expect(map.status, map.text).toBe(201);
  if (o.disabled) {
    const disabled = await svc.request('PUT', `${M}/${map.body.id}/enable?enableState=false`);
    expect(disabled.status, disabled.text).toBe(200);
  }
  if (o.prepared) {
    const prepared = await prepare(svc, root.id, sol.body.id);
    expect(prepared.hasError, prepared.message ?? '').toBe(false);
  }
  return { id: sol.body.id, name, mapIds: [map.body.id] };
}

/** A prepared Replication Solution of the source Organization: customers from Orders DB into Warehouse. */
async function replicationSolution(w: RefWorld, name: string): Promise<Source> {
  const { svc, root } = w;
  const sol = await svc.request<SolutionModel>('POST', solutionsOf(root.id), {
    body: {
      name,
      solutionType: 'Replication',
      agentId: root.agentId,
      connectionIdForSource: root.conns['orders'],
      connectionIdForTarget: root.conns['warehouse'],
      replicationSettings: { selectionType: 'Selected', entities: ['customers'] },
    },
  });
  expect(sol.status, sol.text).toBe(201);
  const prepared = await prepare(svc, root.id, sol.body.id);
  expect(prepared.hasError, prepared.message ?? '').toBe(false);
  return { id: sol.body.id, name, mapIds: [] };
}

/** A prepared Event Solution of the source Organization: one message Map writing into Warehouse. */
async function eventSolution(w: RefWorld, name: string): Promise<Source> {
  const { svc, root } = w;
  const sol = await svc.request<SolutionModel>('POST', solutionsOf(root.id), {
    body: { name, solutionType: 'IntegrationEvent', agentId: root.agentId },
  });
  expect(sol.status, sol.text).toBe(201);
  const map = await svc.request<MapModel>('POST', `${pathOf(root.id, sol.body.id)}/maps/advanced`, {
    body: {
      version: '3.0',
      name: 'Orders in',
      mapType: 'IntegrationServicesAdvancedMessageMap',
      blocks: [
        {
          blockId: '66666666-6666-4666-8666-000000000001',
          name: 'Msg',
          blockType: 'WaitForMessage',
          action: 'None',
          entity: 'Order',
          fields: ['id', 'name'],
        },
        {
          blockId: '66666666-6666-4666-8666-000000000002',
          name: 'Put',
          blockType: 'Create',
          action: 'Create',
          connectionId: root.conns['warehouse'],
          entity: 'orders',
          fieldMappings: [
            { targetField: 'id', targetFormula: 'Msg.id' },
            { targetField: 'name', targetFormula: 'Msg.name' },
          ],
        },
      ],
    },
  });
  expect(map.status, map.text).toBe(201);
  const prepared = await prepare(svc, root.id, sol.body.id);
  expect(prepared.hasError, prepared.message ?? '').toBe(false);
  return { id: sol.body.id, name, mapIds: [map.body.id] };
}

/** PUT S with the Solution as GET answers it, changed by `change`. */
async function putSolution(w: RefWorld, orgId: number, id: string, change: Partial<SolutionModel>) {
  const read = await w.svc.request<SolutionModel>('GET', pathOf(orgId, id));
  expect(read.status, read.text).toBe(200);
  return w.svc.request<SolutionModel & Problem>('PUT', pathOf(orgId, id), { body: { ...read.body, ...change } });
}

// ── the checks ──────────────────────────────────────────────────────────────────────────────────

async function copiesATargetThatNeedsNoPrepare(w: RefWorld): Promise<void> {
  const { svc, root, dest } = w;
  const src = await sourceSolution(w, 'Shared nightly');
  // A Net Change date in the source's definition (as an imported Map brings one): the target starts without.
  const { db } = svc.service.store;
  const prepared = await db
    .selectFrom('preparedSolutions')
    .select('body')
    .where('solutionId', '=', src.id)
    .executeTakeFirstOrThrow();
  const withDate = JSON.parse(prepared.body) as { maps: Array<{ model: Record<string, unknown> }> };
  for (const m of withDate.maps) m.model['lastRunDate'] = '2026-01-01T00:00:00Z';
  await db
    .updateTable('preparedSolutions')
    .set({ body: JSON.stringify(withDate) })
    .where('solutionId', '=', src.id)
    .execute();
  const before = await solutionCount(svc, dest.id);
  const targetId = await sharedCopy(w, src);
  const theirs = await db
    .selectFrom('preparedSolutions')
    .select('body')
    .where('solutionId', '=', targetId)
    .executeTakeFirstOrThrow();
  const maps = (JSON.parse(theirs.body) as { maps: Array<{ model: Record<string, unknown> }> }).maps;
  expect(maps.length).toBeGreaterThan(0);
  expect(maps.map((m) => m.model['lastRunDate'])).toEqual(maps.map(() => null));
  expect(targetId).not.toBe(src.id);
  expect(await solutionCount(svc, dest.id)).toBe(before + 1);

  // The target names its source; the source names none.
  const seen = await svc.request<{ sharedFromSolutionId: string | null; mapLinks: unknown[] }>(
    'GET',
    pathOf(dest.id, targetId),
  );
  expect(seen.body).toMatchObject({ sharedFromSolutionId: src.id, mapLinks: [] });
  const source = await svc.request<{ sharedFromSolutionId: string | null }>('GET', pathOf(root.id, src.id));
  expect(source.body.sharedFromSolutionId).toBeNull();

  // The schedule is copied: the target runs on it.
  const srcSchedule = await svc.request<Record<string, unknown>>('GET', `${pathOf(root.id, src.id)}/schedule`);
  const schedule = await svc.request<Record<string, unknown>>('GET', `${pathOf(dest.id, targetId)}/schedule`);
  expect(schedule.status, schedule.text).toBe(200);
  expect(schedule.body).toEqual({ ...srcSchedule.body, solutionId: targetId });

  // Started at once, without a prepare first.
  const start = await svc.request<StartAnswer & Problem>('POST', `${pathOf(dest.id, targetId)}/start`);
  expect(start.status, start.text).not.toBe(409);
  expect(start.status, start.text).toBe(200);
  expect(start.body).toMatchObject({ solutionId: targetId, prepareId: null });
}

async function sourcesHaveTargetsAndTargetsAreNoSources(w: RefWorld): Promise<void> {
  const { svc, root, dest, dest2 } = w;
  const src = await sourceSolution(w, 'Shared hourly');
  const first = await sharedCopy(w, src, dest);
  // A source may have several targets.
  const second = await sharedCopy(w, src, dest2);
  expect(second).not.toBe(first);

  // A target is not a clone source, by reference or not.
  for (const query of [byRef(dest2), cloneQuery(dest.id, dest.agentId)]) {
    await expectRefused(
      w,
      () => svc.request<Problem>('POST', `${pathOf(dest.id, first)}/cloneAsync?${query}`),
      409,
      'API_CONFLICT',
    );
  }

  // A ReadOnly role in the source or in the destination cannot copy by reference.
  const as = (auth: Credentials) => () => postClone(w, src, byRef(dest), { auth });
  await expectRefused(w, as(w.readOnlySource), 403, 'API_FORBIDDEN_ROLE');
  await expectRefused(w, as(w.readOnlyDest), 403, 'API_FORBIDDEN_ROLE');
  expect((await svc.request('GET', pathOf(root.id, src.id))).status).toBe(200);
}

async function refusesUnsupportedSources(w: RefWorld): Promise<void> {
  await expectFailedShare(w, await replicationSolution(w, 'Shared replica'), ['Replication']);
  await expectFailedShare(w, await eventSolution(w, 'Shared events'), ['IntegrationEvent']);
  await expectFailedShare(w, await oneMapSolution(w, 'Shared unprepared', { prepared: false, disabled: false }), [
    /prepare/i,
  ]);
  await expectFailedShare(w, await oneMapSolution(w, 'Shared all off', { prepared: true, disabled: true }), [
    /disabled/i,
  ]);
}

async function refusesWhatTheDestinationLacks(w: RefWorld): Promise<void> {
  const { svc, dest } = w;
  const src = await sourceSolution(w, 'Shared audit');
  // Lacking has Orders DB, but neither Warehouse nor the Regions Lookup Table.
  await expectFailedShare(w, src, ['Warehouse', 'Regions'], w.lacking);
  // Other connector's Orders DB is a CSV Connection.
  await expectFailedShare(w, src, ['Orders DB'], w.otherConnector);
  // An Agent older than the source's.
  await expectFailedShare(w, src, [/version/i], dest, w.oldAgentId);
  // Shared Maps that do not fit the destination's metadata, and metadata that cannot be loaded.
  await expectFailedShare(w, src, [/does not fit/, 'orders'], w.narrow);
  await expectFailedShare(w, src, [/could not be loaded/], w.offline);
  // Into its own Organization: the target would need the source's name.
  await expectFailedShare(w, src, ['another Organization'], w.root);

  // A Solution of that name that is not a by-reference copy.
  const taken = await svc.request('POST', solutionsOf(dest.id), {
    body: { name: 'Shared ledger', solutionType: 'Integration', agentId: dest.agentId },
  });
  expect(taken.status, taken.text).toBe(201);
  await expectFailedShare(w, await sourceSolution(w, 'Shared ledger'), ['Shared ledger']);
}

async function deletesTheSourceAfterItsTargets(w: RefWorld): Promise<void> {
  const { svc, root, dest } = w;
  const src = await sourceSolution(w, 'Shared stock');
  const targetId = await sharedCopy(w, src);
  const refused = await svc.request<Problem>('DELETE', pathOf(root.id, src.id));
  expectProblem(refused, 409, 'API_IN_USE', 'DELETE source');
  // Organizations are named by name or by ID in answers.
  const named = new RegExp(`Destination|Organization ${dest.id}\\b`);
  expect(refused.body.detail, 'the answer names the Organization of the target').toMatch(named);
  expect((await svc.request('GET', pathOf(root.id, src.id))).status).toBe(200);

  const target = await svc.request('DELETE', pathOf(dest.id, targetId));
  expect([200, 204], target.text).toContain(target.status);
  expect((await svc.request('GET', pathOf(dest.id, targetId))).status).toBe(404);
  const source = await svc.request('DELETE', pathOf(root.id, src.id));
  expect([200, 204], source.text).toContain(source.status);
  expect((await svc.request('GET', pathOf(root.id, src.id))).status).toBe(404);
}

async function editsOnlyTheSourceName(w: RefWorld): Promise<void> {
  const { svc, root, dest } = w;
  const src = await sourceSolution(w, 'Shared intake');
  const targetId = await sharedCopy(w, src);

  expectProblem(await putSolution(w, dest.id, targetId, {}), 409, 'API_CONFLICT', 'PUT target as read');
  expectProblem(await putSolution(w, dest.id, targetId, { name: 'Intake' }), 409, 'API_CONFLICT', 'PUT target name');
  const described = await putSolution(w, root.id, src.id, { description: 'changed' });
  expectProblem(described, 409, 'API_CONFLICT', 'PUT source description');
  const both = await putSolution(w, root.id, src.id, { name: 'Shared intake v1', description: 'changed' });
  expectProblem(both, 409, 'API_CONFLICT', 'PUT source name and description');
  const unchanged = await svc.request<SolutionModel>('GET', pathOf(root.id, src.id));
  expect(unchanged.body).toMatchObject({ name: 'Shared intake', description: 'Shared intake, every other day' });

  const renamed = await putSolution(w, root.id, src.id, { name: 'Shared intake v1' });
  expect(renamed.status, renamed.text).toBe(200);
  expect((await svc.request<SolutionModel>('GET', pathOf(root.id, src.id))).body.name).toBe('Shared intake v1');
  expect((await svc.request<SolutionModel>('GET', pathOf(dest.id, targetId))).body.name).toBe('Shared intake');
}

/** The calls SPEC.md condition 13 refuses on a source and on a target `S`: `[what, method, path, body?]`. */
function refusedOnBoth(S: string, mapId: number, w: RefWorld): Array<[string, string, string, unknown?]> {
  const M = `${S}/maps/${mapId}`;
  return [
    ['PUT schedule', 'PUT', `${S}/schedule`, SCHEDULE],
    ['POST prepare', 'POST', `${S}/prepare`],
    ['POST clone (deprecated)', 'POST', `${S}/clone?${cloneQuery(w.dest2.id, w.dest2.agentId)}`],
    ['POST history mark', 'POST', `${S}/history/${randomUUID()}/mark?mark=true`],
    ['POST history errors mark', 'POST', `${S}/history/${randomUUID()}/errors/${randomUUID()}/mark`],
    ['DELETE map', 'DELETE', M],
    ['PUT map enable', 'PUT', `${M}/enable?enableState=false`],
    ['POST map clone', 'POST', `${M}/clone`],
    ['POST map validate', 'POST', `${M}/validate`],
  ];
}

async function refusesTheUnsupportedCalls(w: RefWorld): Promise<void> {
  const { svc, root, dest } = w;
  const src = await sourceSolution(w, 'Shared daily');
  const targetId = await sharedCopy(w, src);
  const S = pathOf(root.id, src.id);
  const T = pathOf(dest.id, targetId);
  const mapId = src.mapIds[0] ?? 0;
  const inDest2 = await solutionCount(svc, w.dest2.id);

  for (const [who, at] of [
    ['source', S],
    ['target', T],
  ] as const) {
    for (const [what, method, path, body] of refusedOnBoth(at, mapId, w)) {
      const res = await svc.request(method, path, body === undefined ? {} : { body });
      expectProblem(res, 409, 'API_CONFLICT', `${what} on the ${who}`);
    }
  }

  // Reading the Maps: only on the source.
  for (const [what, path] of [
    ['GET maps', 'maps'],
    ['GET map revisions', `maps/${mapId}/revisions`],
    ['GET maplinks', `maplinks/${mapId}`],
  ] as const) {
    const onSource = await svc.request('GET', `${S}/${path}`);
    expect(onSource.status, `${what} on the source: ${onSource.text}`).toBe(200);
    expectProblem(await svc.request('GET', `${T}/${path}`), 409, 'API_CONFLICT', `${what} on the target`);
  }

  // Starting: only a target.
  expectProblem(await svc.request('POST', `${S}/start`), 409, 'API_CONFLICT', 'POST start on the source');

  // Nothing refused changed the source's Maps; the copy into dest2 was not made.
  expect(await solutionCount(svc, w.dest2.id)).toBe(inDest2);
  const maps = await svc.request<MapModel[]>('GET', `${S}/maps`);
  expect(maps.body.map((m) => [m.id, m.revision])).toEqual([
    [src.mapIds[0], 2],
    [src.mapIds[1], 1],
  ]);
  const links = (await svc.request<SolutionModel>('GET', S)).body.mapLinks;
  expect(links.map((l) => [l.id, l.enabled])).toEqual([
    [src.mapIds[0], true],
    [src.mapIds[1], false],
  ]);
}

async function replacesTheTargetByName(w: RefWorld): Promise<void> {
  const { svc, root, dest } = w;
  const first = await sourceSolution(w, 'Shared weekly');
  const targetId = await sharedCopy(w, first);
  const renamed = await putSolution(w, root.id, first.id, { name: 'Shared weekly (old)' });
  expect(renamed.status, renamed.text).toBe(200);

  const next = await oneMapSolution(w, 'Shared weekly', { prepared: true, disabled: false });
  const before = await solutionCount(svc, dest.id);
  const started = await startClone(w, next, byRef(dest));
  const job = await finishedClone(w, next, started.id);
  expect(job, job.message ?? '').toMatchObject({ isComplete: true, hasError: false });
  // The target is replaced by name and keeps its ID (and so its History).
  expect(job.clonedSolutionId).toBe(targetId);
  expect(await solutionCount(svc, dest.id)).toBe(before);
  const target = await svc.request<SolutionModel>('GET', pathOf(dest.id, targetId));
  expect(target.status, target.text).toBe(200);
  expect(target.body).toMatchObject({ id: targetId, name: 'Shared weekly', agentId: dest.agentId });
  const history = await svc.request('GET', `${pathOf(dest.id, targetId)}/history`);
  expect(history.status, history.text).toBe(200);

  // The target is now the new source's: that one cannot be deleted while it has it.
  expectProblem(await svc.request('DELETE', pathOf(root.id, next.id)), 409, 'API_IN_USE', 'DELETE the new source');

  // docs/solutions.md: the clonedSolutionId cloneAsync answers at once is the copy's ID.
  expect(started.clonedSolutionId, 'the clonedSolutionId cloneAsync answered').toBe(targetId);
}

describe.each(STORE_TARGETS)('cloning a Solution by reference on $name', (target) => {
  let w: RefWorld;

  beforeAll(async () => {
    w = await buildRefWorld(target);
  }, 60_000);
  afterAll(async () => {
    await w?.channels.closeAll();
    await w?.svc.close();
  });

  it('copies a target of the same name on the destination Agent, with the schedule, that starts unprepared', () =>
    copiesATargetThatNeedsNoPrepare(w));
  it('copies a source into several Organizations; a target is no clone source; ReadOnly may not copy', () =>
    sourcesHaveTargetsAndTargetsAreNoSources(w));
  it(
    'ends with an error for a Replication or Event source, an unprepared one, or one whose Maps are all disabled',
    () => refusesUnsupportedSources(w),
    60_000,
  );
  it(
    'ends with an error naming what the destination lacks, an older Agent, or a Solution of that name',
    () => refusesWhatTheDestinationLacks(w),
    60_000,
  );
  it('refuses to delete a source while it has a target (API_IN_USE naming its Organization), then both go', () =>
    deletesTheSourceAfterItsTargets(w));
  it('refuses every edit of either Solution but the source name, which the target does not take', () =>
    editsOnlyTheSourceName(w));
  it(
    'refuses with 409 on sources and targets: schedule, prepare, clone, marks, Map edits and reads, start',
    () => refusesTheUnsupportedCalls(w),
    60_000,
  );
  it('updates a target: rename the source, copy a new one of the original name, which replaces the target', () =>
    replacesTheTargetByName(w));
});
