/**
 * The Service's CPU per record error an Agent reports (the runErrors path end to end: the
 * WebSocket frame, its validation, the report's transaction, the errors stored), on a real Service
 * in a child process (serve-child.ts), so that its CPU is its own:
 *
 *   npx tsx test/bench/report-errors.bench.ts            # SQLite
 *   FERRY_TEST_DATABASE_URL=postgres://… npx tsx …        # SQLite, then PostgreSQL
 *
 * Each error names its record (`sourceKey`, `sourceRow`); BENCH_KEYS=row: its row alone, 0: neither.
 * Per store and form (BENCH_FORMS, default `shared,whole`: the reports as an Agent sends them to
 * this Service, with the fields every error has alike once a report, and every error whole, as to
 * a Service from before that): an Agent registered and connected over the channel (a plain `ws` client), one
 * Solution, a runStarted, then BENCH_ERRORS record errors (100,000) in runErrors reports of the
 * largest size the protocol takes, sent one after the other, each awaited (the Agent's outbox sends
 * the next once the last is acknowledged). The frames are serialized before the clock starts. The
 * Service's CPU (user + system, from /proc) over the sends, ÷ the errors, is the figure; then the
 * checks: History's `Total-Count` is the number sent, a report sent again under its message ID and
 * one with a new message ID but errors already stored add nothing, and a malformed report is
 * refused. Prints one JSON document.
 */
import { randomUUID } from 'node:crypto';
import fs from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import WebSocket from 'ws';
import { CHANNEL_PATH, PROTOCOL_VERSION } from '../../src/protocol/channel.js';
import {
  MAX_ERRORS_PER_REPORT,
  SHARED_ERRORS_FEATURE,
  shareErrorFields,
  type RunRecordError,
} from '../../src/protocol/solutions.js';
import { uuidV7 } from '../../src/util/uuid-v7.js';
import { ADMIN } from '../helpers/service.js';
import { benchRequest, startServiceChild, type StoreName } from './serve-child.js';

const ERRORS = Number(process.env['BENCH_ERRORS'] ?? 100_000);
/** BENCH_KEYS: `1` (default) a key and a row for each error, `row` the row alone (a keyless source's), `0` neither. */
const KEYS = process.env['BENCH_KEYS'] ?? '1';
const PG_URL = process.env['FERRY_TEST_DATABASE_URL'];
const agent = new http.Agent({ keepAlive: true });

function check(cond: boolean, what: string): void {
  if (!cond) throw new Error(`benchmark check failed: ${what}`);
}

async function api<T>(
  base: string,
  method: string,
  p: string,
  body?: unknown,
): Promise<{ status: number; body: T; text: string }> {
  const res = await benchRequest(base, method, p, {
    body: body === undefined ? undefined : JSON.stringify(body),
    agent,
  });
  return {
    status: res.status,
    text: res.text,
    body: res.text.startsWith('{') || res.text.startsWith('[') ? (JSON.parse(res.text) as T) : (undefined as T),
  };
}

/** CPU (user + system) of a process so far, in ms, from /proc. */
function cpuMs(pid: number): number {
  const fields = fs.readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1]?.split(' ') ?? [];
  const ticks = Number(fields[11]) + Number(fields[12]);
  return (ticks * 1000) / 100;
}

/**
 * An error as the Agent reports a record the target refused (the failing scenario's shape): its
 * IDs time-ordered (uuidV7) as the Agent makes them, its detail the Block's and the refusal's,
 * alike for every record a constraint refuses.
 */
let row = 0;
function refused(): RunRecordError {
  row += 1;
  return {
    // Which record: its key and its row, as a Map over a keyed source sends them (BENCH_KEYS above).
    ...(KEYS === '1' ? { sourceKey: { id: row } } : {}),
    ...(KEYS !== '0' ? { sourceRow: row } : {}),
    id: uuidV7(),
    mapId: 1,
    mapName: 'IS rows',
    sourceEntity: 'rows',
    blockId: 'b2',
    blockName: 'Create is_fail',
    code: 'RUN_WRITE_FAILED',
    errorMessage:
      'Create is_fail: is_fail refused the record: new row for relation "is_fail" violates check constraint "is_fail_id_check"',
    errorDetail: JSON.stringify({
      blockId: 'b2',
      recordError: {
        code: 'CheckViolation',
        message: 'new row for relation "is_fail" violates check constraint "is_fail_id_check"',
        nativeCode: '23514',
      },
    }),
    canReprocess: true,
    failedRecordId: uuidV7(),
  };
}

/** A plain channel client: sends prepared frames and resolves each request's reply by ID. */
class Channel {
  readonly #waiting = new Map<string, (m: Record<string, unknown>) => void>();
  private constructor(readonly ws: WebSocket) {
    ws.on('message', (data: Buffer) => {
      const m = JSON.parse(data.toString('utf8')) as Record<string, unknown>;
      if (typeof m['re'] === 'string') this.#waiting.get(m['re'])?.(m);
      else if (typeof m['type'] === 'string' && typeof m['id'] === 'string')
        ws.send(JSON.stringify({ re: m['id'], ok: true, result: { need: [] } }));
    });
  }
  static open(base: string, auth: string): Promise<Channel> {
    const ws = new WebSocket(base.replace(/^http/, 'ws') + CHANNEL_PATH, { headers: { authorization: auth } });
    return new Promise((resolve, reject) => {
      ws.once('open', () => resolve(new Channel(ws)));
      ws.once('error', reject);
    });
  }
  /** Sends a frame (JSON text) whose request ID is `id` and waits for its reply. */
  request(id: string, frame: string): Promise<Record<string, unknown>> {
    return new Promise((resolve) => {
      this.#waiting.set(id, (m) => {
        this.#waiting.delete(id);
        resolve(m);
      });
      this.ws.send(frame);
    });
  }
  close(): void {
    this.ws.close(1000, 'bench done');
  }
}

const frame = (id: string, report: unknown): string =>
  JSON.stringify({ id, type: 'report', at: new Date().toISOString(), report });

/**
 * `form`: `shared`, the reports as an Agent sends them to a Service that states
 * SHARED_ERRORS_FEATURE (the fields every error has alike once a report); `whole`, every error
 * whole, as an Agent sends them to an older Service.
 */
async function measure(store: StoreName, form: 'shared' | 'whole'): Promise<Record<string, unknown>> {
  const svc = await startServiceChild(store);
  const pid = svc.child.pid as number;
  const base = svc.served.url;
  try {
    const O = `/v1/orgs/${svc.served.orgId}`;
    const key = await api<{ agentInstallationKey: string }>(base, 'POST', `${O}/agents/provision_onpremise_agent`);
    const fingerprint = `fp-${randomUUID()}`;
    const reg = await api<{ agentId: string; agentSecret: string }>(base, 'POST', '/v1/agent/register', {
      agentInstallationKey: key.body.agentInstallationKey,
      machineName: 'bench-host',
      serviceName: 'ferry-agent-1',
      version: '1.2.3',
      fingerprint,
    });
    check(reg.status === 201, `register: ${reg.status} ${reg.text}`);
    const ch = await Channel.open(base, `Bearer ${reg.body.agentId}.${reg.body.agentSecret}`);
    const helloId = randomUUID();
    const hello = await ch.request(
      helloId,
      JSON.stringify({
        id: helloId,
        type: 'hello',
        protocolVersion: PROTOCOL_VERSION,
        version: '1.2.3',
        machineName: 'bench-host',
        serviceName: 'ferry-agent-1',
        fingerprint,
        pid: process.pid,
        startedAt: new Date().toISOString(),
        status: 'Running',
        installedConnectors: [],
      }),
    );
    check(hello['ok'] === true, `hello: ${JSON.stringify(hello)}`);
    check(
      ((hello['result'] as { features?: string[] }).features ?? []).includes(SHARED_ERRORS_FEATURE),
      `the Service states ${SHARED_ERRORS_FEATURE}`,
    );
    const sol = await api<{ id: string }>(base, 'POST', `${O}/solutions`, {
      name: 'bench errors',
      solutionType: 'Integration',
      agentId: reg.body.agentId,
    });
    check(sol.status === 201, `solution: ${sol.status} ${sol.text}`);
    const solutionId = sol.body.id;
    const runId = randomUUID();
    const startId = randomUUID();
    check(
      (
        await ch.request(
          startId,
          frame(startId, { kind: 'runStarted', runId, solutionId, trigger: 'start', at: new Date().toISOString() }),
        )
      )['ok'] === true,
      'runStarted',
    );

    const frames: Array<{ id: string; text: string; errors: RunRecordError[] }> = [];
    for (let i = 0; i < ERRORS; i += MAX_ERRORS_PER_REPORT) {
      const errors = Array.from({ length: Math.min(MAX_ERRORS_PER_REPORT, ERRORS - i) }, refused);
      const id = randomUUID();
      frames.push({
        id,
        text: frame(id, {
          kind: 'runErrors',
          runId,
          solutionId,
          ...(form === 'shared' ? shareErrorFields(errors) : { errors }),
        }),
        errors,
      });
    }
    const load = os.loadavg()[0];
    const cpu0 = cpuMs(pid);
    const t0 = performance.now();
    for (const f of frames) {
      const reply = await ch.request(f.id, f.text);
      if (reply['ok'] !== true) throw new Error(`report refused: ${JSON.stringify(reply)}`);
    }
    const ms = performance.now() - t0;
    const serviceCpuMs = cpuMs(pid) - cpu0;

    // Exactly once: the same message again, and the same errors under a new message ID.
    const first = frames[0];
    check(first !== undefined, 'a report was sent');
    check((await ch.request(first!.id, first!.text))['ok'] === true, 'the same report again is acknowledged');
    const again = randomUUID();
    check(
      (await ch.request(again, frame(again, { kind: 'runErrors', runId, solutionId, errors: first!.errors })))['ok'] ===
        true,
      'the same errors again are acknowledged',
    );
    const bad = randomUUID();
    const refusedReply = await ch.request(
      bad,
      frame(bad, { kind: 'runErrors', runId, solutionId, errors: [{ ...first!.errors[0], canReprocess: 'yes' }] }),
    );
    check(
      refusedReply['ok'] === false &&
        (refusedReply['error'] as { code?: string } | undefined)?.code === 'CHN_INVALID_MESSAGE',
      `a bad report is refused: ${JSON.stringify(refusedReply)}`,
    );

    const execs = await api<Array<{ id: number }>>(base, 'GET', `${O}/solutions/${solutionId}/history`);
    const execId = execs.body[0]?.id;
    const page = await benchRequestWithHeaders(
      base,
      `${O}/solutions/${solutionId}/history/${execId}/errors?limit=1&offset=${ERRORS - 1}`,
    );
    check(page.total === ERRORS, `Total-Count ${page.total} = ${ERRORS}`);
    ch.close();
    return {
      store,
      form,
      errors: ERRORS,
      reports: frames.length,
      bytesPerError: Math.round(frames.reduce((n, f) => n + f.text.length, 0) / ERRORS),
      ms: Math.round(ms),
      serviceCpuMs: Math.round(serviceCpuMs),
      usPerError: Math.round(((serviceCpuMs * 1000) / ERRORS) * 10) / 10,
      errorsPerSec: Math.round(ERRORS / (ms / 1000)),
      load1: load,
      total: page.total,
    };
  } finally {
    await svc.stop();
  }
}

/** A GET answering its Total-Count header. */
function benchRequestWithHeaders(base: string, p: string): Promise<{ status: number; total: number }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      new URL(p, base),
      {
        method: 'GET',
        agent,
        headers: { authorization: `Basic ${Buffer.from(`${ADMIN.email}:${ADMIN.password}`).toString('base64')}` },
      },
      (res) => {
        res.resume();
        res.on('end', () => resolve({ status: res.statusCode ?? 0, total: Number(res.headers['total-count']) }));
      },
    );
    req.on('error', reject);
    req.end();
  });
}

const stores: StoreName[] = PG_URL ? ['sqlite', 'postgres'] : ['sqlite'];
const only = process.env['BENCH_STORES']?.split(',') as StoreName[] | undefined;
const results = [];
const forms = (process.env['BENCH_FORMS']?.split(',') ?? ['shared', 'whole']) as Array<'shared' | 'whole'>;
for (const store of only ?? stores) for (const form of forms) results.push(await measure(store, form));
agent.destroy();
process.stdout.write(
  `${JSON.stringify({ at: new Date().toISOString(), cpus: os.cpus().length, keys: KEYS, results }, null, 2)}\n`,
);
