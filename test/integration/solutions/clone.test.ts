/**
 * Cloning a Solution (not by reference): `POST S/cloneAsync` and the deprecated `POST S/clone`,
 * in the world of clone-world.ts: a Service with three child Organizations — one that holds the
 * same Connections (names in another case), the Lookup Table and a played Agent that answers
 * metadata, so the copy can be prepared; one that lacks a Connection and the Lookup Table; one
 * whose Connection of the same name uses another Connector — and users with the roles the access
 * rules depend on. Copies by reference: clone-by-reference.test.ts.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Credentials } from '../../helpers/service.js';
import { STORE_TARGETS } from '../../helpers/stores.js';
import {
  buildWorld,
  cloned,
  cloneQuery,
  expectFailedClone,
  expectRefused,
  LOOKUP,
  mapsOf,
  postClone,
  prepare,
  solutionCount,
  solutionsOf,
  sourceSolution,
  type Problem,
  type SolutionModel,
  type World,
} from './clone-world.js';

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
  it('refuses a missing destOrgId or destAgentId (400); 404 for an unknown job', () => refusesBadRequests(w));
  it('needs a non-read-only member of both Organizations and an Agent of the destination (404, 403)', () =>
    checksTheCallerAndTheAgent(w));
});
