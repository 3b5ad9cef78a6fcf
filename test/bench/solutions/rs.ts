/** Scenario rs: a Replication Solution, SQLite → PostgreSQL, against psql \copy, transfer() and replicate(). */
import fs from 'node:fs';
import path from 'node:path';
import { psqlCopy, runChild } from './anchors.js';
import { checkpoint, createSolution, type Ctx, type Step } from './context.js';
import { cpuMeter } from './measure.js';
import { count, pgExec, pgRows } from './postgres.js';
import { createConnection, prepare, startAndWait } from './service.js';
import { loadavg, log, median, r3, round, ROUNDS, ROWS, SQLITE_CONNECTOR } from './settings.js';

/** One round: psql \copy, transfer(), replicate() in a child, then the Solution with and without checkForBulk. */
async function rsRound(
  ctx: Ctx,
  i: number,
  solutionId: string,
  defaultId: string,
): Promise<Record<string, Step | number>> {
  await pgExec(ctx.pgUrl, 'TRUNCATE rows');
  await checkpoint(ctx);
  let meter = cpuMeter();
  const copy = await psqlCopy(ctx.pgUrl, 'rows', ctx.data.csvFile);
  const psql: Step = { ...copy, ...meter() };
  log(`rs round ${i + 1}: psql \\copy ${psql.rowsPerSec.toLocaleString('en')} rows/s (${psql.ms} ms)`);

  await pgExec(ctx.pgUrl, 'TRUNCATE rows');
  await checkpoint(ctx);
  meter = cpuMeter();
  const t = await runChild('transfer', { sqliteFile: ctx.data.sqliteFile, pgUrl: ctx.pgUrl, table: 'rows' });
  const transfer: Step = {
    ms: t.ms,
    rowsPerSec: t.rowsPerSec,
    processMs: t.processMs,
    nodeCpuMs: t.cpuMs,
    peakRssMiB: t.peakRssMiB,
    pgCpuMs: meter().pgCpuMs,
  };
  if (t.rows !== ROWS) throw new Error(`transfer wrote ${t.rows} rows`);
  log(
    `rs round ${i + 1}: transfer ${transfer.rowsPerSec.toLocaleString('en')} rows/s (${transfer.ms} ms, Node CPU ${t.cpuMs} ms)`,
  );

  // replicate() in a child process, into a database without the table, as the Agent's run does it.
  await pgExec(ctx.pgUrl, 'DROP TABLE rows');
  await checkpoint(ctx);
  meter = cpuMeter();
  const stateDir = path.join(ctx.data.dir, `rs-state-${i}`);
  const e = await runChild('replicate', { sqliteFile: ctx.data.sqliteFile, pgUrl: ctx.pgUrl, table: 'rows', stateDir });
  fs.rmSync(stateDir, { recursive: true, force: true });
  const engine: Step = {
    ms: e.ms,
    rowsPerSec: e.rowsPerSec,
    processMs: e.processMs,
    nodeCpuMs: e.cpuMs,
    peakRssMiB: e.peakRssMiB,
    pgCpuMs: meter().pgCpuMs,
  };
  if (e.rows !== ROWS) throw new Error(`replicate copied ${e.rows} rows`);
  log(
    `rs round ${i + 1}: replicate() ${engine.rowsPerSec.toLocaleString('en')} rows/s (${engine.ms} ms, Node CPU ${e.cpuMs} ms)`,
  );

  // A target made anew: the replication copies everything again (its checkpoint goes with the table).
  await pgExec(ctx.pgUrl, 'DROP TABLE rows');
  await checkpoint(ctx);
  meter = cpuMeter(ctx.agent.workerPid);
  const run = await startAndWait(ctx.sut, solutionId);
  const rs: Step = {
    ms: run.wallMs,
    rowsPerSec: run.rowsPerSec,
    toStopRowsPerSec: run.toStopRowsPerSec,
    startCallMs: run.startCallMs,
    startLagMs: run.startLagMs,
    execMs: run.execMs,
    execRowsPerSec: round((run.processed / run.execMs) * 1000),
    endLagMs: run.endLagMs,
    result: run.result,
    ...meter(),
  };
  if (run.processed !== ROWS || run.failed !== 0 || (await count(ctx.pgUrl, 'rows')) !== ROWS)
    throw new Error(`the RS run did not copy the ${ROWS} rows: ${JSON.stringify(run.execution)}`);
  log(
    `rs round ${i + 1}: RS through the API ${rs.rowsPerSec.toLocaleString('en')} rows/s (${rs.ms} ms; execution ${run.execMs} ms; start lag ${run.startLagMs} ms, end lag ${run.endLagMs} ms)`,
  );

  // The default path: the same copy without checkForBulk (records, a batch per write call).
  await pgExec(ctx.pgUrl, 'DROP TABLE rows');
  await checkpoint(ctx);
  meter = cpuMeter(ctx.agent.workerPid);
  const plain = await startAndWait(ctx.sut, defaultId);
  const rsDefault: Step = {
    ms: plain.wallMs,
    rowsPerSec: plain.rowsPerSec,
    execMs: plain.execMs,
    result: plain.result,
    ...meter(),
  };
  if (plain.processed !== ROWS || plain.failed !== 0 || (await count(ctx.pgUrl, 'rows')) !== ROWS)
    throw new Error(`the default RS run did not copy the ${ROWS} rows: ${JSON.stringify(plain.execution)}`);
  log(
    `rs round ${i + 1}: RS without checkForBulk ${rsDefault.rowsPerSec.toLocaleString('en')} rows/s (${rsDefault.ms} ms)`,
  );
  return {
    psql,
    transfer,
    replicate: engine,
    rs,
    rsDefault,
    rsDefaultVsRs: r3(rsDefault.rowsPerSec / rs.rowsPerSec),
    rsDefaultVsPsql: r3(rsDefault.rowsPerSec / psql.rowsPerSec),
    rsVsTransfer: r3(rs.rowsPerSec / transfer.rowsPerSec),
    rsVsPsql: r3(rs.rowsPerSec / psql.rowsPerSec),
    rsVsReplicate: r3(rs.rowsPerSec / engine.rowsPerSec),
    replicateVsTransfer: r3(engine.rowsPerSec / transfer.rowsPerSec),
    transferVsPsql: r3(transfer.rowsPerSec / psql.rowsPerSec),
    load1: loadavg()[0] ?? 0,
  };
}

export async function scenarioRs(ctx: Ctx): Promise<Record<string, unknown>> {
  const sqliteConn = await createConnection(ctx.sut, 'RS source', SQLITE_CONNECTOR, { file: ctx.data.sqliteFile });
  const solutionId = await createSolution(ctx, {
    name: 'RS bench',
    solutionType: 'Replication',
    connectionIdForSource: sqliteConn,
    connectionIdForTarget: ctx.pgConn,
    replicationSettings: { selectionType: 'Selected', entities: ['rows'] },
    checkForBulk: true,
  });
  await prepare(ctx.sut, solutionId);
  // The same Replication as public clients send it and SPEC.md defaults it: without checkForBulk.
  const defaultId = await createSolution(ctx, {
    name: 'RS bench (default, no checkForBulk)',
    solutionType: 'Replication',
    connectionIdForSource: sqliteConn,
    connectionIdForTarget: ctx.pgConn,
    replicationSettings: { selectionType: 'Selected', entities: ['rows'] },
  });
  await prepare(ctx.sut, defaultId);
  // A first run creates the table (ensureEntity): the anchors write into that very table.
  log('rs: warm-up run (creates the target table)');
  await pgExec(ctx.pgUrl, 'DROP TABLE IF EXISTS rows');
  const warm = await startAndWait(ctx.sut, solutionId);
  log(`rs warm-up: ${warm.rowsPerSec.toLocaleString('en')} rows/s (${warm.wallMs} ms, ${warm.result})`);
  if (warm.processed !== ROWS) throw new Error(`the RS run processed ${warm.processed} rows, not ${ROWS}`);
  const ddl = await pgRows<{ column_name: string; data_type: string }>(
    ctx.pgUrl,
    `SELECT column_name, data_type FROM information_schema.columns WHERE table_name = 'rows' ORDER BY ordinal_position`,
  );
  const rounds: Array<Record<string, Step | number>> = [];
  for (let i = 0; i < ROUNDS; i++) rounds.push(await rsRound(ctx, i, solutionId, defaultId));
  const med = (k: string): number => r3(median(rounds.map((r) => r[k] as number)));
  const rate = (k: string): number => round(median(rounds.map((r) => (r[k] as Step).rowsPerSec)));
  return {
    targetColumns: ddl.map((c) => `${c.column_name} ${c.data_type}`),
    warmUp: { ms: warm.wallMs, rowsPerSec: warm.rowsPerSec },
    rounds,
    medians: {
      psqlRowsPerSec: rate('psql'),
      transferRowsPerSec: rate('transfer'),
      replicateRowsPerSec: rate('replicate'),
      rsRowsPerSec: rate('rs'),
      rsDefaultRowsPerSec: rate('rsDefault'),
      rsDefaultVsRs: med('rsDefaultVsRs'),
      rsDefaultVsPsql: med('rsDefaultVsPsql'),
      rsVsTransfer: med('rsVsTransfer'),
      rsVsPsql: med('rsVsPsql'),
      rsVsReplicate: med('rsVsReplicate'),
      replicateVsTransfer: med('replicateVsTransfer'),
      transferVsPsql: med('transferVsPsql'),
    },
    goals: {
      rsVsTransfer: { goal: 0.9, value: med('rsVsTransfer'), met: med('rsVsTransfer') >= 0.9 },
      rsVsPsql: { goal: 0.75, value: med('rsVsPsql'), met: med('rsVsPsql') >= 0.75 },
      rsDefaultVsRs: { goal: 0.25, value: med('rsDefaultVsRs'), met: med('rsDefaultVsRs') >= 0.25 },
    },
  };
}
