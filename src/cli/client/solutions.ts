/**
 * `ferry solutions list|show|start|stop --org N`: Solutions through the API, named by name or ID.
 * The runs of a Solution (watch, history, errors) are in solution-runs.ts; both share the command
 * wrapper, the models and {@link findSolution} from solutions-common.ts.
 *
 *   start: POST S/{id}/start ─▶ the run's ID (prepared first when needed) ─▶ --watch: watchRun
 *   stop:  POST S/{id}/stop  ─▶ the run stops between batches
 */
import { z } from 'zod';
import { orgOf } from './args.js';
import { resolveCredentials } from './config.js';
import { UsageError } from './errors.js';
import { ApiClient } from './http.js';
import { printFields, printJson, printTable, wantsJson } from './output.js';
import { findSolution, Solution, solutionsBase, solutionsCommand, when } from './solutions-common.js';
import { watchRun } from './solution-runs.js';

const PAGE = 1000;

const StartAnswer = z.object({
  solutionId: z.string(),
  runId: z.string().nullable(),
  started: z.boolean(),
  prepareId: z.string().nullable().optional(),
  message: z.string().nullable().optional(),
});

const StopAnswer = z.object({ solutionId: z.string(), stopping: z.boolean(), runId: z.string().nullable().optional() });

/** `ferry solutions list [--name PART] [--type T] [--status S]`. */
export const solutionsList = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  if (positionals.length > 0) throw new UsageError(`unexpected ${positionals[0]}: filter with --name PART`);
  const client = new ApiClient(resolveCredentials(env));
  const query = { solutionNameFilter: values.name, solutionType: values.type, solutionStatusFilter: values.status };
  const all: Solution[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await client.call('GET', solutionsBase(org), z.array(Solution), {
      query: { ...query, limit: PAGE, offset },
    });
    all.push(...page);
    if (page.length < PAGE) break;
  }
  if (wantsJson(values.json)) return printJson(all);
  printTable(all, [
    { header: 'ID', value: (s) => s.id },
    { header: 'NAME', value: (s) => s.name },
    { header: 'TYPE', value: (s) => s.solutionType },
    { header: 'STATUS', value: (s) => s.status ?? '' },
    { header: 'LAST RUN', value: (s) => when(s.lastRunTime) },
    { header: 'NEXT RUN', value: (s) => when(s.nextRunTime) },
  ]);
});

const entitiesOf = (s: Solution): string[] => s.replicationSettings?.entities ?? s.entities ?? [];

/** `ferry solutions show ID|NAME`: the Solution, and its Maps in run order or its entities. */
export const solutionsShow = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, positionals[0]);
  if (wantsJson(values.json)) return printJson(s);
  const replication = s.solutionType.toLowerCase() === 'replication';
  printFields([
    ['ID', s.id],
    ['Name', s.name],
    ['Description', s.description ?? ''],
    ['Type', s.solutionType],
    ['Status', s.status ?? ''],
    ['Agent', s.agentId ?? ''],
    ...(replication
      ? ([
          ['Source', s.connectionIdForSource ?? ''],
          ['Target', s.connectionIdForTarget ?? ''],
          ['Entities', `${s.replicationSettings?.selectionType ?? ''} ${entitiesOf(s).join(', ')}`.trim()],
          ['Bulk', s.checkForBulk ? 'yes' : 'no'],
        ] as const)
      : []),
    ['Last run', when(s.lastRunTime)],
    ['Next run', when(s.nextRunTime)],
    ['Modified', when(s.lastModificationDate)],
  ]);
  if (replication) return;
  process.stdout.write('\nMaps, in run order:\n');
  printTable(
    [...(s.mapLinks ?? [])].sort((a, b) => a.index - b.index),
    [
      { header: '#', value: (m) => String(m.index) },
      { header: 'MAP', value: (m) => String(m.id) },
      { header: 'NAME', value: (m) => m.name },
      { header: 'ENABLED', value: (m) => (m.enabled ? 'yes' : 'no') },
      { header: 'VALID', value: (m) => (m.valid ? 'yes' : 'no') },
    ],
  );
});

/** `ferry solutions start ID|NAME [--watch]`: exit 0 once started (with --watch: once it succeeded). */
export const solutionsStart = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, positionals[0]);
  const answer = await client.call('POST', `${solutionsBase(org)}/${s.id}/start`, StartAnswer);
  const json = wantsJson(values.json);
  if (!answer.runId) throw new UsageError(`Solution "${s.name}" did not start: ${answer.message ?? 'no run'}`, 1);
  if (!answer.started)
    process.stderr.write(`Solution "${s.name}" is already running (run ${answer.runId}); the start was ignored\n`);
  else if (answer.prepareId)
    process.stderr.write(
      `Preparing "${s.name}" first (prepare ${answer.prepareId}); run ${answer.runId} starts when it succeeds\n`,
    );
  else if (!json || values.watch) process.stderr.write(`Started run ${answer.runId} of "${s.name}"\n`);
  if (values.watch)
    return watchRun(client, org, s, { runId: answer.runId, prepareId: answer.prepareId ?? undefined, values });
  if (json) printJson(answer);
  else process.stdout.write(`${answer.runId}\n`);
});

/** `ferry solutions stop ID|NAME`: exit 0 whether a run was stopping or none ran. */
export const solutionsStop = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, positionals[0]);
  const answer = await client.call('POST', `${solutionsBase(org)}/${s.id}/stop`, StopAnswer);
  if (wantsJson(values.json)) return printJson(answer);
  process.stdout.write(
    answer.stopping
      ? `Stopping run ${answer.runId ?? ''} of "${s.name}": it stops after the batch in progress\n`
      : `Nothing runs for "${s.name}"\n`,
  );
});
