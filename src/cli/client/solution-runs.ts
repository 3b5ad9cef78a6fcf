/**
 * `ferry solutions watch|history|errors|reprocess --org N ID|NAME`: a Solution's runs, from History
 * and the run monitor. Watching is polling, in the Service's polling rate-limit bucket:
 *
 *   [prepare job until complete] ─▶ loop: GET H/{run} ended? ─no─▶ POST S/startmonitor (live counts)
 *                                          │ yes                   ─▶ progress line, sleep --interval
 *                                          ▼
 *                                   the run's summary; exit 0 CompletedSuccessfully, else 1
 *
 * Reprocessing: POST H/{id}/mark?mark=true (or: clear, then POST H/{id}/errors/{e}/mark for each
 * --error) ─▶ POST H/{id}/reprocess ─▶ a new run of the marked records ─▶ --watch: watchRun
 */
import { z } from 'zod';
import { orgOf } from './args.js';
import { resolveCredentials } from './config.js';
import { UsageError } from './errors.js';
import { apiErrorOf, ApiClient } from './http.js';
import { printFields, printJson, printTable, wantsJson } from './output.js';
import {
  Execution,
  findSolution,
  intOption,
  secondsOption,
  solutionsBase,
  solutionsCommand,
  when,
  type Solution,
  type SolutionsValues,
} from './solutions-common.js';

/** Every run, whatever its age (the API's default window is 45 days). */
const NO_LOWER_BOUND = '1753-01-01';
const DEFAULT_INTERVAL_S = 2;
/** Without a terminal, a progress line at most this often. */
const LOG_EVERY_MS = 10_000;

const Monitor = z.object({
  running: z.boolean(),
  runId: z.string().nullable(),
  startedAt: z.string().nullable(),
  recordsProcessed: z.number(),
  recordsFailed: z.number(),
});

export const PrepareJob = z.object({
  id: z.string(),
  isComplete: z.boolean(),
  hasError: z.boolean(),
  message: z.string().nullable().optional(),
  mapErrorModels: z
    .array(z.object({ mapId: z.number().nullable().optional(), message: z.string() }).passthrough())
    .nullable()
    .optional(),
});
type PrepareJob = z.infer<typeof PrepareJob>;

const RecordError = z
  .object({
    id: z.string(),
    mapName: z.string().nullable().optional(),
    blockName: z.string().nullable().optional(),
    sourceEntity: z.string().nullable().optional(),
    code: z.string().nullable().optional(),
    errorMessage: z.string().nullable().optional(),
    sourceKey: z.record(z.string(), z.unknown()).nullable().optional(),
    sourceRow: z.number().nullable().optional(),
  })
  .passthrough();
type RecordError = z.infer<typeof RecordError>;

const MarkAnswer = z.object({
  historyId: z.number(),
  mark: z.boolean(),
  changed: z.number(),
  reprocessRecordsRemaining: z.number(),
});

const ReprocessAnswer = z
  .object({
    solutionId: z.string(),
    historyId: z.number(),
    runId: z.string().nullable(),
    started: z.boolean(),
    records: z.number(),
    message: z.string(),
  })
  .passthrough();

const historyPath = (org: number, s: Solution): string => `${solutionsBase(org)}/${s.id}/history`;

/** The run named by `run` (its id or processExecutionId), else the Solution's latest. */
async function findRun(client: ApiClient, org: number, s: Solution, run: string | undefined): Promise<Execution> {
  if (run) return client.call('GET', `${historyPath(org, s)}/${encodeURIComponent(run)}`, Execution);
  const latest = await client.call('GET', historyPath(org, s), z.array(Execution), {
    query: { sortOrder: 'desc', limit: 1, laterThanDate: NO_LOWER_BOUND },
  });
  if (!latest[0]) throw new UsageError(`Solution "${s.name}" has not run yet`, 1);
  return latest[0];
}

/** `1:02:03.4`, or `12.3 s` under a minute. */
function duration(seconds: number | null | undefined): string {
  if (seconds === null || seconds === undefined) return '';
  if (seconds < 60) return `${seconds.toFixed(1)} s`;
  const h = Math.floor(seconds / 3600);
  const m = Math.floor((seconds % 3600) / 60);
  const s = (seconds % 60).toFixed(1).padStart(4, '0');
  return `${h}:${String(m).padStart(2, '0')}:${s}`;
}

const count = (n: number): string => n.toLocaleString('en-US');

function printSummary(e: Execution): void {
  printFields([
    ['Run', `${e.id} (${e.processExecutionId})`],
    ['Result', e.result ?? 'InProgress'],
    ['Processed', count(e.recordsProcessed)],
    ['Failed', count(e.recordsFailed)],
    ['Duration', duration(e.duration)],
    ['Started', when(e.start)],
    ['Stopped', when(e.stop)],
    ...(e.details ? ([['Details', e.details]] as const) : []),
  ]);
  const stats = e.mapStatistics ?? [];
  if (stats.length === 0) return;
  process.stdout.write('\n');
  printTable(stats, [
    { header: 'MAP/ENTITY', value: (m) => m.mapName ?? m.entityName ?? '' },
    { header: 'PROCESSED', value: (m) => count(m.recordsProcessed) },
    { header: 'FAILED', value: (m) => count(m.recordsFailed) },
    { header: 'FATAL', value: (m) => m.fatalError ?? '' },
  ]);
}

/** Waits for a prepare job to end; when it failed, its errors (per Map when it names them) are on stderr. */
export async function waitPrepared(
  client: ApiClient,
  org: number,
  s: Solution,
  prepareId: string,
  deadline: number,
): Promise<PrepareJob> {
  const job = await client.poll(`${solutionsBase(org)}/${s.id}/prepare/${prepareId}`, PrepareJob, (j) => j.isComplete, {
    timeoutMs: Math.max(1, deadline - Date.now()),
    defaultDelayMs: 1000,
  });
  if (!job.hasError) return job;
  const maps = (job.mapErrorModels ?? []).map((m) => `\n  Map ${m.mapId ?? '?'}: ${m.message}`).join('');
  process.stderr.write(`ferry: the prepare of "${s.name}" failed${maps || `: ${job.message ?? ''}`}\n`);
  return job;
}

/**
 * Watches a run until it ends (the latest when `runId` is not given), then prints its summary:
 * 0 when it completed successfully, else 1.
 */
export async function watchRun(
  client: ApiClient,
  org: number,
  s: Solution,
  opts: { runId?: string; prepareId?: string; values: SolutionsValues },
): Promise<number> {
  const intervalMs = (secondsOption('interval', opts.values.interval) ?? DEFAULT_INTERVAL_S) * 1000;
  const timeoutS = secondsOption('timeout', opts.values.timeout);
  const deadline = timeoutS === undefined ? Number.POSITIVE_INFINITY : Date.now() + timeoutS * 1000;
  const json = wantsJson(opts.values.json);
  if (opts.prepareId && (await waitPrepared(client, org, s, opts.prepareId, deadline)).hasError) return 1;
  const monitorPath = `${solutionsBase(org)}/${s.id}/startmonitor`;
  let runId = opts.runId;
  if (!runId) {
    const m = await client.call('POST', monitorPath, Monitor);
    if (!m.runId) throw new UsageError(`Solution "${s.name}" has not run yet`, 1);
    runId = m.runId;
  }
  const tty = process.stderr.isTTY === true;
  let previous: { at: number; processed: number } | undefined;
  let logged = 0;
  let ended: Execution | undefined;
  for (;;) {
    const answer = await client.request('GET', `${historyPath(org, s)}/${encodeURIComponent(runId)}`);
    if (answer.status >= 400 && answer.status !== 404) throw apiErrorOf(answer);
    const exec = answer.status === 404 ? undefined : Execution.parse(answer.body);
    if (exec?.result && exec.result !== 'InProgress') {
      ended = exec;
      break;
    }
    const m = await client.call('POST', monitorPath, Monitor);
    const live = m.running && m.runId === runId ? m : undefined;
    const processed = live?.recordsProcessed ?? exec?.recordsProcessed ?? 0;
    const failed = live?.recordsFailed ?? exec?.recordsFailed ?? 0;
    const now = Date.now();
    const rate = previous && now > previous.at ? ((processed - previous.processed) * 1000) / (now - previous.at) : 0;
    previous = { at: now, processed };
    const startedAt = live?.startedAt ?? exec?.start;
    const elapsed = startedAt ? duration(Math.max(0, (now - Date.parse(startedAt)) / 1000)) : 'waiting to start';
    const perSecond = count(Math.max(0, Math.round(rate)));
    const line = `run ${runId}: ${count(processed)} processed, ${count(failed)} failed, ${perSecond} records/s, ${elapsed}`;
    if (tty) process.stderr.write(`\r\x1b[K${line}`);
    else if (!json && now - logged >= LOG_EVERY_MS) {
      process.stderr.write(`${line}\n`);
      logged = now;
    }
    if (now + intervalMs > deadline) {
      if (tty) process.stderr.write('\n');
      throw new UsageError(`run ${runId} of "${s.name}" was still going after ${timeoutS} s`, 1);
    }
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
  if (tty) process.stderr.write('\r\x1b[K');
  if (json) printJson(ended);
  else printSummary(ended);
  if (ended.result === 'CompletedSuccessfully') return 0;
  const errors = `ferry solutions errors "${s.name}" --run ${ended.id}`;
  const failed = ended.recordsFailed > 0 ? ` with ${count(ended.recordsFailed)} failed records (${errors})` : '';
  process.stderr.write(`ferry: run ${ended.id} of "${s.name}" ended ${ended.result}${failed}\n`);
  return 1;
}

/** `ferry solutions watch ID|NAME [--run RUN]`. */
export const solutionsWatch = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, positionals[0]);
  return watchRun(client, org, s, { ...(values.run ? { runId: values.run } : {}), values });
});

/** `ferry solutions history ID|NAME [--result R] [--since DATE] [--limit N]`: newest first. */
export const solutionsHistory = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const limit = intOption('limit', values.limit, 1) ?? 20;
  const offset = intOption('offset', values.offset, 0) ?? 0;
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, positionals[0]);
  const query = { sortOrder: 'desc', limit, offset, result: values.result, laterThanDate: values.since };
  const answer = await client.request('GET', historyPath(org, s), { query });
  if (answer.status >= 400) throw apiErrorOf(answer);
  const runs = z.array(Execution).parse(answer.body);
  if (wantsJson(values.json)) return printJson(runs);
  printTable(runs, [
    { header: 'ID', value: (e) => String(e.id) },
    { header: 'RUN', value: (e) => e.processExecutionId },
    { header: 'STARTED', value: (e) => when(e.start) },
    { header: 'DURATION', value: (e) => duration(e.duration) },
    { header: 'RESULT', value: (e) => e.result ?? 'InProgress' },
    { header: 'PROCESSED', value: (e) => count(e.recordsProcessed) },
    { header: 'FAILED', value: (e) => count(e.recordsFailed) },
    { header: 'TRIGGER', value: (e) => `${e.trigger ?? ''}${e.isReprocessJob ? ' (reprocess)' : ''}` },
  ]);
  const total = Number(answer.headers.get('total-count') ?? runs.length);
  if (total > offset + runs.length)
    process.stderr.write(`${runs.length} of ${total}: --offset ${offset + runs.length} for more\n`);
});

function sourceOf(e: RecordError): string {
  if (e.sourceKey)
    return Object.entries(e.sourceKey)
      .map(([k, v]) => `${k}=${typeof v === 'string' ? v : JSON.stringify(v)}`)
      .join(' ');
  return e.sourceRow ? `row ${e.sourceRow}` : '';
}

/** `ferry solutions errors ID|NAME [--run RUN] [--limit N] [--offset N]`: a run's record errors in order of arrival. */
export const solutionsErrors = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const limit = intOption('limit', values.limit, 1) ?? 100;
  const offset = intOption('offset', values.offset, 0) ?? 0;
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, positionals[0]);
  const run = await findRun(client, org, s, values.run);
  const answer = await client.request('GET', `${historyPath(org, s)}/${run.id}/errors`, { query: { limit, offset } });
  if (answer.status >= 400) throw apiErrorOf(answer);
  const errors = z.array(RecordError).parse(answer.body);
  const total = Number(answer.headers.get('total-count') ?? errors.length);
  if (wantsJson(values.json))
    return printJson({ executionId: run.id, processExecutionId: run.processExecutionId, total, offset, errors });
  process.stderr.write(
    `Run ${run.id} (${run.processExecutionId}), ${run.result ?? 'InProgress'}: ${count(total)} record errors\n`,
  );
  printTable(errors, [
    { header: 'SOURCE', value: sourceOf },
    { header: 'CODE', value: (e) => e.code ?? '' },
    {
      header: 'MAP/ENTITY',
      value: (e) => [e.mapName ?? e.sourceEntity ?? '', e.blockName ?? ''].filter(Boolean).join(' / '),
    },
    { header: 'MESSAGE', value: (e) => e.errorMessage ?? '' },
  ]);
  if (total > offset + errors.length)
    process.stderr.write(`${errors.length} of ${total}: --offset ${offset + errors.length} for more\n`);
});

/**
 * `ferry solutions reprocess ID|NAME [--run RUN] [--error ID … | --marked] [--watch]`: the run's
 * failed records again, as a new run. Exit 0 once it started (with --watch: once it completed
 * successfully), 1 when nothing was reprocessed (none marked, or the Solution runs).
 */
export const solutionsReprocess = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  if (positionals.length > 1) throw new UsageError(`unexpected ${positionals[1]}: give errors with --error ID`);
  const errorIds = values.error ?? [];
  if (errorIds.length > 0 && values.marked) throw new UsageError('give --error ID … or --marked, not both');
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, positionals[0]);
  const run = await findRun(client, org, s, values.run);
  const H = `${historyPath(org, s)}/${run.id}`;
  if (errorIds.length > 0) {
    // Every one is checked before any mark changes.
    for (const id of errorIds) {
      const e = await client.call(
        'GET',
        `${H}/errors/${encodeURIComponent(id)}`,
        RecordError.extend({ canReprocess: z.boolean() }),
      );
      if (!e.canReprocess)
        throw new UsageError(
          `record error ${id} of run ${run.id} cannot be reprocessed (it was, or its record was not kept)`,
          1,
        );
    }
    await client.call('POST', `${H}/mark`, MarkAnswer, { query: { mark: false } });
    for (const id of errorIds)
      await client.call('POST', `${H}/errors/${encodeURIComponent(id)}/mark`, RecordError, { query: { mark: true } });
  } else if (!values.marked) {
    await client.call('POST', `${H}/mark`, MarkAnswer, { query: { mark: true } });
  }
  const answer = await client.call('POST', `${H}/reprocess`, ReprocessAnswer);
  const json = wantsJson(values.json);
  if (!answer.started || !answer.runId) {
    if (json) printJson(answer);
    process.stderr.write(`ferry: nothing reprocessed for run ${run.id} of "${s.name}": ${answer.message}\n`);
    return 1;
  }
  const what = `${count(answer.records)} failed record${answer.records === 1 ? '' : 's'} of run ${run.id}`;
  if (values.watch) {
    process.stderr.write(`Reprocessing ${what} of "${s.name}" as run ${answer.runId}\n`);
    return watchRun(client, org, s, { runId: answer.runId, values });
  }
  if (json) printJson(answer);
  else process.stdout.write(`Reprocessing ${what} of "${s.name}" as run ${answer.runId}\n`);
});
