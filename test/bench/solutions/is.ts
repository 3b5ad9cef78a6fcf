/** Scenarios is and failing: an Integration Solution, CSV → PostgreSQL, against psql \copy and the engine alone. */
import { psqlCopy, runChild } from './anchors.js';
import { checkpoint, copyMap, createSolution, type Ctx, engineConfig, S_OF, type Step } from './context.js';
import { cpuMeter } from './measure.js';
import { count, pgExec } from './postgres.js';
import { api, type ApiRun, prepare, startAndWait } from './service.js';
import { COLUMNS, FAILING_ROUNDS, FAILING_ROWS, loadavg, log, median, r3, round, ROUNDS, ROWS } from './settings.js';

export async function scenarioIs(ctx: Ctx, failing: boolean): Promise<Record<string, unknown>> {
  const table = failing ? 'is_fail' : 'is_rows';
  const map = copyMap(
    failing ? 'CSV to is_fail' : 'CSV to is_rows',
    ctx.csvConn,
    failing && FAILING_ROWS < ROWS ? 'head' : 'rows',
    ctx.pgConn,
    table,
    COLUMNS,
  );
  const rows = failing ? Math.min(FAILING_ROWS, ROWS) : ROWS;
  const solutionId = await createSolution(ctx, {
    name: failing ? 'IS bench, 10% failing' : 'IS bench',
    solutionType: 'Integration',
    mapLinks: [],
  });
  await api(ctx.sut, 'POST', `${S_OF(ctx, solutionId)}/maps/advanced`, map);
  await prepare(ctx.sut, solutionId);
  const expectFailed = failing ? Math.floor(rows / 10) : 0;
  const rounds: Array<Record<string, Step | number>> = [];
  const runs: ApiRun[] = [];
  const name = failing ? 'failing' : 'is';
  for (let i = 0; i < (failing ? FAILING_ROUNDS : ROUNDS); i++) {
    let psql: Step | undefined;
    if (!failing) {
      await pgExec(ctx.pgUrl, `TRUNCATE ${table}`);
      await checkpoint(ctx);
      const meter = cpuMeter();
      psql = { ...(await psqlCopy(ctx.pgUrl, table, ctx.data.csvFile)), ...meter() };
      log(`${name} round ${i + 1}: psql \\copy ${psql.rowsPerSec.toLocaleString('en')} rows/s (${psql.ms} ms)`);
    }

    await pgExec(ctx.pgUrl, `TRUNCATE ${table}`);
    await checkpoint(ctx);
    let meter = cpuMeter();
    const e = await runChild('engine', engineConfig(ctx, map));
    const engine: Step = {
      ms: e.ms,
      rowsPerSec: e.rowsPerSec,
      processMs: e.processMs,
      failed: e.failed,
      nodeCpuMs: e.cpuMs,
      peakRssMiB: e.peakRssMiB,
      pgCpuMs: meter().pgCpuMs,
    };
    if (e.rows !== rows || e.failed !== expectFailed)
      throw new Error(`the engine processed ${e.rows} and failed ${e.failed}`);
    log(
      `${name} round ${i + 1}: engine (ferry map run's path) ${engine.rowsPerSec.toLocaleString('en')} rows/s (${engine.ms} ms, Node CPU ${e.cpuMs} ms)`,
    );

    await pgExec(ctx.pgUrl, `TRUNCATE ${table}`);
    await checkpoint(ctx);
    meter = cpuMeter(ctx.agent.workerPid);
    const run = await startAndWait(ctx.sut, solutionId);
    runs.push(run);
    const is: Step = {
      ms: run.wallMs,
      rowsPerSec: run.rowsPerSec,
      toStopRowsPerSec: run.toStopRowsPerSec,
      startCallMs: run.startCallMs,
      startLagMs: run.startLagMs,
      execMs: run.execMs,
      execRowsPerSec: round((run.processed / run.execMs) * 1000),
      endLagMs: run.endLagMs,
      failed: run.failed,
      result: run.result,
      ...meter(),
    };
    const landed = await count(ctx.pgUrl, table);
    if (run.processed !== rows || run.failed !== expectFailed || landed !== rows - expectFailed)
      throw new Error(`the IS run: ${JSON.stringify(run.execution)}, ${landed} rows in ${table}`);
    log(
      `${name} round ${i + 1}: IS through the API ${is.rowsPerSec.toLocaleString('en')} rows/s (${is.ms} ms; execution ${run.execMs} ms; start lag ${run.startLagMs} ms, end lag ${run.endLagMs} ms; ${run.failed} failed)`,
    );
    rounds.push({
      ...(psql ? { psql } : {}),
      engine,
      is,
      isVsEngine: r3(is.rowsPerSec / engine.rowsPerSec),
      ...(psql
        ? { isVsPsql: r3(is.rowsPerSec / psql.rowsPerSec), engineVsPsql: r3(engine.rowsPerSec / psql.rowsPerSec) }
        : {}),
      load1: loadavg()[0] ?? 0,
    });
  }
  const med = (k: string): number => r3(median(rounds.map((r) => r[k] as number)));
  const rate = (k: string): number => round(median(rounds.map((r) => (r[k] as Step | undefined)?.rowsPerSec ?? 0)));
  const out: Record<string, unknown> = {
    rows,
    rounds,
    medians: {
      ...(failing
        ? {}
        : { psqlRowsPerSec: rate('psql'), isVsPsql: med('isVsPsql'), engineVsPsql: med('engineVsPsql') }),
      engineRowsPerSec: rate('engine'),
      isRowsPerSec: rate('is'),
      isVsEngine: med('isVsEngine'),
    },
  };
  if (!failing) out['goals'] = { isVsPsql: { goal: 0.7, value: med('isVsPsql'), met: med('isVsPsql') >= 0.7 } };
  else out['errors'] = await errorPages(ctx, solutionId, runs.at(-1) as ApiRun, expectFailed);
  return out;
}

/** The failing run's errors through the API: Total-Count, and pages at offset 0 and at a deep offset, timed. */
export async function errorPages(
  ctx: Ctx,
  solutionId: string,
  run: ApiRun,
  expected: number,
): Promise<Record<string, unknown>> {
  const H = `${S_OF(ctx, solutionId)}/history/${run.execution.id}/errors`;
  const timed = async (offset: number, limit: number): Promise<{ ms: number; n: number; total: number }> => {
    const t0 = performance.now();
    const res = await api<unknown[]>(ctx.sut, 'GET', `${H}?offset=${offset}&limit=${limit}`);
    return { ms: performance.now() - t0, n: res.body.length, total: Number(res.headers['total-count']) };
  };
  const total = (await timed(0, 1)).total;
  const deep = Math.max(0, total - 100);
  const first: number[] = [];
  const last: number[] = [];
  const full: number[] = [];
  let pageN = 0;
  for (let i = 0; i < 5; i++) {
    first.push((await timed(0, 100)).ms);
    const d = await timed(deep, 100);
    last.push(d.ms);
    pageN = d.n;
    full.push((await timed(Math.floor(total / 2), 1000)).ms);
  }
  return {
    totalCount: total,
    recordsFailed: run.failed,
    expected,
    matches: total === run.failed && total === expected,
    deepOffset: deep,
    deepPageRows: pageN,
    msPage100AtOffset0: r3(median(first)),
    msPage100AtDeepOffset: r3(median(last)),
    msPage1000AtMiddle: r3(median(full)),
  };
}
