import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { registerTestAgent } from '../helpers/agent-client.js';
import { checkOutputs, docExamples } from '../helpers/doc-examples.js';
import { ADMIN, startService, type TestService } from '../helpers/service.js';

const exec = promisify(execFile);
const DOC = path.resolve(import.meta.dirname, '../../docs/solutions.md');

/**
 * The curl example of docs/solutions.md "Copies" (`<!-- example: clone -->`) runs against a real
 * Service: it copies a Solution into a child Organization, polls the job and prints its end; the
 * copy is then in the child Organization under the same name.
 */
describe('docs/solutions.md: the copy example runs against a Service', () => {
  let svc: TestService;
  let child: number;
  let childAgent: string;
  let solution: string;

  beforeAll(async () => {
    svc = await startService({ name: 'sqlite' }, { cloudAgents: 'off' });
    const agent = await registerTestAgent(svc, { name: 'Head office agent' });
    const org = await svc.request<{ id: number }>('POST', '/v1/orgs', {
      body: {
        name: 'Customer A',
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
    expect(org.status, org.text).toBe(201);
    child = org.body.id;
    childAgent = (await registerTestAgent(svc, { orgId: child, name: 'Customer A agent' })).agentId;
    const sol = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/solutions`, {
      body: { name: 'Orders to CRM', solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(sol.status, sol.text).toBe(201);
    solution = sol.body.id;
  }, 60_000);
  afterAll(async () => svc?.close());

  it('prints what the document says, and the copy is in the child Organization', { timeout: 60_000 }, async () => {
    const blocks = docExamples(DOC, 'clone');
    expect(blocks.length).toBe(1);
    const script = blocks.join('\n\n');
    const { stdout } = await exec('bash', ['-eo', 'pipefail', '-c', script], {
      timeout: 30_000,
      env: {
        ...process.env,
        FERRY_URL: svc.url,
        AUTH: `${ADMIN.email}:${ADMIN.password}`,
        ORG: String(svc.orgId),
        SOLUTION: solution,
        CHILD: String(child),
        CHILD_AGENT: childAgent,
      },
    });
    checkOutputs(script, stdout, (message) => expect.fail(message));
    const copies = await svc.request<Array<{ name: string; agentId: string }>>('GET', `/v1/orgs/${child}/solutions`);
    expect(copies.body.map((s) => [s.name, s.agentId])).toEqual([['Orders to CRM', childAgent]]);
  });
});
