/**
 * Copies of a Solution (docs/benchmarks.md "Copies"; service/solutions/clones.ts): the consultant's
 * rollout, one Solution of FERRY_BENCH_CLONE_MAPS (20) Maps copied into FERRY_BENCH_CLONE_ORGS (50)
 * child Organizations, each with its own Agent, the two Connections of the same names and the
 * Lookup Table the Maps name. Per store (SQLite, PostgreSQL; FERRY_BENCH_CLONE_STORES):
 *
 *   sequential   POST cloneAsync into each child in turn, polling its job every 10 ms until it
 *                ended: ms per copy (p50, p99) and copies/s
 *   parallel     the same into another 50 children, all POSTed at once
 *   anchor       what the copy saves a consultant: the same Solution and its 20 Maps created in a
 *                child through the API (POST solution, POST each Map), timed the same way
 *   size         the store's growth per copy (SQLite: the database and its WAL after a checkpoint;
 *                PostgreSQL: pg_database_size), and the bytes of the copied Map models
 *
 * Every copy is checked: the job ended without error and the copy holds its 20 Maps.
 *
 *   npx tsx test/bench/clone.bench.ts   → one JSON document on stdout, progress on stderr
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { sql } from 'kysely';
import { startService, type TestService } from '../helpers/service.js';

const MAPS = Number(process.env['FERRY_BENCH_CLONE_MAPS'] ?? 20);
const ORGS = Number(process.env['FERRY_BENCH_CLONE_ORGS'] ?? 50);
const HAS_PG = Boolean(process.env['FERRY_TEST_DATABASE_URL']);
const STORES = (process.env['FERRY_BENCH_CLONE_STORES'] ?? (HAS_PG ? 'sqlite,postgres' : 'sqlite'))
  .split(',')
  .map((s) => s.trim()) as Array<'sqlite' | 'postgres'>;
const SQLITE = 'f86c6485-8328-4562-b3b2-aa2dcab541ad';
const LOOKUP = 'LOOKUPTABLEVALUE1("Regions", Q.name)';

const log = (msg: string) => process.stderr.write(`[clone ${new Date().toISOString().slice(11, 19)}] ${msg}\n`);

async function call<T>(svc: TestService, method: string, p: string, body?: unknown): Promise<T> {
  const res = await svc.request<T>(method, p, body === undefined ? {} : { body });
  if (res.status >= 300) throw new Error(`${method} ${p}: ${res.status} ${res.text.slice(0, 300)}`);
  return res.body;
}

interface Org {
  id: number;
  agentId: string;
}

/** A child Organization with an Agent, the Connections "Orders DB" and "Warehouse", and the Lookup Table "Regions". */
async function child(svc: TestService, n: number): Promise<Org & { conns: string[] }> {
  const org = await call<{ id: number }>(svc, 'POST', '/v1/orgs', {
    name: `Customer ${n}`,
    parentId: svc.orgId,
    securityRules: [
      {
        name: 'loopback',
        allowedIpRangeStartAddress: '127.0.0.1',
        allowedIpRangeEndAddress: '127.0.0.1',
        apiAccessEnabled: true,
      },
    ],
  });
  return { id: org.id, ...(await furnish(svc, org.id)) };
}

async function furnish(svc: TestService, orgId: number): Promise<{ agentId: string; conns: string[] }> {
  const key = await call<{ agentInstallationKey: string }>(
    svc,
    'POST',
    `/v1/orgs/${orgId}/agents/provision_onpremise_agent`,
  );
  const agent = await svc.request<{ agentId: string }>('POST', '/v1/agent/register', {
    auth: null,
    body: {
      agentInstallationKey: key.agentInstallationKey,
      machineName: `host-${randomUUID().slice(0, 8)}`,
      serviceName: 'ferry-agent-1',
      version: '1.2.3',
      fingerprint: `fp-${randomUUID()}`,
    },
  });
  if (agent.status !== 201) throw new Error(`register: ${agent.status} ${agent.text}`);
  const conns: string[] = [];
  for (const name of ['Orders DB', 'Warehouse'])
    conns.push(
      (
        await call<{ id: string }>(svc, 'POST', `/v1/orgs/${orgId}/connections`, {
          name,
          connectorId: SQLITE,
          color: '#FF00FF00',
        })
      ).id,
    );
  await call(svc, 'POST', `/v1/orgs/${orgId}/lookuptables`, {
    name: 'Regions',
    lookupTableValues: [{ value1: 'North', value2: 'ann' }],
  });
  return { agentId: agent.body.agentId, conns };
}

function mapModel(i: number, from: string, to: string) {
  return {
    version: '3.0',
    name: `Feed ${i + 1}`,
    blocks: [
      {
        blockId: randomUUID(),
        name: 'Q',
        blockType: 'Query',
        action: 'Query',
        connectionId: from,
        entity: `source_${i}`,
      },
      {
        blockId: randomUUID(),
        name: 'Put',
        blockType: 'Create',
        action: 'Create',
        connectionId: to,
        entity: `target_${i}`,
        fieldMappings: [
          { targetField: 'id', targetFormula: 'Q.id' },
          { targetField: 'name', targetFormula: i % 2 === 0 ? LOOKUP : 'Q.name' },
          { targetField: 'note', targetFormula: `"feed ${i + 1}: " & Q.name` },
        ],
      },
    ],
  };
}

/** The Solution and its Maps created through the API in `org` (also the anchor: what a copy spares). */
async function createSolution(svc: TestService, orgId: number, agentId: string, conns: string[], name: string) {
  const S = `/v1/orgs/${orgId}/solutions`;
  const sol = await call<{ id: string }>(svc, 'POST', S, { name, solutionType: 'Integration', agentId });
  for (let i = 0; i < MAPS; i++)
    await call(svc, 'POST', `${S}/${sol.id}/maps/advanced`, mapModel(i, conns[i % 2] ?? '', conns[(i + 1) % 2] ?? ''));
  return sol.id;
}

async function cloneInto(svc: TestService, solutionId: string, org: Org): Promise<number> {
  const t0 = performance.now();
  const S = `/v1/orgs/${svc.orgId}/solutions/${solutionId}`;
  const job = await call<{ id: string; clonedSolutionId: string }>(
    svc,
    'POST',
    `${S}/cloneAsync?destOrgId=${org.id}&destAgentId=${org.agentId}`,
  );
  for (;;) {
    const j = await call<{ isComplete: boolean; hasError: boolean; message: string }>(
      svc,
      'GET',
      `${S}/cloneAsync/${job.id}`,
    );
    if (j.isComplete) {
      if (j.hasError) throw new Error(`clone into ${org.id}: ${j.message}`);
      break;
    }
    await new Promise((r) => setTimeout(r, 10));
  }
  const ms = performance.now() - t0;
  const maps = await call<unknown[]>(svc, 'GET', `/v1/orgs/${org.id}/solutions/${job.clonedSolutionId}/maps?limit=100`);
  if (maps.length !== MAPS) throw new Error(`the copy in ${org.id} holds ${maps.length} Maps, not ${MAPS}`);
  return ms;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return Math.round((s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] ?? NaN) * 10) / 10;
};

async function storeBytes(svc: TestService, store: 'sqlite' | 'postgres'): Promise<number> {
  const db = svc.service.store.db;
  if (store === 'postgres') {
    const r = await sql<{ n: number }>`SELECT pg_database_size(current_database())::bigint AS n`.execute(db);
    return Number(r.rows[0]?.n);
  }
  await sql`PRAGMA wal_checkpoint(TRUNCATE)`.execute(db);
  const file = path.join(svc.dataDir, 'ferry.db');
  return fs.statSync(file).size + (fs.existsSync(`${file}-wal`) ? fs.statSync(`${file}-wal`).size : 0);
}

async function benchStore(store: 'sqlite' | 'postgres') {
  const svc = await startService({ name: store }, { cloudAgents: 'off' });
  try {
    const rootAgent = await furnish(svc, svc.orgId);
    const source = await createSolution(svc, svc.orgId, rootAgent.agentId, rootAgent.conns, 'Rollout');
    log(`${store}: source with ${MAPS} Maps; making ${ORGS * 2 + 5} child Organizations`);
    const seq: Org[] = [];
    const par: Org[] = [];
    for (let i = 0; i < ORGS; i++) seq.push(await child(svc, i));
    for (let i = 0; i < ORGS; i++) par.push(await child(svc, ORGS + i));
    const anchorOrgs: Array<Org & { conns: string[] }> = [];
    for (let i = 0; i < 5; i++) anchorOrgs.push(await child(svc, 2 * ORGS + i));

    const before = await storeBytes(svc, store);
    const t0 = performance.now();
    const seqMs: number[] = [];
    for (const org of seq) seqMs.push(await cloneInto(svc, source, org));
    const seqTotal = performance.now() - t0;
    const after = await storeBytes(svc, store);
    log(`${store}: ${ORGS} copies one after another in ${Math.round(seqTotal)} ms (p50 ${pct(seqMs, 50)} ms)`);

    const t1 = performance.now();
    const parMs = await Promise.all(par.map((org) => cloneInto(svc, source, org)));
    const parTotal = performance.now() - t1;
    log(`${store}: ${ORGS} copies at once in ${Math.round(parTotal)} ms`);

    const anchorMs: number[] = [];
    for (const [i, o] of anchorOrgs.entries()) {
      const t = performance.now();
      await createSolution(svc, o.id, o.agentId, o.conns, `Manual ${i}`);
      anchorMs.push(performance.now() - t);
    }
    const models = await sql<{ n: number }>`
      SELECT CAST(sum(length(r.model)) AS bigint) AS n FROM map_revisions r JOIN maps m ON m.id = r.map_id
      JOIN solutions s ON s.id = m.solution_id WHERE s.org_id = ${seq[0]?.id ?? 0}`.execute(svc.service.store.db);
    return {
      store,
      maps: MAPS,
      organizations: ORGS,
      sequential: {
        totalMs: Math.round(seqTotal),
        p50Ms: pct(seqMs, 50),
        p99Ms: pct(seqMs, 99),
        perSec: round(ORGS / (seqTotal / 1000)),
      },
      parallel: {
        totalMs: Math.round(parTotal),
        p50Ms: pct(parMs, 50),
        p99Ms: pct(parMs, 99),
        perSec: round(ORGS / (parTotal / 1000)),
      },
      anchor: { what: `the Solution and its ${MAPS} Maps created through the API`, p50Ms: pct(anchorMs, 50) },
      copyVsAnchor: round(pct(anchorMs, 50) / pct(seqMs, 50)),
      storeBytesPerCopy: Math.round((after - before) / ORGS),
      modelBytesPerCopy: Number(models.rows[0]?.n ?? 0),
    };
  } finally {
    await svc.close();
  }
}

const round = (x: number) => Math.round(x * 100) / 100;

const results = [];
for (const store of STORES) results.push(await benchStore(store));
process.stdout.write(`${JSON.stringify({ benchmark: 'clone', results }, null, 1)}\n`);
