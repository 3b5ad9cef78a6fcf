/**
 * The chaos trial of Event Solutions (docs/events.md, "delivery guarantees"): senders POST
 * messages to a Message Endpoint while the Service and the Agent are killed with SIGKILL at seeded
 * random moments and started again; at the end every message whose POST was answered 200 must be
 * in the target exactly once, and none whose POST was refused.
 *
 *   senders (N loops, paced) ──POST + Idempotency-Key──▶ Service child (SQLite store)
 *     │  retry on no answer / 5xx / 429 with the same key           │ messagesWaiting, takes
 *     │  200 → ACCEPTED, other 4xx → REFUSED,                       ▼
 *     │  still retrying at the deadline → UNCERTAIN           Agent child ── Upsert ──▶ PostgreSQL orders
 *   faults (seeded shares of the messages handed out): kill -9 of the Service, then started again on
 *     the same port and data folder; kill -9 of the Agent (its open event runs noted), then run again
 *   end: the queue empty (event_messages), History settled ─▶ the checks, in SQL
 *
 * The plan (every POST's messages, which POSTs are made to be refused, the faults' kinds and
 * moments) comes from one seed; replay a failure with FERRY_CHAOS_SEED.
 */
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import pg from 'pg';
import { createTestDatabase } from '../../helpers/stores.js';
import { killAll, until } from '../agent/harness.js';
import { messageSolution } from '../../bench/solutions/service.js';
import { createConnection, POSTGRES } from '../solutions/harness.js';
import {
  runAgent,
  runAgents,
  solutionPath,
  untilReady,
  type AgentUnderTest,
  type Run,
} from '../solutions/faults-helpers.js';
import { untilConnected, type Random } from './faults.js';
import { serviceProcess, type ServiceProcess } from './service-process.js';

export interface EventsChaosConfig {
  /** Messages the plan holds (refused ones included). */
  messages: number;
  /** Concurrent sender loops. */
  senders: number;
  /** The most messages one POST carries (an array); about half the POSTs carry one object. */
  maxBatch: number;
  /** Messages per second the senders together hand out at most (paced, no catching up after an outage). */
  rate: number;
  serviceKills: number;
  agentKills: number;
  /** Share of the POSTs made to be refused (a wrong token, or an array with a member that is no object). */
  refusedShare: number;
  /** Share of the accepted POSTs sent once more with the same key (a sender that lost the answer). */
  replayShare: number;
  /** The faults strike when these shares of the messages have been handed out: earliest, latest. */
  moments: readonly [number, number];
  /** How long one POST keeps being retried before it is left UNCERTAIN. */
  sendRetryMs: number;
  /** How long the queue may take to empty after the last POST. */
  drainMs: number;
  log: (line: string) => void;
}

/** What an Agent run and its end look like to these checks. */
export type Execution = Pick<Run, 'processExecutionId' | 'result' | 'recordsProcessed' | 'recordsFailed' | 'details'>;

// ── the world: a Service process, an Agent, a PostgreSQL target, the Event Solution ──

export interface EventsWorld {
  sut: ServiceProcess;
  home: string;
  agent: AgentUnderTest;
  agentEnv: Record<string, string>;
  /** The target database and a client of it (the checker's). */
  target: { url: string; client: pg.Client };
  solutionId: string;
  mapId: number;
  /** Where messages go: the path of the Map's eventUrl on the Service's fixed address. */
  base: string;
  messagePath: string;
  token: string;
  dispose(): Promise<void>;
}

/**
 * Starts the Service as a child process, installs and runs an Agent, makes a fresh PostgreSQL
 * database with `orders(id integer primary key, name text not null, n integer)`, and an
 * IntegrationEvent Solution whose Message Map upserts each message into it, prepared.
 */
export async function startEventsWorld(log: (line: string) => void): Promise<EventsWorld> {
  const sut = serviceProcess();
  const cleanup: Array<() => Promise<unknown>> = [];
  const t0 = Date.now();
  try {
    await sut.start();
    cleanup.push(() => sut.dispose());
    const db = await createTestDatabase();
    cleanup.push(() => db.drop());
    const client = new pg.Client({ connectionString: db.url });
    await client.connect();
    client.on('error', (err) => log(`checker: ${err.message}`));
    cleanup.push(() => client.end());
    await client.query('CREATE TABLE orders (id integer PRIMARY KEY, name text NOT NULL, n integer)');

    // Info, not the harness' debug: an Agent's output is kept in memory for the whole trial.
    const agentEnv = { FERRY_AGENT_LOG_LEVEL: 'info' };
    const started = await runAgents(sut, 1, agentEnv);
    const agent = started.agents[0] as AgentUnderTest;

    const conn = await createConnection(sut, 'Orders DB', POSTGRES, { connectionString: db.url, schemas: 'public' });
    const made = await messageSolution(sut, {
      name: 'Chaos orders',
      agentId: agent.agentId,
      connectionId: conn,
      entity: 'orders',
      fields: ['id', 'name', 'n'],
    });
    log(`world ready in ${Date.now() - t0} ms: Service ${sut.url}, Agent ${agent.agentId}, target ${db.url}`);
    return {
      sut,
      home: started.home,
      agent,
      agentEnv,
      target: { url: db.url, client },
      solutionId: made.solutionId,
      mapId: made.mapId,
      base: `http://127.0.0.1:${sut.port}`,
      messagePath: made.messagePath.split('?')[0] as string,
      token: made.token,
      async dispose() {
        killAll();
        for (const c of cleanup.reverse()) await c().catch(() => undefined);
      },
    };
  } catch (err) {
    killAll();
    for (const c of cleanup.reverse()) await c().catch(() => undefined);
    throw err;
  }
}

// ── the plan ───────────────────────────────────────────────────────────────────

export type PostKind = 'valid' | 'bad-token' | 'bad-body';
export type FaultKind = 'service-kill' | 'agent-kill';

export interface Message {
  id: number;
  name: string;
  n: number;
}

/** One POST of the plan: its messages, its Idempotency-Key, whether it is made to be refused. */
export interface PlannedPost {
  key: string;
  kind: PostKind;
  /** One object when false, an array (of one or more) when true. */
  array: boolean;
  messages: Message[];
  /** Sent once more with the same key after its 200 (a sender that lost the answer). */
  replay: boolean;
}

export interface ChaosPlan {
  seed: number;
  posts: PlannedPost[];
  faults: Array<{ kind: FaultKind; share: number; jitterMs: number }>;
}

/** A name with the characters a JSON body and SQL must carry intact every few messages. */
const nameOf = (id: number): string =>
  id % 13 === 0 ? `O'Hara, "Jr" \\ ${id}` : id % 17 === 0 ? `Zoë Ünal — ${id}` : `order ${id}`;

export function planChaos(cfg: EventsChaosConfig, rnd: Random): ChaosPlan {
  const posts: PlannedPost[] = [];
  let id = 0;
  while (id < cfg.messages) {
    const array = rnd.next() < 0.5;
    const size = array ? Math.min(cfg.messages - id, 1 + Math.floor(rnd.next() * cfg.maxBatch)) : 1;
    const messages: Message[] = [];
    for (let i = 0; i < size; i++) {
      id += 1;
      messages.push({ id, name: nameOf(id), n: Math.floor(rnd.next() * 1_000_000) - 500_000 });
    }
    const r = rnd.next();
    const kind: PostKind =
      r < cfg.refusedShare / 2 ? 'bad-token' : r < cfg.refusedShare && array ? 'bad-body' : 'valid';
    posts.push({
      key: `chaos-${rnd.seed}-${posts.length + 1}`,
      kind,
      array,
      messages,
      replay: kind === 'valid' && rnd.next() < cfg.replayShare,
    });
  }
  const kinds = rnd.shuffle([
    ...Array.from({ length: cfg.serviceKills }, (): FaultKind => 'service-kill'),
    ...Array.from({ length: cfg.agentKills }, (): FaultKind => 'agent-kill'),
  ]);
  const shares = kinds.map(() => rnd.between(cfg.moments[0], cfg.moments[1])).sort((a, b) => a - b);
  return {
    seed: rnd.seed,
    posts,
    faults: kinds.map((kind, i) => ({ kind, share: shares[i] as number, jitterMs: Math.floor(rnd.next() * 400) })),
  };
}

/** The body a POST sends: a bad-body POST has one member that is not an object (all or nothing: none stored). */
function bodyOf(p: PlannedPost): string {
  if (!p.array) return JSON.stringify(p.messages[0]);
  const items: unknown[] = [...p.messages];
  if (p.kind === 'bad-body') items.splice(Math.floor(items.length / 2), 0, 42);
  return JSON.stringify(items);
}

// ── the senders ────────────────────────────────────────────────────────────────

export type PostState = 'accepted' | 'refused' | 'uncertain';

/** What became of a POST. */
export interface PostOutcome {
  post: PlannedPost;
  state: PostState;
  attempts: number;
  /** The final answer's status and text (or the last failure, for UNCERTAIN). */
  status: number;
  answer: string;
  /** The 200 said duplicate: a try before it had been stored without its answer arriving. */
  duplicate: boolean;
  /** Failures that were retried, by status or error code. */
  retried: Record<string, number>;
  /** The replay's answer, when the POST was replayed. */
  replay?: { status: number; answer: string };
}

interface Answer {
  status: number;
  text: string;
}

/** One POST on a connection of its own (the Service may be killed at any moment); rejects on no answer. */
function postOnce(w: EventsWorld, body: string, key: string, token: string, timeoutMs: number): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      new URL(`${w.messagePath}?accesstoken=${encodeURIComponent(token)}`, w.base),
      {
        method: 'POST',
        agent: false,
        headers: {
          'content-type': 'application/json',
          'content-length': Buffer.byteLength(body),
          'idempotency-key': key,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => (text += c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, text }));
        res.on('error', reject);
      },
    );
    req.setTimeout(timeoutMs, () => req.destroy(Object.assign(new Error('no answer in time'), { code: 'TIMEOUT' })));
    req.on('error', reject);
    req.end(body);
  });
}

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

/** Retried with the same key: no answer, a 5xx, a 429. Everything else is the final answer. */
const retryable = (status: number): boolean => status === 429 || status >= 500;

/**
 * Sends one POST until it gets a final answer (200: ACCEPTED, another 4xx: REFUSED) or `retryMs`
 * has passed (UNCERTAIN), as the sender in docs/events.md does, with a shorter pause.
 */
async function send(
  w: EventsWorld,
  p: PlannedPost,
  retryMs: number,
  progress: Pick<SendProgress, 'inFlight'>,
): Promise<PostOutcome> {
  const body = bodyOf(p);
  const token = p.kind === 'bad-token' ? '00000000-0000-4000-8000-000000000000' : w.token;
  const retried: Record<string, number> = {};
  const deadline = Date.now() + retryMs;
  let attempts = 0;
  let last: Answer = { status: 0, text: '' };
  for (let wait = 100; ; wait = Math.min(wait * 2, 1000)) {
    attempts += 1;
    try {
      progress.inFlight += 1;
      try {
        last = await postOnce(w, body, p.key, token, 30_000);
      } finally {
        progress.inFlight -= 1;
      }
      if (!retryable(last.status)) {
        const duplicate = last.status === 200 && (JSON.parse(last.text) as { duplicate?: boolean }).duplicate === true;
        return {
          post: p,
          state: last.status === 200 ? 'accepted' : 'refused',
          attempts,
          status: last.status,
          answer: last.text.slice(0, 500),
          duplicate,
          retried,
        };
      }
      retried[String(last.status)] = (retried[String(last.status)] ?? 0) + 1;
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code ?? (err as Error).message;
      retried[code] = (retried[code] ?? 0) + 1;
      last = { status: 0, text: `${code}` };
    }
    if (Date.now() + wait > deadline)
      return {
        post: p,
        state: 'uncertain',
        attempts,
        status: last.status,
        answer: last.text,
        duplicate: false,
        retried,
      };
    await sleep(wait);
  }
}

/** The senders' shared progress, read by the faults and the progress line. */
export interface SendProgress {
  /** Messages handed to POSTs so far (the faults' moments are shares of this). */
  dispatched: number;
  acceptedMessages: number;
  /** POSTs sent and not answered yet. */
  inFlight: number;
  /** Every fault has struck: the senders hand out the last messages (beyond `holdBack`) only then. */
  struck: boolean;
  done: boolean;
}

/**
 * The share of the messages beyond which the senders wait for the last fault: so that every fault
 * strikes while messages still flow, however long the ones before it took to recover.
 */
export const HOLD_BACK = 0.9;

/**
 * Sends every POST of the plan from `cfg.senders` loops, paced to `cfg.rate` messages a second
 * (a loop stalled by an outage does not make up for it afterwards), replaying the POSTs the plan
 * says once they were accepted.
 */
export async function sendAll(
  w: EventsWorld,
  cfg: EventsChaosConfig,
  plan: ChaosPlan,
  progress: SendProgress,
): Promise<PostOutcome[]> {
  const outcomes: PostOutcome[] = new Array<PostOutcome>(plan.posts.length);
  let next = 0;
  let slot = Date.now();
  const total = plan.posts.reduce((n, p) => n + p.messages.length, 0);
  const loop = async (): Promise<void> => {
    while (next < plan.posts.length) {
      const i = next++;
      const p = plan.posts[i] as PlannedPost;
      while (!progress.struck && progress.dispatched >= HOLD_BACK * total) await sleep(20);
      const now = Date.now();
      slot = Math.max(slot, now);
      const at = slot;
      slot += (p.messages.length * 1000) / cfg.rate;
      if (at > now) await sleep(at - now);
      progress.dispatched += p.messages.length;
      const o = await send(w, p, cfg.sendRetryMs, progress);
      if (o.state === 'accepted') {
        progress.acceptedMessages += p.messages.length;
        if (p.replay) {
          const again = await send(w, p, cfg.sendRetryMs, progress);
          o.replay = { status: again.status, answer: again.answer };
        }
      }
      outcomes[i] = o;
    }
  };
  try {
    await Promise.all(Array.from({ length: cfg.senders }, loop));
  } finally {
    progress.done = true;
  }
  return outcomes;
}

// ── the faults ─────────────────────────────────────────────────────────────────

/** What a fault did. */
export interface FaultRecord {
  kind: FaultKind;
  /** ms since the senders began. */
  atMs: number;
  /** Messages handed out when it struck, and whether the senders were still at work. */
  atMessages: number;
  flowing: boolean;
  /** Event runs the killed Agent had open (killed mid-run), by run ID. */
  openRuns: string[];
  /** Messages the killed Service held in its queue, and leased to a run, when it died. */
  queued?: number;
  leased?: number;
  recoveryMs: number;
}

/**
 * The event runs a killed Agent instance left open: recorded in its solutions.db before they
 * start and removed in the same turn as their end is put into the outbox. One whose end is in
 * the outbox already (killed between those two writes) is left out: its own end reaches History.
 */
export function openEventRuns(instanceDir: string): string[] {
  const data = path.join(instanceDir, 'data');
  const read = <T>(file: string, sql: string): T[] => {
    if (!fs.existsSync(path.join(data, file))) return [];
    const db = new Database(path.join(data, file), { readonly: true });
    try {
      return db.prepare(sql).all() as T[];
    } finally {
      db.close();
    }
  };
  const open = read<{ run_id: string }>('solutions.db', "SELECT run_id FROM open_runs WHERE trigger = 'event'");
  const ended = read<{ body: string }>('outbox.db', "SELECT body FROM outbox WHERE body LIKE '%runFinished%'");
  return open.map((r) => r.run_id).filter((id) => !ended.some((e) => e.body.includes(id)));
}

/** kill -9 of the Agent (its process group), its open event runs noted; then `ferry agent run` again, until Running. */
async function killAgent(w: EventsWorld): Promise<Pick<FaultRecord, 'openRuns'>> {
  process.kill(-w.agent.proc.pid, 'SIGKILL');
  await w.agent.proc.exited;
  const openRuns = openEventRuns(w.agent.dir);
  const since = new Date().toISOString();
  w.agent.proc = runAgent(w.home, w.agent.instance, w.agentEnv);
  await untilReady(w.sut, w.agent.agentId, since);
  return { openRuns };
}

/** kill -9 of the Service; then started again on the same port and data folder, until the Agent is connected. */
async function killService(w: EventsWorld): Promise<Pick<FaultRecord, 'queued' | 'leased' | 'openRuns'>> {
  await w.sut.kill();
  const q = w.sut.query<{ queued: number; leased: number }>(
    'SELECT count(*) AS queued, count(lease_run) AS leased FROM event_messages',
  )[0];
  await w.sut.start();
  await untilConnected(w.sut, w.agent.agentId);
  return { queued: q?.queued ?? 0, leased: q?.leased ?? 0, openRuns: [] };
}

/**
 * Strikes each fault of the plan at its moment (a share of the messages handed out, below
 * {@link HOLD_BACK}), one after the other, each recovered before the next.
 */
export async function strikeAll(
  w: EventsWorld,
  cfg: EventsChaosConfig,
  plan: ChaosPlan,
  progress: SendProgress,
  t0: number,
): Promise<FaultRecord[]> {
  const out: FaultRecord[] = [];
  const total = plan.posts.reduce((n, p) => n + p.messages.length, 0);
  try {
    await strikeEach();
  } finally {
    progress.struck = true;
  }
  return out;

  async function strikeEach(): Promise<void> {
    for (const f of plan.faults) {
      while (progress.dispatched < f.share * total && !progress.done) await sleep(20);
      await sleep(f.jitterMs);
      // The Service dies with POSTs in flight when there are any within a second: some of them
      // committed and their answers lost, to be sent again with their keys.
      if (f.kind === 'service-kill')
        for (const t = Date.now(); progress.inFlight === 0 && Date.now() - t < 1000 && !progress.done;) await sleep(1);
      const struck = Date.now();
      const atMessages = progress.dispatched;
      const flowing = !progress.done;
      const detail = f.kind === 'agent-kill' ? await killAgent(w) : await killService(w);
      const rec: FaultRecord = {
        kind: f.kind,
        atMs: struck - t0,
        atMessages,
        flowing,
        ...detail,
        recoveryMs: Date.now() - struck,
      };
      out.push(rec);
      cfg.log(
        `${f.kind} at ${rec.atMs} ms, ${atMessages}/${total} messages handed out${flowing ? '' : ' (senders done)'}` +
          (f.kind === 'agent-kill'
            ? `, ${rec.openRuns.length} event run(s) open`
            : `, ${rec.queued} queued (${rec.leased} leased)`) +
          `; back after ${rec.recoveryMs} ms`,
      );
    }
  }
}

// ── the end and the checks ─────────────────────────────────────────────────────

/** The Service's queue by the run holding each message (null: none), for the log. */
export function queueByLease(
  w: EventsWorld,
): Array<{ run: string | null; n: number; first: number; until: number | null }> {
  return w.sut.query(
    'SELECT lease_run AS run, count(*) AS n, min(id) AS first, max(lease_until_ms) AS until FROM event_messages GROUP BY lease_run',
  );
}

/** Rows in the Service's queue (its SQLite file, read-only). */
export function queuedInService(w: EventsWorld): number {
  return w.sut.query<{ n: number }>('SELECT count(*) AS n FROM event_messages')[0]?.n ?? Number.NaN;
}

export async function targetRows(w: EventsWorld): Promise<number> {
  return Number((await w.target.client.query<{ n: string }>('SELECT count(*) AS n FROM orders')).rows[0]?.n);
}

/** Every execution of the Solution in History, page by page. */
export async function executions(w: EventsWorld): Promise<Execution[]> {
  const all: Execution[] = [];
  for (let offset = 0; ; offset += 1000) {
    const res = await w.sut.request<Execution[]>(
      'GET',
      `${solutionPath(w.sut, w.solutionId)}/history?limit=1000&offset=${offset}`,
    );
    if (res.status !== 200 || !Array.isArray(res.body)) throw new Error(`history answered ${res.status}`);
    all.push(...res.body);
    if (res.body.length < 1000) return all;
  }
}

/** One execution by its run ID, or undefined when History has none. */
export async function execution(w: EventsWorld, runId: string): Promise<Execution | undefined> {
  const res = await w.sut.request<Execution>('GET', `${solutionPath(w.sut, w.solutionId)}/history/${runId}`);
  return res.status === 200 ? res.body : undefined;
}

/** The target against the ledger, in SQL. */
export interface TargetFigures {
  rows: number;
  distinctIds: number;
  accepted: number;
  /** Accepted messages missing from the target. */
  lost: number;
  /** Rows whose id was never accepted (refused, uncertain or never sent). */
  foreign: number;
  refusedPresent: number;
  uncertainPresent: number;
  /** Rows of accepted ids whose name or n differ from what was sent. */
  differing: number;
  sumN: string | null;
  expectedSumN: string | null;
  md5: string | null;
  expectedMd5: string | null;
}

export async function targetFigures(w: EventsWorld, outcomes: readonly PostOutcome[]): Promise<TargetFigures> {
  const c = w.target.client;
  const sent = outcomes.flatMap((o) => o.post.messages.map((m) => ({ ...m, state: o.state })));
  await c.query('DROP TABLE IF EXISTS pg_temp.sent');
  await c.query('CREATE TEMP TABLE sent (id integer PRIMARY KEY, name text NOT NULL, n integer, state text NOT NULL)');
  const columns = (['id', 'name', 'n', 'state'] as const).map((k) => sent.map((m) => m[k]));
  await c.query('INSERT INTO sent SELECT * FROM unnest($1::int[], $2::text[], $3::int[], $4::text[])', columns);
  const line = (t: string): string => `${t}.id::text || '|' || ${t}.name || '|' || coalesce(${t}.n::text, '\\N')`;
  const { rows } = await c.query<Record<keyof TargetFigures, string | null>>(
    `SELECT (SELECT count(*) FROM orders) AS "rows",
            (SELECT count(DISTINCT id) FROM orders) AS "distinctIds",
            (SELECT count(*) FROM sent WHERE state = 'accepted') AS "accepted",
            (SELECT count(*) FROM sent s WHERE s.state = 'accepted' AND NOT EXISTS (SELECT 1 FROM orders o WHERE o.id = s.id)) AS "lost",
            (SELECT count(*) FROM orders o WHERE NOT EXISTS (SELECT 1 FROM sent s WHERE s.id = o.id AND s.state = 'accepted')) AS "foreign",
            (SELECT count(*) FROM orders o JOIN sent s USING (id) WHERE s.state = 'refused') AS "refusedPresent",
            (SELECT count(*) FROM orders o JOIN sent s USING (id) WHERE s.state = 'uncertain') AS "uncertainPresent",
            (SELECT count(*) FROM orders o JOIN sent s USING (id)
              WHERE s.state = 'accepted' AND (o.name IS DISTINCT FROM s.name OR o.n IS DISTINCT FROM s.n)) AS "differing",
            (SELECT sum(n)::text FROM orders) AS "sumN",
            (SELECT sum(n)::text FROM sent WHERE state = 'accepted') AS "expectedSumN",
            (SELECT md5(string_agg(${line('o')}, E'\\n' ORDER BY o.id)) FROM orders o) AS "md5",
            (SELECT md5(string_agg(${line('s')}, E'\\n' ORDER BY s.id)) FROM sent s WHERE s.state = 'accepted') AS "expectedMd5"`,
  );
  const r = rows[0] as Record<keyof TargetFigures, string | null>;
  const text = new Set(['sumN', 'expectedSumN', 'md5', 'expectedMd5']);
  return Object.fromEntries(
    Object.entries(r).map(([k, v]) => [k, text.has(k) ? v : Number(v)]),
  ) as unknown as TargetFigures;
}

/** The Service's own counts of the endpoint: received, still queued, and the idempotency keys kept. */
export function serviceCounts(
  w: EventsWorld,
): Record<'messageCount' | 'queued' | 'rows' | 'keys' | 'keyedMessages', number> {
  const e = w.sut.query<{ message_count: number; queued: number }>(
    'SELECT message_count, queued FROM message_endpoints WHERE solution_id = ?',
    w.solutionId.toLowerCase(),
  )[0];
  const k = w.sut.query<{ keys: number; messages: number | null }>(
    `SELECT count(*) AS keys, sum(messages) AS messages FROM event_idempotency
      WHERE endpoint_id IN (SELECT id FROM message_endpoints WHERE solution_id = ?)`,
    w.solutionId.toLowerCase(),
  )[0];
  return {
    messageCount: Number(e?.message_count),
    queued: Number(e?.queued),
    rows: queuedInService(w),
    keys: Number(k?.keys ?? 0),
    keyedMessages: Number(k?.messages ?? 0),
  };
}

/**
 * Messages leased to a run that History never heard of: taken by an Agent for a run that never
 * began, so nobody gives them back before their lease (5 minutes) passes. A run that began is in
 * History within moments (its runStarted, or its RUN_AGENT_ENDED when the Agent is back).
 */
export interface GhostLease {
  runId: string;
  messages: number;
  /** The oldest message it holds (the queue's order: later ones are written before it). */
  firstId: number;
  /** ms since the senders began when first seen, and when the lease passes (the Service's clock). */
  seenAtMs: number;
  leaseUntilMs: number;
}

/** How long a run may hold leases unknown to History before it counts as a ghost. */
const GHOST_AFTER_MS = 30_000;

/** Watches the Service's queue for {@link GhostLease}s, every 2 s, for the whole trial. */
export class LeaseWatch {
  readonly #firstSeen = new Map<string, number>();
  readonly ghosts = new Map<string, GhostLease>();
  #timer: NodeJS.Timeout | undefined;
  #polling = false;

  constructor(
    private readonly w: EventsWorld,
    private readonly t0: number,
    private readonly log: (line: string) => void,
  ) {}

  start(): void {
    this.#timer = setInterval(() => {
      if (this.#polling) return;
      this.#polling = true;
      void this.poll()
        .catch(() => undefined)
        .finally(() => (this.#polling = false));
    }, 2_000);
  }

  stop(): void {
    clearInterval(this.#timer);
  }

  /** The latest lease a ghost still holds messages under (0: none). */
  heldUntil(): number {
    return Math.max(0, ...[...this.ghosts.values()].map((g) => g.leaseUntilMs));
  }

  async poll(): Promise<void> {
    const now = Date.now();
    const rows = this.w.sut.query<{ run: string; n: number; first: number; until: number }>(
      `SELECT lease_run AS run, count(*) AS n, min(id) AS first, max(lease_until_ms) AS until FROM event_messages
        WHERE lease_run IS NOT NULL AND lease_until_ms > ? GROUP BY lease_run`,
      now,
    );
    for (const r of rows) {
      const seen = this.#firstSeen.get(r.run) ?? now;
      this.#firstSeen.set(r.run, seen);
      if (now - seen < GHOST_AFTER_MS || this.ghosts.has(r.run)) continue;
      if ((await execution(this.w, r.run)) !== undefined) continue;
      const ghost = { runId: r.run, messages: r.n, firstId: r.first, seenAtMs: seen - this.t0, leaseUntilMs: r.until };
      this.ghosts.set(r.run, ghost);
      this.log(
        `GHOST LEASE: run ${r.run} holds ${r.n} message(s) from queue id ${r.first} for ${Math.round((now - seen) / 1000)} s, ` +
          `and History has no execution of it; the lease passes in ${Math.round((r.until - now) / 1000)} s`,
      );
    }
  }

  /** Drops the ghosts History knows after all (a run whose reports were only late). */
  async confirm(): Promise<GhostLease[]> {
    for (const g of [...this.ghosts.values()])
      if ((await execution(this.w, g.runId)) !== undefined) this.ghosts.delete(g.runId);
    return [...this.ghosts.values()];
  }
}

/**
 * Waits until the queue is empty, logging progress every few seconds: within `cfg.drainMs`, or
 * until a ghost lease has passed and its messages have been taken after all (the sweep wakes the
 * Agent within 30 s of that).
 */
export async function untilDrained(
  w: EventsWorld,
  cfg: EventsChaosConfig,
  accepted: number,
  watch: LeaseWatch,
  progressLine: () => Promise<string>,
): Promise<void> {
  const started = Date.now();
  const deadline = started + cfg.drainMs;
  let lastLog = started;
  for (;;) {
    try {
      // Acknowledged only once written: an empty queue means every accepted message was written.
      if (queuedInService(w) === 0 && (await targetRows(w)) >= accepted) return;
    } catch {
      // The store file is being checkpointed: the next look says.
    }
    if (Date.now() - lastLog > 5000) {
      lastLog = Date.now();
      cfg.log(`draining: ${await progressLine()}`);
    }
    const until = Math.max(deadline, watch.heldUntil() + 90_000);
    if (Date.now() > until) throw new Error(`the event queue not empty after ${Date.now() - started} ms`);
    await sleep(250);
  }
}

/** Waits until History holds no execution in progress (the Agent's reports delivered); answers them all. */
export function untilSettled(w: EventsWorld, ms: number): Promise<Execution[]> {
  return until(
    'every execution in History ended',
    async () => {
      const all = await executions(w);
      return all.every((e) => e.result !== 'InProgress') ? all : undefined;
    },
    ms,
  );
}
