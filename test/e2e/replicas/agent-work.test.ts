/**
 * One real Agent process (`ferry agent run`) connected through HAProxy to three Service replicas on
 * one PostgreSQL, doing real work: every kind of command the REST API sends to an Agent is sent
 * straight to a replica that does not hold the Agent's channel (so it crosses replicas through
 * `agent_commands`) and answers as on one Service; then the replica that holds the channel is
 * killed with SIGKILL in the middle of a 100,000-row copy into PostgreSQL, the Agent is back
 * through another replica within the lease bound, and the run ends complete, each row once.
 *
 *   test ──▶ replica B ──agent_commands──▶ replica A ══channel, through HAProxy══ Agent ──▶ CSV, PostgreSQL
 *                 ▲                                                             │
 *                 └─────────── History, statuses: reports through A ◀──────────┘
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { encryptProperty } from '../../../service/connections/properties-crypto.js';
import { createTestDatabase, STORE_TARGETS } from '../../helpers/stores.js';
import { unzip } from '../../helpers/unzip.js';
import { killAll, until, untilStatus, workerPids, type ServiceUnderTest } from '../agent/harness.js';
import { messageSolution } from '../../bench/solutions/service.js';
import {
  copyMap,
  createConnection,
  createSolution,
  CSV,
  finished,
  ID_NAME,
  idNameCsv,
  POSTGRES,
  prepared,
  SQLITE,
  sqliteTarget,
  startRun,
  type Execution,
} from '../solutions/harness.js';
import { historyOf, runAgents, untilReady, type AgentUnderTest } from '../solutions/faults-helpers.js';
import { clusterUnderTest, HAS_HAPROXY, holderOf, replicaIndexOf, startCluster, type Cluster } from './cluster.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');
const REASON = !HAS_PG
  ? 'no PostgreSQL (FERRY_TEST_DATABASE_URL)'
  : 'HAProxy is not installed (apt-get install haproxy)';

if (process.env['CI'] === 'true' && (!HAS_PG || !HAS_HAPROXY)) {
  describe('a real Agent on replicas behind HAProxy', () => {
    it('has what it needs', () => {
      throw new Error(`CI must run the replica tests: ${REASON}`);
    });
  });
} else if (!HAS_PG || !HAS_HAPROXY) {
  describe.skip(`a real Agent on replicas behind HAProxy (skipped: ${REASON})`, () => undefined);
}

/** Rows of the big CSV file: the stopped run and the run whose replica is killed. */
const ROWS = 100_000;
const BATCH = 1_000;
/** Rows of the small one, copied to its end. */
const SMALL = 1_000;

interface HistoryExecution extends Execution {
  isReprocessJob: boolean;
  reprocessRecordsRemaining: number;
  sourceDataLocal: boolean;
}

/** The md5 of `id,name` lines in id order, joined by newlines: what {@link tableSums} computes in SQL. */
function csvDigest(csv: string): string {
  return createHash('md5').update(csv.trimEnd().split('\n').slice(1).join('\n')).digest('hex');
}

describe.runIf(HAS_PG && HAS_HAPROXY)(
  'a real Agent process on three Service replicas behind HAProxy',
  () => {
    let cluster: Cluster;
    /** The load balancer, as the one-Service helpers take a Service. */
    let lb: ServiceUnderTest;
    let agent: AgentUnderTest;
    let target: { url: string; drop: () => Promise<void> };
    let client: pg.Client;
    let folder: string;
    let csvId: string;
    let pgId: string;
    const big = idNameCsv(ROWS);
    const small = idNameCsv(SMALL, 'small');
    /** The Solution run to its end, and its run's ID: its logs are asked for later. */
    const smallCopy = { id: '', S: '', runId: '' };

    beforeAll(async () => {
      cluster = await startCluster(3);
      lb = clusterUnderTest(cluster);
      target = await createTestDatabase();
      client = new pg.Client({ connectionString: target.url });
      await client.connect();
      // Each write into `stopped` and `moved` waits 0.1 s (a statement trigger): those runs last
      // ROWS / BATCH × 0.1 s at least, long enough to stop one and to kill a replica under the other.
      await client.query(`CREATE TABLE copied (id integer PRIMARY KEY, name text NOT NULL);
        CREATE TABLE stopped (id integer PRIMARY KEY, name text NOT NULL);
        CREATE TABLE moved (id integer PRIMARY KEY, name text NOT NULL);
        CREATE TABLE aged (id integer PRIMARY KEY, name text NOT NULL,
          age integer CONSTRAINT aged_age CHECK (age < 100));
        CREATE FUNCTION slow_write() RETURNS trigger LANGUAGE plpgsql
          AS $$ BEGIN PERFORM pg_sleep(0.1); RETURN NULL; END $$;
        CREATE TRIGGER slow_write AFTER INSERT ON stopped FOR EACH STATEMENT EXECUTE FUNCTION slow_write();
        CREATE TRIGGER slow_write AFTER INSERT ON moved FOR EACH STATEMENT EXECUTE FUNCTION slow_write();`);
      folder = path.join(cluster.dir, 'csv');
      fs.mkdirSync(folder);
      fs.writeFileSync(path.join(folder, 'big.csv'), big);
      fs.writeFileSync(path.join(folder, 'small.csv'), small);
      // Ages of 100 and more are refused by the CHECK constraint of `aged`.
      fs.writeFileSync(
        path.join(folder, 'ages.csv'),
        'id,name,age\n1,ada,20\n2,alan,30\n3,grace,150\n4,kid,40\n5,linus,200\n',
      );
      fs.writeFileSync(
        path.join(folder, 'schema.json'),
        JSON.stringify({
          entities: {
            'big.csv': { fields: ID_NAME },
            'small.csv': { fields: ID_NAME },
            'ages.csv': { fields: [...ID_NAME, { name: 'age', type: 'integer' }] },
          },
        }),
      );
      // Installed with the load balancer's URL: its channel, reports, uploads and downloads go through HAProxy.
      agent = (await runAgents(lb, 1)).agents[0] as AgentUnderTest;
      csvId = await createConnection(lb, 'Files', CSV, { folder });
      pgId = await createConnection(lb, 'Warehouse', POSTGRES, { connectionString: target.url, schemas: 'public' });
    }, 300_000);

    afterAll(async () => {
      killAll();
      await client?.end();
      await cluster?.dispose();
      await target?.drop();
    });

    /** The replica holding the Agent's channel now, and one that does not, as a Service to call straight. */
    const replicas = async (): Promise<{ holder: number; other: number; via: ServiceUnderTest }> => {
      const holder = await until('a running replica holding the channel', async () => {
        const id = await holderOf(cluster, agent.agentId);
        return id === undefined ? undefined : replicaIndexOf(cluster, id);
      });
      const other = (holder + 1) % cluster.replicas.length;
      return { holder, other, via: clusterUnderTest(cluster, other) };
    };

    /** count, count(distinct id) and the md5 of `id,name` lines in id order, of a target table. */
    const tableSums = async (table: string): Promise<{ rows: number; ids: number; md5: string | null }> => {
      const { rows } = await client.query<{ n: string; d: string; h: string | null }>(
        `SELECT count(*) AS n, count(DISTINCT id) AS d,
                md5(string_agg(id::text || ',' || name, E'\\n' ORDER BY id)) AS h FROM ${table}`,
      );
      return { rows: Number(rows[0]?.n), ids: Number(rows[0]?.d), md5: rows[0]?.h ?? null };
    };

    it('tests Connections through a replica that does not hold the channel', { timeout: 120_000 }, async () => {
      const { via } = await replicas();
      const C = `/v1/orgs/${via.orgId}/connections`;
      const result = async (commandId: string) =>
        until('the test result', async () => {
          const res = await via.request<{ status: string; reply: string; name: string }>(
            'GET',
            `${C}/test/${commandId}`,
          );
          return res.body.status === 'Completed' ? res.body : undefined;
        });
      const ok = await via.request<{ commandId: string }>('POST', `${C}/${csvId}/test?agentId=${agent.agentId}`);
      expect(ok.status, JSON.stringify(ok.body)).toBe(200);
      expect(await result(ok.body.commandId)).toMatchObject({ name: 'Files', reply: 'SUCCESS' });
      const tested = await via.request<{ commandId: string }>('POST', `${C}/${pgId}/test?agentId=${agent.agentId}`);
      expect((await result(tested.body.commandId)).reply).toBe('SUCCESS');
      // The Agent's own failure comes back across replicas as on one Service: in the reply.
      const token = (await via.request<{ apiCryptoToken: string }>('GET', `/v1/orgs/${via.orgId}/SecuritySettings`))
        .body.apiCryptoToken;
      const bad = await via.request<{ commandId: string }>('POST', `${C}/test?agentId=${agent.agentId}`, {
        body: {
          name: 'Missing',
          connectorId: CSV,
          color: '#FF112233',
          properties: [{ key: 'folder', value: encryptProperty(path.join(folder, 'nope'), token) }],
        },
      });
      expect(bad.status, JSON.stringify(bad.body)).toBe(200);
      const failed = await result(bad.body.commandId);
      expect(failed.reply).not.toBe('SUCCESS');
      expect(failed.reply).toContain('nope');
    });

    it('loads metadata through a replica that does not hold the channel', { timeout: 120_000 }, async () => {
      const { via } = await replicas();
      const M = `/v1/orgs/${via.orgId}/connections/${pgId}`;
      // SPEC's POLL rule: 404 while the Agent loads, then the data.
      const first = await via.request<{ detail: string }>('GET', `${M}/entitynames?agentId=${agent.agentId}`);
      expect(first.status, JSON.stringify(first.body)).toBe(404);
      const names = await until('the entity names', async () => {
        const res = await via.request<string[]>('GET', `${M}/entitynames?agentId=${agent.agentId}`);
        return res.status === 200 ? res.body : undefined;
      });
      expect([...names].sort()).toEqual(['aged', 'copied', 'moved', 'stopped']);
      const fields = await via.request<Array<{ fullName: string; isPrimaryKey: boolean }>>(
        'GET',
        `${M}/entities/aged/fields`,
      );
      expect(fields.status).toBe(200);
      expect(fields.body.map((f) => f.fullName)).toEqual(['id', 'name', 'age']);
      expect(fields.body.find((f) => f.fullName === 'id')).toMatchObject({ isPrimaryKey: true });
    });

    it(
      'prepares and starts a Solution through a replica that does not hold the channel; it runs to its end',
      { timeout: 180_000 },
      async () => {
        const { via } = await replicas();
        const map = copyMap({ n: 1, csvId, entity: 'small', targetId: pgId, table: 'copied' });
        const sol = await createSolution(via, agent.agentId, 'Small copy', [map], { prepare: true });
        const runId = await startRun(via, sol.id);
        Object.assign(smallCopy, { id: sol.id, S: sol.S, runId });
        const done = await finished(via, sol.id, runId);
        expect(done, JSON.stringify(done)).toMatchObject({
          result: 'CompletedSuccessfully',
          recordsProcessed: SMALL,
          recordsFailed: 0,
        });
        expect(await tableSums('copied')).toEqual({ rows: SMALL, ids: SMALL, md5: csvDigest(small) });
      },
    );

    it(
      "takes an Event Solution's messages and answers its requests on every replica and through HAProxy, the Agent reached across replicas",
      { timeout: 180_000 },
      async () => {
        const { via } = await replicas();
        const events = sqliteTarget(path.join(cluster.dir, 'events.db'), ['orders'], { primaryKey: true });
        const dbId = await createConnection(via, 'Events DB', SQLITE, { file: events.file });
        const O = `/v1/orgs/${via.orgId}`;
        const made = await messageSolution(via, {
          name: 'Orders in',
          mapName: 'Order in',
          agentId: agent.agentId,
          connectionId: dbId,
          entity: 'orders',
          fields: ['id', 'name'],
        });
        const { token } = made;
        // 100 orders to each replica straight, and 100 through the load balancer, 20 in a POST.
        const bases = [...cluster.replicas.map((r) => `http://127.0.0.1:${r.port}`), cluster.url];
        for (const [b, base] of bases.entries()) {
          for (let k = 0; k < 5; k++) {
            const res = await fetch(`${base}${O}/messages/${made.mapId}?accesstoken=${token}`, {
              method: 'POST',
              headers: { 'content-type': 'application/json' },
              body: JSON.stringify(
                Array.from({ length: 20 }, (_, i) => ({ id: b * 100 + k * 20 + i + 1, name: `via ${b}` })),
              ),
            });
            expect(res.status, await res.text()).toBe(200);
          }
        }
        await until(
          '400 orders in the target',
          async () => (events.count('orders') === 400 ? true : undefined),
          90_000,
        );
        await until('the queue empty', async () => {
          const [row] = await cluster.query<{ n: string }>('SELECT count(*) AS n FROM event_messages');
          return Number(row?.n) === 0 ? true : undefined;
        });

        // A request/reply Map of the same Solution: a request held by each replica gets the reply
        // the Agent sends through the replica that holds its channel.
        const asked = await via.request<{ id: number }>('POST', `${O}/solutions/${made.solutionId}/maps/advanced`, {
          body: {
            version: '3.0',
            name: 'Order status',
            mapType: 'IntegrationServicesAdvancedRequestResponseMap',
            blocks: [
              {
                blockId: '88888888-2222-4111-8111-000000000001',
                name: 'Req',
                blockType: 'WaitForRequest',
                action: 'None',
                fields: ['id'],
              },
              {
                blockId: '88888888-2222-4111-8111-000000000002',
                name: 'Answer',
                blockType: 'BuildReply',
                action: 'None',
                fieldMappings: [
                  { targetField: 'id', targetFormula: 'Req.id' },
                  { targetField: 'status', targetFormula: '"received"' },
                ],
              },
              {
                blockId: '88888888-2222-4111-8111-000000000003',
                name: 'Send',
                blockType: 'SendReply',
                action: 'None',
                source: 'Answer',
              },
            ],
          },
        });
        expect(asked.status, JSON.stringify(asked.body)).toBe(201);
        const again = await prepared(via, made.solutionId);
        expect(again, again.message).toMatchObject({ hasError: false, mapErrorModels: [] });
        for (const [b, base] of bases.entries()) {
          const res = await fetch(`${base}${O}/requests/${asked.body.id}?accesstoken=${token}`, {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ id: b + 1 }),
          });
          expect(res.status, `via ${base}`).toBe(200);
          expect(await res.json()).toEqual({ id: b + 1, status: 'received' });
        }
        // The SQLite Connector is uninstalled below: nothing may use it then. A request's run may
        // still be reporting its end (the Solution in progress: 409), so the delete is repeated.
        await until('the Event Solution deleted', async () => {
          const res = await via.request('DELETE', `${O}/solutions/${made.solutionId}`);
          return res.status === 204 ? true : undefined;
        });
        expect((await via.request('DELETE', `${O}/connections/${dbId}`)).status).toBe(204);
      },
    );

    it(
      'monitors and stops a running Solution through a replica that does not hold the channel',
      { timeout: 180_000 },
      async () => {
        const { via } = await replicas();
        const map = copyMap({ n: 2, csvId, entity: 'big', targetId: pgId, table: 'stopped', batchSize: BATCH });
        const sol = await createSolution(via, agent.agentId, 'Stopped copy', [map], { prepare: true });
        const runId = await startRun(via, sol.id);
        const monitor = await until(
          'records processed during the run',
          async () => {
            const m = await via.request<{ running: boolean; runId: string | null; recordsProcessed: number }>(
              'POST',
              `${sol.S}/startmonitor`,
            );
            return m.body.running && m.body.recordsProcessed > 0 ? m.body : undefined;
          },
          120_000,
        );
        expect(monitor.runId).toBe(runId);
        const stop = await via.request<{ stopping: boolean }>('POST', `${sol.S}/stop`);
        expect(stop.status, JSON.stringify(stop.body)).toBe(200);
        expect(stop.body.stopping).toBe(true);
        const run = await finished(via, sol.id, runId);
        expect(run.recordsProcessed).toBeGreaterThan(0);
        expect(run.recordsProcessed).toBeLessThan(ROWS);
        // As on one Service: a copy cut short by a stop is not a success.
        expect(run.result).toBe('FatalError');
        expect(run.details).toMatch(/^RUN_STOPPED: /);
        expect((await tableSums('stopped')).rows).toBe(run.recordsProcessed);
        expect((await via.request('POST', `${sol.S}/stopmonitor`)).status).toBe(204);
      },
    );

    it(
      'reprocesses failed records kept on the Agent through a replica that does not hold the channel',
      { timeout: 180_000 },
      async () => {
        const { via } = await replicas();
        const settings = await via.request('PUT', `/v1/orgs/${via.orgId}/SecuritySettings`, {
          body: {
            captureOnFailedRecordsForReprocessing: true,
            captureDuringCloudAppRuns: true,
            captureDuringLocalAgentAppRuns: true,
            isSourceDataLocal: true,
          },
        });
        expect(settings.status).toBe(200);
        const map = copyMap({
          n: 3,
          csvId,
          entity: 'ages',
          targetId: pgId,
          table: 'aged',
          batchSize: 2,
          fields: { age: 'Q.age' },
        });
        const sol = await createSolution(via, agent.agentId, 'Ages', [map], { prepare: true });
        const ran = await finished(via, sol.id, await startRun(via, sol.id));
        const first = (await via.request<HistoryExecution>('GET', `${sol.S}/history/${ran.id}`)).body;
        expect(first).toMatchObject({
          result: 'CompletedWithErrors',
          recordsProcessed: 5,
          recordsFailed: 2,
          sourceDataLocal: true,
          reprocessRecordsRemaining: 2,
        });
        const marked = await via.request<{ changed: number }>('POST', `${sol.S}/history/${first.id}/mark?mark=true`);
        expect(marked.body.changed).toBe(2);
        await client.query('ALTER TABLE aged DROP CONSTRAINT aged_age');
        const answer = await via.request<{ runId: string | null; started: boolean; records: number }>(
          'POST',
          `${sol.S}/history/${first.id}/reprocess`,
        );
        expect(answer.status, JSON.stringify(answer.body)).toBe(200);
        expect(answer.body).toMatchObject({ started: true, records: 2 });
        const job = await finished(via, sol.id, answer.body.runId ?? '');
        expect((await via.request<HistoryExecution>('GET', `${sol.S}/history/${job.id}`)).body).toMatchObject({
          result: 'CompletedSuccessfully',
          recordsProcessed: 2,
          recordsFailed: 0,
          isReprocessJob: true,
        });
        const { rows } = await client.query<{ id: number; age: number }>('SELECT id, age FROM aged ORDER BY id');
        expect(rows.map((r) => [r.id, r.age])).toEqual([
          [1, 20],
          [2, 30],
          [3, 150],
          [4, 40],
          [5, 200],
        ]);
        // Once: a second reprocess has nothing to do.
        const again = await via.request('POST', `${sol.S}/history/${first.id}/reprocess`);
        expect(again.body).toMatchObject({ started: false, records: 0 });
      },
    );

    /**
     * Asks for a log archive at `base` through `via`, waits for the Agent's upload and downloads it
     * once through `via`: its lines. The Agent uploads through HAProxy, to whichever replica it
     * picks; every replica reads the archive from the shared database (log_archive_chunks), so
     * the GET through `via` finds it wherever it arrived.
     */
    const downloadLogs = async (via: ServiceUnderTest, base: string): Promise<Array<Record<string, unknown>>> => {
      const posted = await via.request<{ logId: string }>('POST', base);
      expect(posted.status, JSON.stringify(posted.body)).toBe(201);
      const { logId } = posted.body;
      const fromElsewhere = await via.request('GET', `${base}/${logId}`, { from: '127.0.0.2' });
      expect(fromElsewhere.status).toBe(403);
      const zip = await until('the archive', async () => {
        const res = await via.request('GET', `${base}/${logId}`);
        return res.status === 404 ? undefined : res;
      });
      expect(zip.status, zip.raw.toString('utf8').slice(0, 500)).toBe(200);
      expect(zip.headers['content-type']).toMatch(/application\/zip/);
      // One download per logId, whichever replica is asked next.
      for (const sut of [via, lb]) expect((await sut.request('GET', `${base}/${logId}`)).status).toBe(410);
      const entries = unzip(zip.raw);
      expect(entries.size).toBeGreaterThan(0);
      expect([...entries.keys()].every((n) => /^agent\.\d{4}-\d{2}-\d{2}\.\d+\.log$/.test(n))).toBe(true);
      const text = [...entries.values()].map((b) => b.toString('utf8')).join('');
      const { agentSecret } = JSON.parse(fs.readFileSync(path.join(agent.dir, 'config.json'), 'utf8')) as {
        agentSecret: string;
      };
      expect(text).not.toContain(agentSecret);
      return text
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l) as Record<string, unknown>);
    };

    it(
      "gets the Agent's and a Solution's logs through a replica that does not hold the channel",
      { timeout: 120_000 },
      async () => {
        const { via } = await replicas();
        const lines = await downloadLogs(via, `/v1/orgs/${via.orgId}/agents/${agent.agentId}/logs`);
        expect(lines.every((l) => l['agentId'] === agent.agentId)).toBe(true);
        expect(lines.some((l) => l['msg'] === 'channel connected')).toBe(true);
        // A Solution's: only its own run's lines.
        const own = await downloadLogs(via, `${smallCopy.S}/logs`);
        for (const l of own) expect(l['solutionId'], JSON.stringify(l)).toBe(smallCopy.id);
        expect(own.filter((l) => l['runId'] === smallCopy.runId).map((l) => l['msg'])).toEqual(
          expect.arrayContaining(['solution run started', 'solution run finished']),
        );
      },
    );

    it(
      'uninstalls and installs a Connector on the Agent through a replica that does not hold the channel',
      { timeout: 180_000 },
      async () => {
        // The SQLite Connector: no Connection uses it, so it may be uninstalled. An update to another
        // version cannot be run end to end: the catalogue holds one version of each Connector, built
        // from the tree (test/integration/service/marketplace/connector-installs.test.ts fakes one).
        const { via } = await replicas();
        const installed = async (): Promise<string[]> =>
          (
            await via.request<{ installedConnectors: Array<{ connectorId: string }> }>(
              'GET',
              `/v1/orgs/${via.orgId}/agents/${agent.agentId}`,
            )
          ).body.installedConnectors.map((c) => c.connectorId.toLowerCase());
        const folders = () => fs.readdirSync(path.join(agent.dir, 'connectors')).filter((f) => f.startsWith('sqlite-'));
        expect(folders()).toHaveLength(1);
        expect((await via.request('DELETE', `/v1/orgs/${via.orgId}/connectors/${SQLITE}/delete`)).status).toBe(204);
        await until('SQLite removed from the Agent', async () =>
          !(await installed()).includes(SQLITE) ? true : undefined,
        );
        expect(folders()).toEqual([]);
        expect((await via.request('POST', `/v1/orgs/${via.orgId}/connectors/${SQLITE}/install`)).status).toBe(200);
        await until('SQLite back on the Agent', async () => ((await installed()).includes(SQLITE) ? true : undefined));
        expect(folders()).toHaveLength(1);
        const market = await via.request<
          Array<{ adapterTypeId: string; agentInstallStatuses: Array<{ agentId: string; status: string }> }>
        >('GET', `/v1/marketplace/connectors?orgId=${via.orgId}`);
        for (const m of market.body)
          expect(m.agentInstallStatuses.find((s) => s.agentId === agent.agentId)?.status, m.adapterTypeId).toBe(
            'Installed',
          );
      },
    );

    it('restarts the Agent through a replica that does not hold the channel', { timeout: 120_000 }, async () => {
      const { via } = await replicas();
      const since = new Date().toISOString();
      const before = workerPids(agent.proc);
      const res = await via.request<{ status: string }>(
        'POST',
        `/v1/orgs/${via.orgId}/agents/${agent.agentId}/restart`,
        { body: { restartNow: false } },
      );
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      // The status when the answer left: an idle Agent may already have moved on to Restarting.
      expect(['WaitingToRestartAgentUserRequest', 'Restarting']).toContain(res.body.status);
      await until('a new worker process', () => (workerPids(agent.proc).length > before.length ? true : undefined));
      await untilStatus(lb, agent.agentId, 'Running');
      // The new worker's reports reach whichever replica it reconnected to; every one reads them.
      const statuses = async (): Promise<string[]> =>
        (
          await cluster.query<{ body: string }>(
            `SELECT body FROM agent_reports WHERE agent_id = $1 AND kind = 'status' AND received_at >= $2`,
            [agent.agentId, since],
          )
        ).map((r) => (JSON.parse(r.body) as { report: { status: string } }).report.status);
      await until('the Running report of the new process', async () =>
        (await statuses()).includes('Running') ? true : undefined,
      );
      expect(new Set(await statuses())).toEqual(new Set(['WaitingToRestartAgentUserRequest', 'Restarting', 'Running']));
      await untilReady(lb, agent.agentId, since);
    });

    it(
      "kill -9 of the channel's replica mid-run: the Agent moves within 15 s, the run completes, each row once",
      { timeout: 240_000 },
      async () => {
        const sol = await createSolution(
          lb,
          agent.agentId,
          'Moved copy',
          [copyMap({ n: 4, csvId, entity: 'big', targetId: pgId, table: 'moved', batchSize: BATCH })],
          { prepare: true },
        );
        const { holder } = await replicas();
        const victimId = (await holderOf(cluster, agent.agentId)) as string;
        const runId = await startRun(lb, sol.id);
        await until(
          'rows in the target',
          async () => ((await tableSums('moved')).rows > 0 ? true : undefined),
          120_000,
        );
        const run = await until('the run in History', async () =>
          (await historyOf(lb, sol.id)).find((r) => r.processExecutionId === runId),
        );
        expect(run.result, 'the run was still going').toBe('InProgress');
        const killedAt = Date.now();
        await cluster.kill(holder);
        // Not all written yet: the run's end is reported after the kill, through another replica.
        expect((await tableSums('moved')).rows, 'the run was still going at the kill').toBeLessThan(ROWS);
        const newHolder = await until(
          'the channel held by another replica',
          async () => {
            const id = await holderOf(cluster, agent.agentId);
            return id !== undefined && id !== victimId ? id : undefined;
          },
          20_000,
        );
        expect(Date.now() - killedAt).toBeLessThan(15_000);
        expect(replicaIndexOf(cluster, newHolder)).not.toBe(holder);

        const done = await finished(lb, sol.id, runId);
        expect(done, JSON.stringify(done)).toMatchObject({
          result: 'CompletedSuccessfully',
          recordsProcessed: ROWS,
          recordsFailed: 0,
        });
        expect(await tableSums('moved')).toEqual({ rows: ROWS, ids: ROWS, md5: csvDigest(big) });
        const view = await lb.request<{ isConnected: boolean; status: string }>(
          'GET',
          `/v1/orgs/${lb.orgId}/agents/${agent.agentId}`,
        );
        expect(view.body).toMatchObject({ isConnected: true, status: 'Running' });

        await cluster.start(holder);
        await cluster.inRotation(holder);
      },
    );
  },
  600_000,
);
