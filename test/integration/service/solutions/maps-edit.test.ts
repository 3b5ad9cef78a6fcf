import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { action, type ConnectionMetadata, type EntityMetadata, type Field } from '../../../../src/connectors/sdk.js';
import { walkBlocks, type Block } from '../../../../src/protocol/map.js';
import { putMetadataCache } from '../../../../service/store/repos/metadata.repo.js';
import { requireCurrentModel } from '../../../../service/solutions/map-edit.js';
import { registerTestAgent, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface Model {
  version: string;
  name: string;
  mapId?: number;
  blocks: Block[];
}
interface Problem {
  code: string;
  detail: string;
  errors?: Array<{ path: string; message: string }>;
}

const EXPORT_25 = JSON.parse(
  fs.readFileSync(path.join(import.meta.dirname, '../../../fixtures/maps-2.5/accounts-export.json'), 'utf8'),
) as Record<string, unknown>;
const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
const g = (n: number): string => `33333333-1111-4111-8111-${String(n).padStart(12, '0')}`;

const field = (fullName: string, ordinal: number): Field => ({
  name: fullName,
  fullName,
  originalName: fullName,
  description: '',
  isPrimaryKey: ordinal === 1,
  nullable: ordinal !== 1,
  size: 0,
  ordinal,
  propertyType: ordinal === 1 ? 'integer' : 'string',
  nativeType: '',
  hasDefault: false,
  requiredInActionInput: false,
  usedInLookupCondition: true,
  usedInActionInput: true,
  usedInQueryConstraint: true,
  usedInQuerySelect: true,
});
const entity = (fullName: string, actions: EntityMetadata['actions']): EntityMetadata => ({
  id: fullName,
  name: fullName,
  fullName,
  originalName: fullName,
  description: '',
  isHidden: false,
  actions,
  fields: [field('id', 1), field('name', 2), field('email', 3)],
  relationships: [],
});
const WRITES = [
  action('Query'),
  action('Create'),
  action('Update'),
  action('UpdateInsert'),
  action('Upsert'),
  action('Delete'),
];
/** A Connection that supports every write, with a view that can only be queried. */
const METADATA: ConnectionMetadata = {
  actions: [...WRITES, action('NativeQuery')],
  entities: [entity('contacts', WRITES), entity('contacts_view', [action('Query')])],
};

/** A Map whose formulas read Q (also inside text literals and bracketed references, which must not and must change). */
const mapOf = (conn: string) => ({
  version: '3.0',
  name: 'Edits',
  blocks: [
    { blockId: g(1), name: 'Q', blockType: 'Query', action: 'Query', connectionId: conn, entity: 'contacts' },
    {
      blockId: g(2),
      name: 'Find',
      blockType: 'Lookup',
      action: 'Query',
      connectionId: conn,
      entity: 'contacts',
      lookupConditions: [{ fieldName: 'id', comparisonOperator: '=', compareValue: 'Q.id' }],
    },
    {
      blockId: g(3),
      name: 'Branch',
      blockType: 'IfElse',
      action: 'None',
      condition: 'ISNULL(Find.id) AND q.name <> "Q.name"',
      then: [
        {
          blockId: g(4),
          name: 'Write',
          blockType: 'Create',
          action: 'Create',
          connectionId: conn,
          entity: 'contacts',
          useBulk: false,
          fieldMappings: [
            { targetField: 'name', targetFormula: 'CONCATENATE([Q].name, " Q.name ", Q.email)' },
            { targetField: 'email', targetFormula: 'Find.email' },
          ],
        },
      ],
      else: [
        {
          blockId: g(5),
          name: 'Each',
          blockType: 'ForEachResult',
          action: 'None',
          source: 'Find',
          body: [{ blockId: g(6), name: 'Stop', blockType: 'MapExit', action: 'None' }],
        },
      ],
    },
  ],
});

describe.each(STORE_TARGETS)('Map edits (upgrade, renameblock, changeblocktype) on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let O: string;
  let S: string;
  let M: string;
  let conn: string;
  let mapId: number;

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    O = `/v1/orgs/${svc.orgId}`;
    agent = await registerTestAgent(svc, { name: 'Edit agent' });
    const sol = await svc.request<{ id: string }>('POST', `${O}/solutions`, {
      body: { name: 'Edits', solutionType: 'Integration', agentId: agent.agentId },
    });
    S = `${O}/solutions/${sol.body.id}`;
    M = `${S}/maps`;
    const c = await svc.request<{ id: string }>('POST', `${O}/connections`, {
      body: { name: 'Contacts DB', connectorId: SQLITE, color: '#FF000000' },
    });
    conn = c.body.id;
    // The metadata as an Agent would have loaded it.
    await putMetadataCache(svc.service.store.db, {
      connectionId: conn,
      orgId: svc.orgId,
      agentId: agent.agentId,
      metadata: JSON.stringify(METADATA),
      loadedAt: new Date().toISOString(),
    });
    const created = await svc.request<{ id: number }>('POST', `${M}/advanced`, { body: mapOf(conn) });
    expect(created.status, created.text).toBe(201);
    mapId = created.body.id;
  });
  afterAll(async () => svc?.close());

  const stored = async () => (await svc.request<{ revision: number; blocks: Block[] }>('GET', `${M}/${mapId}`)).body;
  const blockNamed = (m: Model, name: string) => [...walkBlocks(m.blocks)].find((b) => b.name === name);

  it('upgrades a 2.5 model to 3.0 at …/solution/{id}/maps/advanced/upgrade without saving it', async () => {
    const count = Number((await svc.request('GET', M)).headers['total-count']);
    const res = await svc.request<Model>('POST', `${O}/solution/${S.split('/').pop() ?? ''}/maps/advanced/upgrade`, {
      body: EXPORT_25,
    });
    expect(res.status, res.text).toBe(200);
    expect(res.body.version).toBe('3.0');
    expect(res.body.blocks.map((b) => b.blockType)).toEqual(['Query', 'IfElse', 'Lookup', 'Update']);
    expect(Number((await svc.request('GET', M)).headers['total-count'])).toBe(count);
    // A 3.0 model comes back as it is.
    const again = await svc.request<Model>('POST', `${O}/solution/${S.split('/').pop() ?? ''}/maps/advanced/upgrade`, {
      body: res.body,
    });
    expect(again.body).toEqual(res.body);
    const bad = await svc.request<Problem>('POST', `${O}/solution/${S.split('/').pop() ?? ''}/maps/advanced/upgrade`, {
      body: { version: '1.0', blocks: [] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.code).toBe('MAP_UPGRADE_FAILED');
    expect(
      (
        await svc.request('POST', `${O}/solution/3f2504e0-4f89-41d3-9a0c-0305e82c3301/maps/advanced/upgrade`, {
          body: EXPORT_25,
        })
      ).status,
    ).toBe(404);
  });

  it('renames a Block: formulas and sources that read it follow, text literals do not; nothing is saved', async () => {
    const before = await stored();
    const res = await svc.request<Model>('POST', `${M}/${mapId}/renameblock?blockId=${g(1)}&newName=Contact`);
    expect(res.status, res.text).toBe(200);
    expect(blockNamed(res.body, 'Contact')?.blockId).toBe(g(1));
    expect(blockNamed(res.body, 'Find')?.lookupConditions?.[0]?.compareValue).toBe('Contact.id');
    expect(blockNamed(res.body, 'Branch')?.condition).toBe('ISNULL(Find.id) AND Contact.name <> "Q.name"');
    expect(blockNamed(res.body, 'Write')?.fieldMappings?.[0]?.targetFormula).toBe(
      'CONCATENATE(Contact.name, " Q.name ", Contact.email)',
    );
    expect(await stored()).toEqual(before);

    const lookup = await svc.request<Model>('POST', `${M}/${mapId}/renameblock?BlockId=${g(2)}&NewName=Match`);
    expect(lookup.status, lookup.text).toBe(200);
    expect(blockNamed(lookup.body, 'Each')?.source).toBe('Match');
    expect(blockNamed(lookup.body, 'Write')?.fieldMappings?.[1]?.targetFormula).toBe('Match.email');
    expect(blockNamed(lookup.body, 'Branch')?.condition).toBe('ISNULL(Match.id) AND q.name <> "Q.name"');
  });

  it('renames the Block of a model in the body; refuses a name in use, an invalid name, an unknown Block', async () => {
    const body = mapOf(conn);
    const res = await svc.request<Model>('POST', `${M}/${mapId}/renameblock?blockId=${g(4)}&newName=Create_Contact`, {
      body,
    });
    expect(res.status, res.text).toBe(200);
    expect(blockNamed(res.body, 'Create_Contact')).toBeDefined();

    const dup = await svc.request<Problem>('POST', `${M}/${mapId}/renameblock?blockId=${g(4)}&newName=find`);
    expect(dup.status).toBe(409);
    expect(dup.body.code).toBe('API_DUPLICATE_NAME');
    for (const bad of ['1st', 'has space', 'x'.repeat(51), 'a.b']) {
      const r = await svc.request<Problem>(
        'POST',
        `${M}/${mapId}/renameblock?blockId=${g(4)}&newName=${encodeURIComponent(bad)}`,
      );
      expect(r.status, bad).toBe(400);
      expect(r.headers['content-type']).toContain('application/problem+json');
    }
    expect(
      (await svc.request<Problem>('POST', `${M}/${mapId}/renameblock?blockId=${g(99)}&newName=Other`)).status,
    ).toBe(400);
    expect((await svc.request<Problem>('POST', `${M}/${mapId}/renameblock?blockId=${g(4)}`)).status).toBe(400);
    // The Block keeps its own name in another case.
    expect((await svc.request<Model>('POST', `${M}/${mapId}/renameblock?blockId=${g(4)}&newName=WRITE`)).status).toBe(
      200,
    );
  });

  it('refuses a model of version 2.0 or older with "upgrade it first with …/maps/advanced/upgrade"', async () => {
    for (const version of ['2.0', '1.5', 2]) {
      const res = await svc.request<Problem>('POST', `${M}/${mapId}/renameblock?blockId=${g(4)}&newName=Other`, {
        body: { ...mapOf(conn), version },
      });
      expect(res.status).toBe(400);
      expect(res.body.code).toBe('MAP_UPGRADE_REQUIRED');
      expect(res.body.detail).toContain('upgrade it first with …/maps/advanced/upgrade');
    }
    // The helper validate and previewquery call: a 2.5 export is upgraded, 2.0 refused.
    expect(requireCurrentModel(EXPORT_25).version).toBe('3.0');
    expect(() => requireCurrentModel({ ModelVersion: '2.0', Blocks: [] })).toThrow(
      expect.objectContaining({ code: 'MAP_UPGRADE_REQUIRED' }),
    );
  });

  it('changes an operation Block to a kind its Connection supports, keeping what the kind uses; nothing is saved', async () => {
    const before = await stored();
    const upd = await svc.request<Model>(
      'POST',
      `${M}/${mapId}/changeblocktype?blockId=${g(4)}&action=Update&operationName=Update`,
    );
    expect(upd.status, upd.text).toBe(200);
    expect(blockNamed(upd.body, 'Write')).toMatchObject({
      blockType: 'Update',
      action: 'Update',
      operationName: 'Update',
      fieldMappings: [{ targetField: 'name' }, { targetField: 'email' }],
    });

    const upsert = await svc.request<Model>(
      'POST',
      `${M}/${mapId}/changeblocktype?blockId=${g(4)}&action=insertupdate&operationName=Upsert`,
    );
    expect(blockNamed(upsert.body, 'Write')).toMatchObject({ blockType: 'Upsert', action: 'InsertUpdate' });
    const ui = await svc.request<Model>(
      'POST',
      `${M}/${mapId}/changeblocktype?blockId=${g(4)}&action=UpdateInsert&operationName=${encodeURIComponent('Update/Insert')}`,
    );
    expect(blockNamed(ui.body, 'Write')).toMatchObject({
      blockType: 'UpdateInsert',
      action: 'UpdateInsert',
      operationName: 'Update/Insert',
    });

    const del = await svc.request<Model>(
      'POST',
      `${M}/${mapId}/changeblocktype?blockId=${g(4)}&action=Delete&operationName=Delete`,
    );
    expect(blockNamed(del.body, 'Write')?.blockType).toBe('Delete');
    expect(blockNamed(del.body, 'Write')?.fieldMappings).toBeUndefined();

    const lookupToCreate = await svc.request<Model>(
      'POST',
      `${M}/${mapId}/changeblocktype?blockId=${g(2)}&action=Create&operationName=Create`,
    );
    expect(blockNamed(lookupToCreate.body, 'Find')).toMatchObject({
      blockType: 'Create',
      action: 'Create',
      lookupConditions: [{ fieldName: 'id' }],
    });
    expect(await stored()).toEqual(before);

    // On the model in the body: the Create Block becomes a Lookup (action Query).
    const body = mapOf(conn);
    const lookup = await svc.request<Model>(
      'POST',
      `${M}/${mapId}/changeblocktype?blockId=${g(4)}&action=Query&operationName=Query`,
      { body },
    );
    expect(lookup.status, lookup.text).toBe(200);
    expect(blockNamed(lookup.body, 'Write')).toMatchObject({ blockType: 'Lookup', action: 'Query' });
    expect(blockNamed(lookup.body, 'Write')?.fieldMappings).toBeUndefined();
  });

  it('refuses a pair the Connection does not list, an entity without the action, and a Block that is not an operation', async () => {
    const mismatch = await svc.request<Problem>(
      'POST',
      `${M}/${mapId}/changeblocktype?blockId=${g(4)}&action=Update&operationName=Delete`,
    );
    expect(mismatch.status).toBe(400);
    expect(mismatch.body.detail).toContain('Update/Insert');
    const view = mapOf(conn);
    const onView = {
      ...view,
      blocks: view.blocks.map((b) => (b.blockId === g(2) ? { ...b, entity: 'contacts_view' } : b)),
    };
    const noAction = await svc.request<Problem>(
      'POST',
      `${M}/${mapId}/changeblocktype?blockId=${g(2)}&action=Update&operationName=Update`,
      { body: onView },
    );
    expect(noAction.status).toBe(400);
    expect(noAction.body.code).toBe('MAP_ACTION_UNSUPPORTED');
    const starter = await svc.request<Problem>(
      'POST',
      `${M}/${mapId}/changeblocktype?blockId=${g(1)}&action=Create&operationName=Create`,
    );
    expect(starter.status).toBe(400);
    expect(starter.body.errors?.[0]?.path).toBe('querystring.blockId');
    const none = await svc.request<Problem>(
      'POST',
      `${M}/${mapId}/changeblocktype?blockId=${g(4)}&action=NativeQuery&operationName=${encodeURIComponent('Native Query')}`,
    );
    expect(none.status).toBe(400);
    expect(
      (
        await svc.request<Problem>(
          'POST',
          `${M}/${mapId}/changeblocktype?blockId=${g(4)}&action=Teleport&operationName=x`,
        )
      ).status,
    ).toBe(400);
    expect(
      (await svc.request<Problem>('POST', `${M}/${mapId}/changeblocktype?blockId=${g(4)}&action=Update`)).status,
    ).toBe(400);
    const noConn = {
      ...view,
      blocks: view.blocks.map((b) => (b.blockId === g(2) ? { ...b, connectionId: 'no-such-connection' } : b)),
    };
    const missing = await svc.request<Problem>(
      'POST',
      `${M}/${mapId}/changeblocktype?blockId=${g(2)}&action=Update&operationName=Update`,
      { body: noConn },
    );
    expect(missing.status).toBe(400);
    expect(missing.body.code).toBe('MAP_CONNECTION_NOT_FOUND');
    expect(
      (
        await svc.request<Problem>(
          'POST',
          `${M}/999999/changeblocktype?blockId=${g(4)}&action=Update&operationName=Update`,
        )
      ).status,
    ).toBe(404);
  });
});
