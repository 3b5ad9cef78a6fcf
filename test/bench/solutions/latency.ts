/** Scenario latency: POST …/start → the first row in the target. */
import pg from 'pg';
import { copyMap, createSolution, type Ctx, S_OF } from './context.js';
import { api, createConnection, prepare, startAndWait } from './service.js';
import { CSV_CONNECTOR, log, median, quantile, round, sleep, STARTS } from './settings.js';

export async function scenarioLatency(ctx: Ctx): Promise<Record<string, unknown>> {
  const tinyConn = await createConnection(ctx.sut, 'Tiny CSV', CSV_CONNECTOR, { folder: ctx.data.tinyFolder });
  const solutionId = await createSolution(ctx, { name: 'Start latency', solutionType: 'Integration', mapLinks: [] });
  await api(
    ctx.sut,
    'POST',
    `${S_OF(ctx, solutionId)}/maps/advanced`,
    copyMap('Tiny to lat_rows', tinyConn, 'tiny', ctx.pgConn, 'lat_rows', ['id']),
  );
  await prepare(ctx.sut, solutionId);
  const c = new pg.Client({ connectionString: ctx.pgUrl });
  await c.connect();
  const samples: Array<{
    firstRowMs: number;
    startCallMs: number;
    startLagMs: number;
    execMs: number;
    endMs: number;
    endLagMs: number;
  }> = [];
  try {
    for (let i = 0; i < STARTS + 1; i++) {
      await c.query('TRUNCATE lat_rows');
      const wall0 = Date.now();
      const run = await startAndWait(ctx.sut, solutionId, 120_000);
      const first = (
        await c.query<{ ms: string | null }>(
          'SELECT (extract(epoch FROM min(inserted_at)) * 1000)::float8 AS ms FROM lat_rows',
        )
      ).rows[0]?.ms;
      if (run.processed !== 10 || first === null || first === undefined)
        throw new Error(`latency run: ${JSON.stringify(run.execution)}`);
      // The first start is a warm-up (the Agent's first run of the Solution: its Connections open).
      if (i === 0) {
        log(`latency warm-up: first row after ${Math.round(Number(first) - wall0)} ms`);
        continue;
      }
      samples.push({
        firstRowMs: round(Number(first) - wall0),
        startCallMs: run.startCallMs,
        startLagMs: run.startLagMs,
        execMs: run.execMs,
        endMs: run.wallMs,
        endLagMs: run.endLagMs,
      });
      await sleep(200);
    }
  } finally {
    await c.end();
  }
  const stat = (k: keyof (typeof samples)[number]) => {
    const xs = samples.map((s) => s[k]);
    return { median: median(xs), p90: quantile(xs, 0.9), min: Math.min(...xs), max: Math.max(...xs) };
  };
  const firstRow = stat('firstRowMs');
  log(`latency: POST start → first row median ${firstRow.median} ms (p90 ${firstRow.p90}, max ${firstRow.max})`);
  return {
    starts: samples.length,
    firstRowMs: firstRow,
    startCallMs: stat('startCallMs'),
    startLagMs: stat('startLagMs'),
    execMs: stat('execMs'),
    endSeenMs: stat('endMs'),
    endLagMs: stat('endLagMs'),
    goals: { firstRowMedianMs: { goal: 1000, value: firstRow.median, met: firstRow.median < 1000 } },
  };
}
