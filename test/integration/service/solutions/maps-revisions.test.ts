import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { putPreparedSolution } from '../../../../service/store/repos/prepare.repo.js';
import { nowIso } from '../../../../service/util/values.js';
import { OpenChannels, registerTestAgent, type Incoming, type TestAgent } from '../../../helpers/agent-client.js';
import type { Credentials } from '../../../helpers/service.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { addUser } from '../../../helpers/users.js';

interface MapModel {
  id: number;
  name: string;
  revision: number;
  revisionComment: string;
  valid: boolean;
  lastRunDate: string | null;
  lockedBy: string | null;
  lockDate: string | null;
  blocks: Array<{ name: string; blockId: string }>;
}
interface MapLink {
  id: number;
  index: number;
  name: string;
  enabled: boolean;
  lockedBy: string | null;
  lockDate: string | null;
}
interface Revision {
  id: number;
  revision: number;
  revisionDate: string;
  revisionComment: string;
  comment: string;
  modifiedBy: string | null;
}
interface Solution {
  id: string;
  status: string;
  mapLinks: MapLink[];
}
interface Problem {
  code: string;
  status: number;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}

const FIXTURES = path.join(import.meta.dirname, '../../../fixtures');
const QUERY_CREATE = JSON.parse(fs.readFileSync(path.join(FIXTURES, 'maps/query-create/map.json'), 'utf8')) as Record<
  string,
  unknown
> & { blocks: unknown[] };
const blockId = (n: number): string => `22222222-2222-4222-8222-${String(n).padStart(12, '0')}`;
const createBlock = (n: number, name = `Create${n}`) => ({
  blockId: blockId(n),
  name,
  blockType: 'Create',
  action: 'Create',
  connectionId: 'db',
  entity: 'contacts',
  fieldMappings: [],
});

/** The query-create Map with `creates` more Create Blocks: `nested` of them inside an If/Else. */
function bigModel(creates: number, nested: number): Record<string, unknown> {
  const [query] = QUERY_CREATE.blocks;
  const top = Array.from({ length: creates - nested }, (_, i) => createBlock(i + 1));
  const inner = Array.from({ length: nested }, (_, i) => createBlock(creates - nested + i + 1));
  const ifElse = {
    blockId: blockId(99_999),
    name: 'Branch',
    blockType: 'IfElse',
    action: 'None',
    condition: 'Q.age > 1',
    then: inner,
    else: [],
  };
  return { ...QUERY_CREATE, name: 'Big', blocks: [query, ...top, ifElse] };
}

describe.each(STORE_TARGETS)('Map revisions, locks, enable and clone on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let S: string;
  let solutionId: string;
  let M: string;
  let user: Credentials;
  let readOnly: Credentials;
  const channels = new OpenChannels();

  const createMap = async (body: unknown): Promise<MapModel> => {
    const res = await svc.request<MapModel>('POST', `${M}/advanced`, { body });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const save = (id: number, body: unknown, query = '', auth?: Credentials) =>
    svc.request<MapModel & Problem>('PUT', `${M}/advanced/${id}${query}`, { body, ...(auth ? { auth } : {}) });
  const getMap = async (id: number, query = ''): Promise<MapModel> => {
    const res = await svc.request<MapModel>('GET', `${M}/${id}${query}`);
    expect(res.status, res.text).toBe(200);
    return res.body;
  };
  const link = async (id: number): Promise<MapLink> =>
    (await svc.request<MapLink>('GET', `${S}/${solutionId}/maplinks/${id}`)).body;
  const solution = async (): Promise<Solution> => (await svc.request<Solution>('GET', `${S}/${solutionId}`)).body;
  const markPrepared = async () => {
    await svc.service.store.db.updateTable('solutions').set({ prepared: 1 }).where('id', '=', solutionId).execute();
    expect((await solution()).status).not.toBe('Incomplete');
  };

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    S = `/v1/orgs/${svc.orgId}/solutions`;
    agent = await registerTestAgent(svc, { name: 'Revisions agent' });
    const res = await svc.request<Solution>('POST', S, {
      body: { name: 'Maps at work', solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(res.status, res.text).toBe(201);
    solutionId = res.body.id;
    M = `${S}/${solutionId}/maps`;
    user = await addUser(svc, svc.orgId, 'User');
    readOnly = await addUser(svc, svc.orgId, 'ReadOnly');
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  describe('revisions and revert', () => {
    let map: MapModel;

    it('lists the revisions newest first, paged, with their comments, dates and authors', async () => {
      map = await createMap({ ...QUERY_CREATE, name: 'Revised' });
      expect(
        (
          await save(
            map.id,
            { ...QUERY_CREATE, name: 'Revised 2', lastRunDate: '2024-03-01T00:00:00Z' },
            '?comment=second',
          )
        ).status,
      ).toBe(200);
      expect(
        (
          await save(
            map.id,
            { ...QUERY_CREATE, name: 'Revised 3', lastRunDate: '2024-05-01T00:00:00Z' },
            '?comment=third',
            user,
          )
        ).status,
      ).toBe(200);

      const all = await svc.request<Revision[]>('GET', `${M}/${map.id}/revisions`);
      expect(all.status, all.text).toBe(200);
      expect(all.headers['total-count']).toBe('3');
      expect(all.body.map((r) => [r.revision, r.revisionComment, r.comment, r.modifiedBy])).toEqual([
        [3, 'third', 'third', user.email],
        [2, 'second', 'second', svc.admin.email],
        [1, 'Initial Revision', 'Initial Revision', svc.admin.email],
      ]);
      for (const r of all.body) {
        expect(r.id).toBe(map.id);
        expect(Number.isNaN(Date.parse(r.revisionDate))).toBe(false);
      }
      const page = await svc.request<Revision[]>('GET', `${M}/${map.id}/revisions?limit=1&offset=1`);
      expect(page.body.map((r) => r.revision)).toEqual([2]);
      expect(page.headers['total-count']).toBe('3');
      expect((await svc.request('GET', `${M}/${map.id}/revisions?limit=1001`)).status).toBe(400);
      expect((await svc.request('GET', `${M}/999999/revisions`)).status).toBe(404);
      expect(await getMap(map.id, '?revision=2')).toMatchObject({
        revision: 2,
        name: 'Revised 2',
        revisionComment: 'second',
      });
    });

    it('reverts to an earlier revision as a new one: not valid, the Solution Incomplete, lastRunDate kept', async () => {
      await markPrepared();
      const res = await svc.request<MapModel>('POST', `${M}/${map.id}/revert?revision=1`);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({
        id: map.id,
        revision: 4,
        name: 'Revised',
        revisionComment: 'Reverted to revision 1',
        valid: false,
        lastRunDate: '2024-05-01T00:00:00Z',
      });
      expect(res.body.blocks).toEqual(map.blocks);
      expect((await solution()).status).toBe('Incomplete');
      expect((await link(map.id)).name).toBe('Revised');
      const revisions = (await svc.request<Revision[]>('GET', `${M}/${map.id}/revisions`)).body;
      expect(revisions.map((r) => r.revision)).toEqual([4, 3, 2, 1]);
      // The old revision itself is untouched.
      expect(await getMap(map.id, '?revision=1')).toMatchObject({ revision: 1, lastRunDate: null });
    });

    it('refuses a revert without a revision (400) or to one the Map does not have (404), and changes nothing', async () => {
      for (const [query, status] of [
        ['', 400],
        ['?revision=abc', 400],
        ['?revision=0', 400],
        ['?revision=99', 404],
      ] as const) {
        const res = await svc.request<Problem>('POST', `${M}/${map.id}/revert${query}`);
        expect(res.status, query).toBe(status);
        expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
      }
      expect((await svc.request('POST', `${M}/999999/revert?revision=1`)).status).toBe(404);
      expect((await getMap(map.id)).revision).toBe(4);
    });
  });

  describe('locks', () => {
    let map: MapModel;

    it('locks a Map for its caller: the link and the Map show lockedBy and lockDate; locking again keeps the date', async () => {
      map = await createMap({ ...QUERY_CREATE, name: 'Locked' });
      expect(map).toMatchObject({ lockedBy: null, lockDate: null });
      const res = await svc.request<MapLink>('PUT', `${M}/${map.id}/lock`);
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ id: map.id, lockedBy: svc.admin.email });
      expect(Number.isNaN(Date.parse(res.body.lockDate ?? ''))).toBe(false);
      expect(await link(map.id)).toMatchObject({ lockedBy: svc.admin.email, lockDate: res.body.lockDate });
      expect(await getMap(map.id)).toMatchObject({ lockedBy: svc.admin.email, lockDate: res.body.lockDate });
      const again = await svc.request<MapLink>('PUT', `${M}/${map.id}/lock?lockState=true`);
      expect(again.body.lockDate).toBe(res.body.lockDate);
      expect((await solution()).mapLinks.find((l) => l.id === map.id)?.lockedBy).toBe(svc.admin.email);
    });

    it("refuses another user's save, rename, revert, delete, lock and unlock with 409 MAP_LOCKED naming the holder; nothing changes", async () => {
      const attempts = [
        save(map.id, { ...QUERY_CREATE, name: 'Renamed by someone else' }, '', user),
        save(map.id, QUERY_CREATE, '?unlockMap=true', user),
        svc.request<Problem>('POST', `${M}/${map.id}/revert?revision=1`, { auth: user }),
        svc.request<Problem>('DELETE', `${M}/${map.id}`, { auth: user }),
        svc.request<Problem>('PUT', `${M}/${map.id}/lock`, { auth: user }),
        svc.request<Problem>('PUT', `${M}/${map.id}/lock?lockState=false`, { auth: user }),
        svc.request<Problem>('GET', `${M}/${map.id}?lockMap=true`, { auth: user }),
      ];
      for (const res of await Promise.all(attempts)) {
        expect(res.status, res.text).toBe(409);
        expect(res.headers['content-type']).toMatch(/application\/problem\+json/);
        expect(res.body.code).toBe('MAP_LOCKED');
        expect(res.body.detail).toContain(svc.admin.email);
        expect(res.body.detail).toMatch(/lockState=false/);
      }
      // Reading is open to everyone; the Map is as it was.
      const read = await svc.request<MapModel>('GET', `${M}/${map.id}`, { auth: user });
      expect(read.status).toBe(200);
      expect(read.body).toMatchObject({ name: 'Locked', revision: 1, lockedBy: svc.admin.email });
    });

    it('lets the holder save (the lock stays) and release it with unlockMap on a save', async () => {
      const kept = await save(map.id, { ...QUERY_CREATE, name: 'Locked 2' });
      expect(kept.status, kept.text).toBe(200);
      expect(kept.body).toMatchObject({ revision: 2, name: 'Locked 2', lockedBy: svc.admin.email });
      const released = await save(map.id, { ...QUERY_CREATE, name: 'Locked 3' }, '?unlockMap=true');
      expect(released.status, released.text).toBe(200);
      expect(released.body).toMatchObject({ revision: 3, lockedBy: null, lockDate: null });
      expect(await link(map.id)).toMatchObject({ lockedBy: null, lockDate: null });
      // Now anyone may save.
      expect((await save(map.id, { ...QUERY_CREATE, name: 'Locked 4' }, '', user)).status).toBe(200);
    });

    it('GET with lockMap=true locks for the caller and answers the Map locked; the holder unlocks it', async () => {
      const res = await svc.request<MapModel>('GET', `${M}/${map.id}?lockMap=true`, { auth: user });
      expect(res.status, res.text).toBe(200);
      expect(res.body).toMatchObject({ id: map.id, lockedBy: user.email });
      expect(res.body.lockDate).not.toBeNull();
      const unlock = await svc.request<MapLink>('PUT', `${M}/${map.id}/lock?lockState=false`, { auth: user });
      expect(unlock.status, unlock.text).toBe(200);
      expect(unlock.body).toMatchObject({ lockedBy: null, lockDate: null });
      // Unlocking an unlocked Map changes nothing.
      expect((await svc.request<MapLink>('PUT', `${M}/${map.id}/lock?lockState=false`, { auth: user })).status).toBe(
        200,
      );
    });

    it("lets an Administrator release another user's lock; a Read-only user may not lock", async () => {
      expect((await svc.request('PUT', `${M}/${map.id}/lock`, { auth: user })).status).toBe(200);
      const adminSave = await save(map.id, QUERY_CREATE);
      expect(adminSave.status).toBe(409);
      expect(adminSave.body.detail).toContain(user.email);
      const release = await svc.request<MapLink>('PUT', `${M}/${map.id}/lock?lockState=false`);
      expect(release.status, release.text).toBe(200);
      expect(release.body.lockedBy).toBeNull();

      expect((await svc.request<Problem>('GET', `${M}/${map.id}?lockMap=true`, { auth: readOnly })).status).toBe(403);
      expect((await svc.request<Problem>('PUT', `${M}/${map.id}/lock`, { auth: readOnly })).status).toBe(403);
      const read = await svc.request<MapModel>('GET', `${M}/${map.id}?lockMap=false`, { auth: readOnly });
      expect(read.status).toBe(200);
      expect(read.body.lockedBy).toBeNull();
      expect((await svc.request('PUT', `${M}/${map.id}/lock?lockState=maybe`)).status).toBe(400);
    });

    it('lets the holder delete a locked Map', async () => {
      expect((await svc.request('PUT', `${M}/${map.id}/lock`, { auth: user })).status).toBe(200);
      expect((await svc.request('DELETE', `${M}/${map.id}`, { auth: user })).status).toBe(204);
      expect((await svc.request('GET', `${M}/${map.id}`)).status).toBe(404);
    });
  });

  describe('clone', () => {
    it('copies the latest revision as "Copy of <name> 1", then 2, disabled, at the end, revision comment "Duplicated"', async () => {
      const source = await createMap({ ...QUERY_CREATE, name: 'Original' });
      const latest = await save(source.id, {
        ...QUERY_CREATE,
        name: 'Original',
        lastRunDate: '2024-06-01T00:00:00Z',
        blocks: [QUERY_CREATE.blocks[0], { ...createBlock(1), name: 'Latest' }],
      });
      expect(latest.status, latest.text).toBe(200);
      const countBefore = Number((await svc.request('GET', M)).headers['total-count']);
      await markPrepared();

      const res = await svc.request<MapModel>('POST', `${M}/${source.id}/clone`);
      expect(res.status, res.text).toBe(201);
      const copy = res.body;
      expect(res.headers['location']).toBe(`${M}/${copy.id}`);
      expect(copy).toMatchObject({
        name: 'Copy of Original 1',
        revision: 1,
        revisionComment: 'Duplicated',
        lastRunDate: null,
        valid: false,
        lockedBy: null,
      });
      expect(copy.id).not.toBe(source.id);
      expect(copy.blocks.map((b) => b.name)).toEqual(['Q', 'Latest']);
      expect(await link(copy.id)).toMatchObject({ enabled: false, index: countBefore, name: 'Copy of Original 1' });
      expect((await solution()).status).toBe('Incomplete');
      // The source is unchanged.
      expect(await getMap(source.id)).toMatchObject({ name: 'Original', revision: 2 });

      const second = await svc.request<MapModel>('POST', `${M}/${source.id}/clone`);
      expect(second.body.name).toBe('Copy of Original 2');
      // The first free number is taken, whatever the case of the names.
      expect((await svc.request('DELETE', `${M}/${copy.id}`)).status).toBe(204);
      await save(second.body.id, { ...QUERY_CREATE, name: 'COPY OF ORIGINAL 2' });
      expect((await svc.request<MapModel>('POST', `${M}/${source.id}/clone`)).body.name).toBe('Copy of Original 1');
      expect((await svc.request<MapModel>('POST', `${M}/${source.id}/clone`)).body.name).toBe('Copy of Original 3');
      expect((await svc.request('POST', `${M}/999999/clone`)).status).toBe(404);
    });
  });

  describe('enable', () => {
    it('disables and enables a Map (default true); bad values are 400', async () => {
      const map = await createMap({ ...QUERY_CREATE, name: 'Switched' });
      const off = await svc.request<MapLink>('PUT', `${M}/${map.id}/enable?enableState=false`);
      expect(off.status, off.text).toBe(200);
      expect(off.body).toMatchObject({ id: map.id, enabled: false });
      expect((await link(map.id)).enabled).toBe(false);
      const on = await svc.request<MapLink>('PUT', `${M}/${map.id}/enable`);
      expect(on.body.enabled).toBe(true);
      const bad = await svc.request<Problem>('PUT', `${M}/${map.id}/enable?enableState=sometimes`);
      expect(bad.status).toBe(400);
      expect((await link(map.id)).enabled).toBe(true);
      expect((await svc.request('PUT', `${M}/${map.id}/enable`, { auth: readOnly })).status).toBe(403);
    });

    it("sends the change to the Agent's copy of the prepared Solution without a new prepare", async () => {
      const map = await createMap({ ...QUERY_CREATE, name: 'On the Agent' });
      const body = {
        solutionId,
        orgId: svc.orgId,
        solutionType: 'Integration',
        maps: [{ mapId: map.id, name: map.name, enabled: true, model: { ...QUERY_CREATE, mapId: map.id } }],
        replication: null,
        lookupTables: [],
        connections: [],
      };
      await putPreparedSolution(svc.service.store.db, {
        solutionId,
        agentId: agent.agentId,
        body: JSON.stringify(body),
        preparedAt: nowIso(),
      });
      const ch = await channels.connect(svc, agent);
      // The Agent holds nothing yet: it needs every Solution it is given.
      ch.autoReply = (cmd) => {
        const assignments = (cmd['assignments'] ?? []) as Array<{ solutionId: string }>;
        return {
          re: cmd['id'],
          ok: true,
          result: cmd['type'] === 'assignSolutions' ? { need: assignments.map((a) => a.solutionId) } : {},
        };
      };
      expect(await ch.hello(agent)).toMatchObject({ ok: true });
      const enabledOf = (m: Incoming): boolean | undefined =>
        ((m['solution'] as { maps?: Array<{ mapId: number; enabled: boolean }> } | undefined)?.maps ?? []).find(
          (x) => x.mapId === map.id,
        )?.enabled;
      await ch.next((m) => m['type'] === 'putSolution' && enabledOf(m) === true);

      expect((await svc.request('PUT', `${M}/${map.id}/enable?enableState=false`)).status).toBe(200);
      const sent = await ch.next((m) => m['type'] === 'putSolution' && enabledOf(m) === false);
      expect((sent['solution'] as { solutionId: string }).solutionId).toBe(solutionId);
      // Enabling is no change to the Map's model: the Solution stays prepared.
      expect((await svc.request('PUT', `${M}/${map.id}/enable?enableState=true`)).status).toBe(200);
      await ch.next(
        (m) =>
          m['type'] === 'putSolution' && enabledOf(m) === true && ch.received.indexOf(m) > ch.received.indexOf(sent),
      );
    });
  });

  describe('Block limits on save', () => {
    it('accepts 250 Blocks, nested ones counted, and refuses 251 with the count (400, nothing saved)', async () => {
      // Query + 247 Creates + If/Else = 249 on top; one more Create inside makes 250.
      const ok = await createMap(bigModel(248, 1));
      expect(ok.blocks).toHaveLength(249);
      const before = Number((await svc.request('GET', M)).headers['total-count']);
      const tooMany = bigModel(249, 10);
      for (const res of [
        await svc.request<Problem>('POST', `${M}/advanced`, { body: tooMany }),
        await save(ok.id, tooMany),
      ]) {
        expect(res.status, res.text).toBe(400);
        expect(res.body.detail).toContain('251');
        expect(res.body.detail).toContain('250');
      }
      expect(Number((await svc.request('GET', M)).headers['total-count'])).toBe(before);
      expect((await getMap(ok.id)).revision).toBe(1);
    });

    it('refuses two Blocks with the same name in any case, also nested, naming both (400)', async () => {
      const [query] = QUERY_CREATE.blocks;
      const map = await createMap({ ...QUERY_CREATE, name: 'Unique names' });
      const models = [
        { ...QUERY_CREATE, blocks: [query, createBlock(1, 'Write'), createBlock(2, 'WRITE')] },
        {
          ...QUERY_CREATE,
          blocks: [
            query,
            createBlock(1, 'Write'),
            {
              blockId: blockId(3),
              name: 'Branch',
              blockType: 'IfElse',
              action: 'None',
              condition: 'Q.age > 1',
              then: [createBlock(2, 'write')],
              else: [],
            },
          ],
        },
      ];
      for (const body of models) {
        for (const res of [await svc.request<Problem>('POST', `${M}/advanced`, { body }), await save(map.id, body)]) {
          expect(res.status, res.text).toBe(400);
          expect(res.body.detail).toContain(blockId(1));
          expect(res.body.detail).toContain(blockId(2));
          expect(res.body.detail).toMatch(/"Write".*"(WRITE|write)"/);
        }
      }
      expect((await getMap(map.id)).revision).toBe(1);
    });
  });
});
