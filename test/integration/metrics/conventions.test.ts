import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentMetrics } from '../../../src/agent/metrics.js';
import { ServiceMetrics } from '../../../service/metrics/service-metrics.js';
import { conventionBreaches, parseExposition, sumOf, valueOf, type Family } from './exposition.js';

const DOC = fs.readFileSync(path.resolve(import.meta.dirname, '../../../docs/metrics.md'), 'utf8');
const RUN = '0b8f7d3e-5a4c-4b1e-9f2d-6c7a8e9b0d1f';
const SOLUTION = 'a1b2c3d4-e5f6-4a7b-8c9d-0e1f2a3b4c5d';
const AGENT = 'c0ffee00-1234-4abc-8def-000000000001';

/** The metric names the document's tables list (first column), `ferry_process_*` and the like left out. */
function documented(): Set<string> {
  return new Set([...DOC.matchAll(/^\| `(ferry_[a-z_]+)` \|/gm)].map((m) => m[1] as string));
}

/** The names an exposition declares, less prom-client's process metrics. */
function declared(families: Map<string, Family>): string[] {
  return [...families.keys()].filter((n) => !/^ferry_(process|nodejs)_/.test(n));
}

/** A Service registry fed with every kind of observation, IDs included where a caller might leak one. */
async function serviceExposition(): Promise<Map<string, Family>> {
  const m = new ServiceMetrics();
  m.readFrom({
    connectedAgents: () => [AGENT],
    readStore: async () => ({
      agentsByStatus: new Map([
        ['Running', 2],
        ['SomethingNew', 1],
      ]),
      eventQueue: { messages: 3, oldestAgeSeconds: 12.5 },
      jobs: new Map([['prepare', { queued: 1, oldestAgeSeconds: 4 }]]),
    }),
  });
  m.httpRequest('GET', '/v1/orgs/:orgId/solutions/:solutionId', 200, 0.012);
  m.httpRequest('BREW', undefined, 404, 0.001);
  m.message('heartbeat', 'in');
  m.message('startSolution', 'out');
  m.commandDone('startSolution', 'ok', 0.2);
  m.commandDone('prepareSolution', 'timeout', 30);
  m.runFinished({ result: 'CompletedWithErrors', solutionType: 'Integration', processed: 21, failed: 1, seconds: 3 });
  m.heartbeat(AGENT, { outboxDepth: 4, outboxAgeSeconds: 9 });
  m.heartbeat('gone-agent', { outboxDepth: 100, outboxAgeSeconds: 999 });
  try {
    return parseExposition(await m.scrape());
  } finally {
    m.close();
  }
}

async function agentExposition(): Promise<Map<string, Family>> {
  const m = new AgentMetrics(
    {
      outbox: () => ({ depth: 2, oldestCreated: new Date(Date.now() - 5_000).toISOString() }),
      connected: () => true,
      runningWork: () => 1,
    },
    Date.now,
  );
  const at = new Date().toISOString();
  m.report({ kind: 'runStarted', runId: RUN, solutionId: SOLUTION, trigger: 'start', at });
  m.report({ kind: 'runProgress', runId: RUN, solutionId: SOLUTION, at, processed: 10, failed: 1 });
  m.batch();
  m.write({ seconds: 0.02, records: 10, refused: 1, ok: true });
  m.write({ seconds: 1.5, records: 5, refused: 5, ok: false });
  m.capture(SOLUTION, 123_456);
  m.capture('another', 1_000);
  m.report({
    kind: 'runFinished',
    runId: RUN,
    solutionId: SOLUTION,
    trigger: 'start',
    startedAt: new Date(Date.now() - 4_000).toISOString(),
    at,
    result: 'CompletedWithErrors',
    processed: 15,
    failed: 2,
    stopped: false,
    sourceDataLocal: true,
    statistics: [],
  });
  try {
    return parseExposition(await m.scrape());
  } finally {
    m.close();
  }
}

describe('metric names and labels', () => {
  it('the Service: prefix, units, _total on counters, no IDs in labels, every metric documented', async () => {
    const f = await serviceExposition();
    expect(conventionBreaches(f)).toEqual([]);
    expect(declared(f).filter((n) => !documented().has(n))).toEqual([]);
    expect(valueOf(f, 'ferry_http_requests_total', { method: 'other', route: 'unmatched', status_code: '404' })).toBe(
      1,
    );
    expect(valueOf(f, 'ferry_agents', { status: 'Running' })).toBe(2);
    expect(valueOf(f, 'ferry_agents', { status: 'other' })).toBe(1);
    // The outbox of an Agent no longer connected here is not counted.
    expect(valueOf(f, 'ferry_agents_outbox_messages')).toBe(4);
    expect(valueOf(f, 'ferry_agents_outbox_oldest_age_seconds')).toBe(9);
    expect(valueOf(f, 'ferry_solution_records_processed_total', { solution_type: 'Integration' })).toBe(21);
    expect(valueOf(f, 'ferry_event_queue_oldest_age_seconds')).toBe(12.5);
    expect(sumOf(f, 'ferry_channel_command_duration_seconds_count')).toBe(2);
  });

  it('an Agent: the same conventions, every metric documented, run IDs nowhere', async () => {
    const f = await agentExposition();
    expect(conventionBreaches(f)).toEqual([]);
    expect(declared(f).filter((n) => !documented().has(n))).toEqual([]);
    const text = [...f.values()].flatMap((x) => x.samples.map((s) => JSON.stringify(s.labels))).join('\n');
    expect(text).not.toContain(RUN);
    expect(valueOf(f, 'ferry_agent_records_processed_total')).toBe(15);
    expect(valueOf(f, 'ferry_agent_records_failed_total')).toBe(2);
    expect(valueOf(f, 'ferry_agent_records_written_total')).toBe(9);
    expect(valueOf(f, 'ferry_agent_records_refused_total')).toBe(6);
    expect(valueOf(f, 'ferry_agent_write_duration_seconds_count', { outcome: 'error' })).toBe(1);
    expect(valueOf(f, 'ferry_agent_outbox_messages')).toBe(2);
    expect(valueOf(f, 'ferry_agent_outbox_oldest_age_seconds')).toBeGreaterThanOrEqual(5);
    expect(valueOf(f, 'ferry_agent_channel_connected')).toBe(1);
    expect(valueOf(f, 'ferry_agent_change_capture_retained_bytes')).toBe(123_456);
  });

  it('the checker itself flags what the conventions forbid', () => {
    const bad = parseExposition(
      [
        '# HELP runs Runs.',
        '# TYPE runs counter',
        `runs{run="${RUN}"} 1`,
        '# HELP ferry_latency_ms Latency.',
        '# TYPE ferry_latency_ms histogram',
        'ferry_latency_ms_count 1',
        '# HELP ferry_queue_total Queue.',
        '# TYPE ferry_queue_total gauge',
        'ferry_queue_total{route="/v1/orgs/1/agents"} 1',
      ].join('\n'),
    );
    expect(conventionBreaches(bad)).toEqual([
      'runs: no ferry_ prefix',
      'runs: a counter not named …_total',
      `runs{run="${RUN}"}: a GUID in a label value`,
      'ferry_latency_ms: a histogram not in seconds or bytes',
      'ferry_latency_ms: not in a base unit',
      'ferry_queue_total: a gauge named …_total',
      'ferry_queue_total{route="/v1/orgs/1/agents"}: a raw path, not a route pattern',
    ]);
  });
});
