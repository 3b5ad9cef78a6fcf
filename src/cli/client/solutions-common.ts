/**
 * What the `ferry solutions …` commands share: their options and usage, the models they read
 * (checked loosely: fields this client does not show may come and go), and finding a Solution by
 * name or ID.
 */
import type { parseArgs } from 'node:util';
import { z } from 'zod';
import { isGuid } from './connectors.js';
import { clientCommand, UsageError } from './errors.js';
import type { ApiClient } from './http.js';

export const SOLUTIONS_USAGE = `Usage: ferry solutions list --org N [--name PART] [--type T] [--status S] [--json]
       ferry solutions show --org N ID|NAME [--json]
       ferry solutions start --org N ID|NAME [--watch [--interval S] [--timeout S]] [--json]
       ferry solutions stop --org N ID|NAME [--json]
       ferry solutions watch --org N ID|NAME [--run RUN] [--interval S] [--timeout S] [--json]
       ferry solutions history --org N ID|NAME [--result R] [--since DATE] [--limit N] [--json]
       ferry solutions errors --org N ID|NAME [--run RUN] [--limit N] [--offset N] [--json]
       ferry solutions create --org N --name NAME --type Replication|Integration|IntegrationEvent|Migration
                              [--agent ID|NAME] [--description D] [--data JSON|@FILE|-] [--json]
                              Replication: --source CONN --target CONN (--entities a,b | --all) [--bulk]
       ferry solutions update --org N ID|NAME [--name N] [--description D] [--agent ID|NAME]
                              [--enable | --disable] [--map-order MAP,MAP…] [--data JSON|@FILE|-] [--json]
                              Replication: [--source CONN] [--target CONN] [--entities a,b | --all]
                              [--bulk | --no-bulk]
       ferry solutions reprocess --org N ID|NAME [--run RUN] [--error ID … | --marked]
                                 [--watch [--interval S] [--timeout S]] [--json]
       ferry solutions prepare --org N ID|NAME [--timeout S] [--json]
       ferry solutions delete --org N ID|NAME [--yes] [--json]
       ferry solutions schedule --org N ID|NAME [--json]                   (shows it)
       ferry solutions schedule --org N ID|NAME --on-demand | --once DATETIME
                                | [--every-days N [--from DATE] | --weekdays mon,fri | --month-days 1,15,last]
                                  (--at HH:MM | --hourly-at MM | --every 30m|2h) [--time-zone TZ]
                                | --data JSON|@FILE|-

  A Solution, an Agent and a Connection are named by ID or name (a Solution's in any case). RUN is
  a History execution's id or its processExecutionId (the runId a start answers); without --run,
  the latest run.
  watch shows the run's progress until it ends, then its summary: exit 0 when it completed
  successfully, 1 otherwise (start --watch the same).
  update reads the Solution, changes what is given and sends it back; --data is a part of the
  model to merge (the flags win over it). A new source or target needs --entities or --all.
  reprocess marks the run's failed records (all, or --error ID …; --marked: those marked already)
  and reprocesses them as a new run: exit 0 once it started (with --watch: once it succeeded).`;

export const SOLUTIONS_OPTIONS = {
  org: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  name: { type: 'string' },
  type: { type: 'string' },
  status: { type: 'string' },
  watch: { type: 'boolean' },
  run: { type: 'string' },
  interval: { type: 'string' },
  timeout: { type: 'string' },
  result: { type: 'string' },
  since: { type: 'string' },
  limit: { type: 'string' },
  offset: { type: 'string' },
  agent: { type: 'string' },
  description: { type: 'string' },
  source: { type: 'string' },
  target: { type: 'string' },
  entities: { type: 'string' },
  all: { type: 'boolean' },
  bulk: { type: 'boolean' },
  'no-bulk': { type: 'boolean' },
  enable: { type: 'boolean' },
  disable: { type: 'boolean' },
  'map-order': { type: 'string' },
  error: { type: 'string', multiple: true },
  marked: { type: 'boolean' },
  data: { type: 'string' },
  yes: { type: 'boolean', short: 'y' },
  'on-demand': { type: 'boolean' },
  once: { type: 'string' },
  'every-days': { type: 'string' },
  from: { type: 'string' },
  weekdays: { type: 'string' },
  'month-days': { type: 'string' },
  at: { type: 'string' },
  'hourly-at': { type: 'string' },
  every: { type: 'string' },
  'time-zone': { type: 'string' },
} as const;

export type SolutionsValues = ReturnType<
  typeof parseArgs<{ options: typeof SOLUTIONS_OPTIONS; allowPositionals: true }>
>['values'];

/** A `ferry solutions` command: parses the options, prints the usage on --help, maps failures to exit codes. */
export const solutionsCommand = (
  run: Parameters<typeof clientCommand<typeof SOLUTIONS_OPTIONS>>[2],
): ((argv: string[], env: NodeJS.ProcessEnv) => Promise<void>) =>
  clientCommand(SOLUTIONS_OPTIONS, SOLUTIONS_USAGE, run);

export const solutionsBase = (orgId: number): string => `/v1/orgs/${orgId}/solutions`;

export const Solution = z
  .object({
    id: z.string(),
    name: z.string(),
    description: z.string().nullable().optional(),
    solutionType: z.string(),
    status: z.string().nullable().optional(),
    agentId: z.string().nullable().optional(),
    connectionIdForSource: z.string().nullable().optional(),
    connectionIdForTarget: z.string().nullable().optional(),
    replicationSettings: z
      .object({ selectionType: z.string().nullable().optional(), entities: z.array(z.string()).nullable().optional() })
      .nullable()
      .optional(),
    entities: z.array(z.string()).nullable().optional(),
    checkForBulk: z.boolean().nullable().optional(),
    isDisabled: z.boolean().nullable().optional(),
    lastRunTime: z.string().nullable().optional(),
    nextRunTime: z.string().nullable().optional(),
    lastModificationDate: z.string().nullable().optional(),
    mapLinks: z
      .array(
        z
          .object({ id: z.number(), index: z.number(), name: z.string(), enabled: z.boolean(), valid: z.boolean() })
          .passthrough(),
      )
      .nullable()
      .optional(),
  })
  .passthrough();
export type Solution = z.infer<typeof Solution>;

/** An execution of History. */
export const Execution = z
  .object({
    id: z.number(),
    processExecutionId: z.string(),
    start: z.string(),
    stop: z.string().nullable(),
    duration: z.number().nullable().optional(),
    result: z.string().nullable(),
    details: z.string().nullable().optional(),
    recordsProcessed: z.number(),
    recordsFailed: z.number(),
    trigger: z.string().nullable().optional(),
    isReprocessJob: z.boolean().optional(),
    mapStatistics: z
      .array(
        z
          .object({
            mapName: z.string().nullable().optional(),
            entityName: z.string().nullable().optional(),
            recordsProcessed: z.number(),
            recordsFailed: z.number(),
            fatalError: z.string().nullable().optional(),
          })
          .passthrough(),
      )
      .optional(),
  })
  .passthrough();
export type Execution = z.infer<typeof Execution>;

/** The Solution with this ID, or the one with this name (names are unique ignoring case). */
export async function findSolution(client: ApiClient, orgId: number, idOrName: string | undefined): Promise<Solution> {
  if (!idOrName) throw new UsageError(`give the Solution's ID or name\n\n${SOLUTIONS_USAGE}`);
  if (isGuid(idOrName)) return client.call('GET', `${solutionsBase(orgId)}/${idOrName}`, Solution);
  const found = await client.call('GET', solutionsBase(orgId), z.array(Solution), {
    query: { solutionNameFilter: idOrName, limit: 1000 },
  });
  const exact = found.filter((s) => s.name.toLowerCase() === idOrName.toLowerCase());
  if (exact[0]) return exact[0];
  const hint =
    found.length > 0
      ? `; names containing it: ${found
          .slice(0, 5)
          .map((s) => `"${s.name}"`)
          .join(', ')}`
      : '';
  throw new UsageError(`No Solution named "${idOrName}" in Organization ${orgId}${hint}`, 1);
}

/** A time as the tables show it: `2026-11-29 10:04:31` in UTC, or blank. */
export function when(iso: string | null | undefined): string {
  if (!iso) return '';
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : `${d.toISOString().slice(0, 19).replace('T', ' ')}Z`;
}

/** A whole number option at least `min`, or undefined when not given. */
export function intOption(flag: string, text: string | undefined, min: number): number | undefined {
  if (text === undefined) return undefined;
  if (!/^\d+$/.test(text) || Number(text) < min)
    throw new UsageError(`--${flag} ${text}: give a whole number of at least ${min}`);
  return Number(text);
}

/** A number of seconds above zero, or undefined when not given. */
export function secondsOption(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isFinite(n) || n <= 0) throw new UsageError(`--${flag} ${text}: give a number of seconds`);
  return n;
}
