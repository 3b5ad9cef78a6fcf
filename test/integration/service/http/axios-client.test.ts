/**
 * A public client of the original service, replayed as it sends its requests: the Azure DevOps
 * task (TypeScript, axios 0.21.4). Each call carries axios's default headers — `Accept:
 * application/json, text/plain, *\/*`, `User-Agent: axios/0.21.4`, Basic credentials — and a
 * body-less POST goes as `Content-Type: application/x-www-form-urlencoded` with `Content-Length: 0`;
 * a body goes as `application/json;charset=utf-8`. The client creates a Replication Solution,
 * edits its entities by sending the read model back, prepares and starts it, tests a Connection on
 * the Agent named by the Connection's `lastTestedAgentId`, reading the test's ID as `id`, and pages
 * the entity names until an empty page.
 */
import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  connectPlayedAgent,
  OpenChannels,
  until,
  type Incoming,
  type TestAgent,
  type TestChannel,
} from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';
import { metadataAction, metadataField } from '../../../helpers/metadata-fixtures.js';

const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
const ENTITIES = ['accounts', 'contacts', 'customers', 'invoices', 'orders'];

const QUERY = metadataAction('Query', 'Starter');
const CREATE = metadataAction('Create', 'Operation');
/** What the played Agent answers loadMetadata with, for both Connections. */
const METADATA = {
  actions: [QUERY, CREATE],
  entities: ENTITIES.map((name) => ({
    id: name,
    name,
    fullName: name,
    originalName: name,
    description: 'table',
    isHidden: false,
    actions: [QUERY, CREATE],
    fields: [metadataField('id', 1, true), metadataField('name', 2, false)],
    relationships: [],
  })),
};

interface AxiosResponse<T> {
  status: number;
  data: T;
}

/**
 * The requests axios 0.21.4's Node adapter makes: its default headers, `data` serialised as JSON
 * (`application/json;charset=utf-8`), and a POST or PUT without data sent with the
 * `application/x-www-form-urlencoded` default and no bytes.
 */
function axiosOf(svc: TestService): <T>(method: string, path: string, data?: unknown) => Promise<AxiosResponse<T>> {
  const auth = `Basic ${Buffer.from(`${svc.admin.email}:${svc.admin.password}`).toString('base64')}`;
  return <T>(method: string, path: string, data?: unknown) =>
    new Promise<AxiosResponse<T>>((resolve, reject) => {
      const headers: Record<string, string> = {
        Accept: 'application/json, text/plain, */*',
        'User-Agent': 'axios/0.21.4',
        Authorization: auth,
      };
      let payload: Buffer | undefined;
      if (method === 'POST' || method === 'PUT' || method === 'PATCH') {
        headers['Content-Type'] = 'application/x-www-form-urlencoded';
        if (data !== undefined) {
          headers['Content-Type'] = 'application/json;charset=utf-8';
          payload = Buffer.from(JSON.stringify(data), 'utf8');
        }
        headers['Content-Length'] = String(payload?.length ?? 0);
      }
      const req = http.request(new URL(path, svc.url), { method, headers }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          // axios parses any text that is JSON, whatever the content type.
          let body: unknown = text;
          try {
            body = text ? JSON.parse(text) : text;
          } catch {
            // not JSON: kept as text
          }
          resolve({ status: res.statusCode ?? 0, data: body as T });
        });
        res.on('error', reject);
      });
      req.on('error', reject);
      req.end(payload);
    });
}

interface Solution {
  id: string;
  status: string;
  replicationSettings: { selectionType: string; entities: string[] } | null;
  entities: string[];
  [key: string]: unknown;
}

describe.each(STORE_TARGETS)('the axios 0.21 client of the original service, unchanged, on $name', (target) => {
  let svc: TestService;
  let agent: TestAgent;
  let ch: TestChannel;
  const channels = new OpenChannels();
  const commands: Incoming[] = [];

  beforeAll(async () => {
    svc = await startService(target, { cloudAgents: 'off' });
    ({ agent, ch } = await connectPlayedAgent(svc, channels, {
      name: 'Build agent',
      results: { loadMetadata: METADATA, testConnection: { ok: true }, startSolution: { started: true } },
    }));
    const answer = ch.autoReply;
    ch.autoReply = (cmd) => {
      commands.push(cmd);
      return answer?.(cmd);
    };
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
  });

  it(
    'creates, edits by read-modify-write, prepares and starts a Solution, tests a Connection and pages entity names',
    { timeout: 60_000 },
    async () => {
      const axios = axiosOf(svc);
      const O = `/v1/orgs/${svc.orgId}`;
      // Connections made beforehand, as a person would in the UI.
      const connection = async (name: string) =>
        (await axios<{ id: string }>('POST', `${O}/connections`, { name, connectorId: SQLITE, color: '#FF00FF00' }))
          .data.id;
      const source = await connection('Source DB');
      const target = await connection('Target DB');

      const created = await axios<Solution>('POST', `${O}/solutions`, {
        name: 'Nightly copy',
        solutionType: 'Replication',
        agentId: agent.agentId,
        connectionIdForSource: source,
        connectionIdForTarget: target,
        replicationSettings: { selectionType: 'Selected', entities: ['customers'] },
      });
      expect(created.status).toBe(201);
      const S = `${O}/solutions/${created.data.id}`;

      // Read, change replicationSettings.entities, send the whole model back (`entities` echoed as read).
      const read = await axios<Solution>('GET', S);
      expect(read.data.entities).toEqual(['customers']);
      const edited = await axios<Solution>('PUT', S, {
        ...read.data,
        replicationSettings: { ...read.data.replicationSettings, entities: ['customers', 'orders'] },
      });
      expect(edited.status).toBe(200);
      expect(edited.data.replicationSettings).toEqual({ selectionType: 'Selected', entities: ['customers', 'orders'] });

      const prepare = await axios<{ id: string }>('POST', `${S}/prepare`);
      expect(prepare.status).toBe(200);
      const job = await until(async () => {
        const r = await axios<{ isComplete: boolean; hasError: boolean; message: string }>(
          'GET',
          `${S}/prepare/${prepare.data.id}`,
        );
        return r.data.isComplete ? r.data : undefined;
      }, 'the prepare');
      expect(job).toMatchObject({ hasError: false });

      const start = await axios<{ started: boolean; runId: string }>('POST', `${S}/start`);
      expect(start.status).toBe(200);
      expect(start.data.started).toBe(true);
      // The edit made the Solution prepare itself too: when that prepare is still running, the
      // start is answered at once and the run goes to the Agent as soon as the prepare ends.
      const sent = await until(
        async () => commands.find((c) => c['type'] === 'startSolution'),
        'the startSolution command',
      );
      expect(sent).toMatchObject({
        solutionId: created.data.id,
        runId: start.data.runId,
      });

      // The prepare loaded the metadata through the Solution's Agent: the Connection names it.
      const conn = await axios<{ lastTestedAgentId: string | null }>('GET', `${O}/connections/${source}`);
      expect(conn.data.lastTestedAgentId).toBe(agent.agentId);
      const agentId = conn.data.lastTestedAgentId ?? 'undefined';
      const test = await axios<{ id: string }>('POST', `${O}/connections/${source}/test?agentId=${agentId}`);
      expect(test.status).toBe(200);
      const tested = await until(async () => {
        const r = await axios<{ status: string; reply: string }>('GET', `${O}/connections/test/${test.data.id}`);
        return r.data.status === 'Completed' ? r.data : undefined;
      }, 'the test');
      expect(tested.reply).toBe('SUCCESS');

      // Pages until an empty page, as the client does.
      const names: string[] = [];
      for (let offset = 0, calls = 0; ; offset += 2, calls++) {
        expect(calls).toBeLessThan(10);
        const page = await axios<string[]>(
          'GET',
          `${O}/connections/${source}/entitynames?agentId=${agentId}&offset=${offset}&limit=2`,
        );
        expect(page.status).toBe(200);
        if (page.data.length === 0) break;
        names.push(...page.data);
      }
      expect(names).toEqual(ENTITIES);
    },
  );
});
