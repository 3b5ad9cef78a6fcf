import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ferry, install, until, untilStatus, type ServiceUnderTest } from '../agent/harness.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  PEOPLE_CSV,
  runToEnd,
  SQLITE,
  sqliteTarget,
  startWithAgent,
  stopAll,
  type RunningAgent,
  type SqliteTarget,
} from './harness.js';
import { BUILT_IN_CONNECTORS } from '../../helpers/built-in-connectors.js';

/**
 * A by-reference copy run by a real Agent (docs/solutions.md "Copies by reference"): the source's
 * Map, prepared in the head office, copied by reference into a customer Organization whose own
 * Agent runs it, without a prepare, with the customer's Connections: the rows land in the
 * customer's database, none in the head office's.
 */
describe('a by-reference copy runs the shared Map on its own Agent and Connections', () => {
  let sut: ServiceUnderTest;
  let agent: RunningAgent;
  let customer: ServiceUnderTest;
  let customerAgent: string;
  let headOffice: SqliteTarget;
  let customerDb: SqliteTarget;
  let folder: string;

  beforeAll(async () => {
    ({ sut, agent, folder } = await startWithAgent({ csv: { people: PEOPLE_CSV } }));
    const org = await sut.request<{ id: number }>('POST', '/v1/orgs', {
      body: {
        name: 'Customer A',
        parentId: sut.orgId,
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
    expect(org.status, JSON.stringify(org.body)).toBe(201);
    // The same Service, seen from the customer's Organization.
    customer = { ...sut, orgId: org.body.id };
    const home = path.join(sut.dataDir, 'customer-agent');
    customerAgent = (await install(customer, home)).agentId;
    ferry(['agent', 'run', '--home', home]);
    await untilStatus(customer, customerAgent, 'Running');
    await until(
      "the connectors on the customer's Agent",
      async () => {
        const res = await customer.request<{ installedConnectors: unknown[] }>(
          'GET',
          `/v1/orgs/${customer.orgId}/agents/${customerAgent}`,
        );
        return res.body.installedConnectors.length === BUILT_IN_CONNECTORS ? true : undefined;
      },
      90_000,
    );
    headOffice = sqliteTarget(path.join(sut.dataDir, 'head-office.db'), ['people']);
    customerDb = sqliteTarget(path.join(sut.dataDir, 'customer.db'), ['people']);
  }, 240_000);
  afterAll(async () => stopAll(sut));

  it(
    'lands the rows in the customer database on the first start, no prepare in between',
    { timeout: 180_000 },
    async () => {
      const csv = await createConnection(sut, 'People files', CSV, { folder });
      const out = await createConnection(sut, 'People DB', SQLITE, { file: headOffice.file });
      await createConnection(customer, 'People files', CSV, { folder });
      await createConnection(customer, 'people db', SQLITE, { file: customerDb.file });
      const source = await createSolution(
        sut,
        agent.agentId,
        'People sync',
        [copyMap({ n: 1, csvId: csv, entity: 'people', targetId: out, table: 'people' })],
        { prepare: true },
      );

      const S = `/v1/orgs/${sut.orgId}/solutions/${source.id}`;
      const job = await sut.request<{ id: string; clonedSolutionId: string }>(
        'POST',
        `${S}/cloneAsync?destOrgId=${customer.orgId}&destAgentId=${customerAgent}&byReference=true`,
      );
      expect(job.status, JSON.stringify(job.body)).toBe(200);
      const done = await until(
        'the clone job',
        async () => {
          const res = await sut.request<{ isComplete: boolean; hasError: boolean; message: string }>(
            'GET',
            `${S}/cloneAsync/${job.body.id}`,
          );
          return res.body.isComplete ? res.body : undefined;
        },
        30_000,
      );
      expect(done, done.message).toMatchObject({ hasError: false });

      const run = await runToEnd(customer, job.body.clonedSolutionId);
      expect(run, JSON.stringify(run)).toMatchObject({ result: 'CompletedSuccessfully', recordsProcessed: 3 });
      expect(customerDb.count('people')).toBe(3);
      expect(headOffice.count('people')).toBe(0);
      // The source no longer runs: its copies do.
      expect((await sut.request('POST', `${S}/start`)).status).toBe(409);
    },
  );
});
