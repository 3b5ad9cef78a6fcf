import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerTestAgent, type TestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

interface Summary {
  connectionID: string;
  connectionName: string;
  connectorID: string;
  connectorName: string;
  connectorLogoUrl: string | null;
}

const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const UNKNOWN = '3f2504e0-4f89-41d3-9a0c-0305e82c3301';

describe.each(STORE_TARGETS)('GET S/connections on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let S: string;
  const conns: Record<string, string> = {};

  const create = async (path: string, body: unknown): Promise<{ id: string }> => {
    const res = await svc.request<{ id: string }>('POST', path, { body });
    expect(res.status, res.text).toBe(201);
    return res.body;
  };
  const summaries = async (solutionId: string) => {
    const res = await svc.request<Summary[]>('GET', `${S}/${solutionId}/connections`);
    expect(res.status, res.text).toBe(200);
    return res.body;
  };

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    S = `/v1/orgs/${svc.orgId}/solutions`;
    agent = await registerTestAgent(svc, { name: 'Summaries agent' });
    for (const name of ['Orders CSV', 'Warehouse', 'Unused']) {
      conns[name] = (
        await create(`/v1/orgs/${svc.orgId}/connections`, { name, connectorId: CSV, color: '#FF00FF00' })
      ).id;
    }
  });
  afterAll(async () => svc?.close());

  it("answers a Replication's source and target with their Connector", async () => {
    const rs = await create(S, {
      name: 'Copy',
      solutionType: 'Replication',
      agentId: agent.agentId,
      connectionIdForSource: conns['Orders CSV'],
      connectionIdForTarget: conns.Warehouse,
      replicationSettings: { selectionType: 'Selected', entities: ['orders'] },
    });
    expect(await summaries(rs.id)).toEqual([
      {
        connectionID: conns['Orders CSV'],
        connectionName: 'Orders CSV',
        connectorID: CSV,
        connectorName: 'CSV',
        connectorLogoUrl: null,
      },
      {
        connectionID: conns.Warehouse,
        connectionName: 'Warehouse',
        connectorID: CSV,
        connectorName: 'CSV',
        connectorLogoUrl: null,
      },
    ]);
  });

  it("answers an Integration's Map Connections each once, matched in any case; none before it has Maps", async () => {
    const is = await create(S, { name: 'Integrate', solutionType: 'Integration', agentId: agent.agentId });
    expect(await summaries(is.id)).toEqual([]);
    const source = conns['Orders CSV']?.toUpperCase();
    await create(`${S}/${is.id}/maps/advanced`, {
      version: '3.0',
      name: 'Orders to warehouse',
      blocks: [
        {
          blockId: '11111111-1111-4111-8111-000000000001',
          name: 'Q',
          blockType: 'Query',
          action: 'Query',
          connectionId: source,
          entity: 'orders',
        },
        {
          blockId: '11111111-1111-4111-8111-000000000002',
          name: 'C',
          blockType: 'Create',
          action: 'Create',
          connectionId: conns.Warehouse,
          entity: 'orders',
          fieldMappings: [{ targetField: 'id', targetFormula: 'Q.id' }],
        },
        {
          blockId: '11111111-1111-4111-8111-000000000003',
          name: 'C2',
          blockType: 'Create',
          action: 'Create',
          connectionId: conns.Warehouse,
          entity: 'lines',
          fieldMappings: [{ targetField: 'id', targetFormula: 'Q.id' }],
        },
      ],
    });
    expect((await summaries(is.id)).map((s) => s.connectionName)).toEqual(['Orders CSV', 'Warehouse']);
  });

  it('answers 404 for a Solution that is not there', async () => {
    const res = await svc.request<{ code: string }>('GET', `${S}/${UNKNOWN}/connections`);
    expect(res.status).toBe(404);
  });
});
