/**
 * What the `ferry maps …` commands share: their options and usage, the models they read (checked
 * loosely: fields this client does not show may come and go), finding a Map by ID or name, the
 * Map model a file holds, and how a save's answer is told.
 */
import fs from 'node:fs/promises';
import type { parseArgs } from 'node:util';
import { z } from 'zod';
import { clientCommand, UsageError } from './errors.js';
import { apiErrorOf, type ApiClient } from './http.js';
import { printJson, printTable } from './output.js';
import { readStdin } from './prompt.js';
import { solutionsBase } from './solutions-common.js';

export const MAPS_USAGE = `Usage: ferry maps list --org N SOLUTION [--name PART] [--json]
       ferry maps show --org N SOLUTION MAP [--revision R] [--json]
       ferry maps new --org N SOLUTION --name NAME --source CONNECTION:ENTITY --target CONNECTION:ENTITY
                      [--action Create|Update|Upsert|Delete] [--description D] [--comment C]
                      [--timeout S] [--dry-run] [--json]
       ferry maps edit --org N SOLUTION MAP [--file FILE|-] [--comment C] [--json]
       ferry maps validate --org N SOLUTION MAP [--file FILE|-] [--timeout S] [--json]
       ferry maps export --org N SOLUTION MAP [--revision R] [--out FILE]
       ferry maps import --org N SOLUTION FILE|- [--map MAP] [--comment C] [--json]
       ferry maps revisions --org N SOLUTION MAP [--limit N] [--offset N] [--json]
       ferry maps revert --org N SOLUTION MAP --revision R [--json]

  A Solution and a Connection are named by ID or name; a Map by its ID (a number) or its name in
  any case. A Map model file is the JSON that export writes (docs/maps.md has its Blocks).
  new matches the target entity's fields to the source entity's by name, ignoring case and _, and
  lists what it could not match. edit opens the model in $VISUAL or $EDITOR on a terminal; else,
  or with --file, it saves the model of FILE (- for stdin).
  Exit codes: 0 done, 1 the Service refused or the Map does not validate, 2 bad usage, 4 login.`;

export const MAPS_OPTIONS = {
  org: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  name: { type: 'string' },
  description: { type: 'string' },
  source: { type: 'string' },
  target: { type: 'string' },
  action: { type: 'string' },
  comment: { type: 'string' },
  timeout: { type: 'string' },
  'dry-run': { type: 'boolean' },
  file: { type: 'string' },
  out: { type: 'string' },
  map: { type: 'string' },
  revision: { type: 'string' },
  limit: { type: 'string' },
  offset: { type: 'string' },
} as const;

export type MapsValues = ReturnType<
  typeof parseArgs<{ options: typeof MAPS_OPTIONS; allowPositionals: true }>
>['values'];

/** A `ferry maps` command: parses the options, prints the usage on --help, maps failures to exit codes. */
export const mapsCommand = (
  run: Parameters<typeof clientCommand<typeof MAPS_OPTIONS>>[2],
): ((argv: string[], env: NodeJS.ProcessEnv) => Promise<void>) => clientCommand(MAPS_OPTIONS, MAPS_USAGE, run);

/** The positionals a command takes, by name: too few or too many is a usage error. */
export function positionalsOf(positionals: readonly string[], names: readonly string[]): string[] {
  if (positionals.length < names.length) {
    throw new UsageError(`give ${names.slice(positionals.length).join(' and ')}\n\n${MAPS_USAGE}`);
  }
  if (positionals.length > names.length) throw new UsageError(`unexpected ${positionals[names.length]} (see --help)`);
  return [...positionals];
}

export const mapsBase = (orgId: number, solutionId: string): string => `${solutionsBase(orgId)}/${solutionId}/maps`;

/** A Map as the API answers it. */
export const MapAnswer = z
  .object({
    id: z.number(),
    name: z.string(),
    description: z.string().nullable().optional(),
    mapType: z.string().nullable().optional(),
    version: z.string(),
    revision: z.number(),
    revisionDate: z.string().nullable().optional(),
    revisionComment: z.string().nullable().optional(),
    valid: z.boolean(),
    lastModificationDate: z.string().nullable().optional(),
    lastRunDate: z.string().nullable().optional(),
    lockedBy: z.string().nullable().optional(),
    batchSize: z.number().nullable().optional(),
    blocks: z.array(z.record(z.string(), z.unknown())),
  })
  .passthrough();
export type MapAnswer = z.infer<typeof MapAnswer>;

/** One error of a saved Map, per Block. */
export const BlockError = z.object({
  blockId: z.string().nullable(),
  blockName: z.string().nullable(),
  code: z.string(),
  message: z.string(),
});
export type BlockError = z.infer<typeof BlockError>;

/** What creating or saving a Map answers: the Map, and what the check of the saved revision found. */
export const SaveAnswer = MapAnswer.extend({
  validated: z.boolean().optional(),
  errors: z.array(BlockError).optional(),
});
export type SaveAnswer = z.infer<typeof SaveAnswer>;

/** The Map with this ID (at `revision`, else its latest), or the one with this name in any case. */
export async function findMap(
  client: ApiClient,
  orgId: number,
  solution: { id: string; name: string },
  idOrName: string,
  revision?: number,
): Promise<MapAnswer> {
  const base = mapsBase(orgId, solution.id);
  const query = { revision };
  if (/^\d+$/.test(idOrName)) return client.call('GET', `${base}/${idOrName}`, MapAnswer, { query });
  const found = await client.call('GET', base, z.array(MapAnswer), { query: { name: idOrName, limit: 1000 } });
  const exact = found.filter((m) => m.name.toLowerCase() === idOrName.toLowerCase());
  if (exact.length > 1) {
    const ids = exact.map((m) => m.id).join(', ');
    throw new UsageError(`Several Maps of "${solution.name}" are named "${idOrName}": give its ID (${ids})`);
  }
  const [map] = exact;
  if (map) return revision === undefined ? map : client.call('GET', `${base}/${map.id}`, MapAnswer, { query });
  const names = found.slice(0, 5).map((m) => `"${m.name}"`);
  const hint = names.length > 0 ? `; names containing it: ${names.join(', ')}` : '';
  throw new UsageError(`No Map named "${idOrName}" in Solution "${solution.name}"${hint}`, 1);
}

/** Refuses a name a Map of the Solution already has (names are compared in any case); `what` says what to do. */
export async function refuseTakenName(
  client: ApiClient,
  orgId: number,
  solution: { id: string; name: string },
  name: string,
  what: string,
): Promise<void> {
  const found = await client.call('GET', mapsBase(orgId, solution.id), z.array(MapAnswer), {
    query: { name, limit: 1000 },
  });
  const taken = found.find((m) => m.name.toLowerCase() === name.toLowerCase());
  if (taken) {
    throw new UsageError(`"${solution.name}" already has a Map named "${taken.name}" (ID ${taken.id}): ${what}`, 1);
  }
}

/**
 * The Map model of an answer: what a save takes, without what the Service keeps itself (ID,
 * revision, validity, lock). `lastRunDate` (where net change reads from) is run state, not part of
 * the definition: kept only when `withRunState`.
 */
export function modelOf(map: MapAnswer, withRunState = false): Record<string, unknown> {
  return {
    version: map.version,
    name: map.name,
    ...(map.description ? { description: map.description } : {}),
    ...(map.mapType ? { mapType: map.mapType } : {}),
    ...(withRunState && map.lastRunDate ? { lastRunDate: map.lastRunDate } : {}),
    ...(typeof map.batchSize === 'number' ? { batchSize: map.batchSize } : {}),
    blocks: map.blocks,
  };
}

/** The JSON text of a model file, as a person reads and edits it. */
export const modelText = (model: unknown): string => `${JSON.stringify(model, null, 2)}\n`;

/** A Map model (a JSON object) from a file or `-` (stdin). */
export async function readModelFile(file: string, flag: string): Promise<Record<string, unknown>> {
  let text: string;
  try {
    text = file === '-' ? await readStdin() : await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`${flag}${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  return parseModel(text, `${flag}${file}`);
}

/** A Map model from JSON text: an object, or a usage error naming `where`. */
export function parseModel(text: string, where: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text);
  } catch (err) {
    throw new UsageError(`${where} is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw new UsageError(`${where}: a Map model is a JSON object (what ferry maps export writes)`);
  }
  return value as Record<string, unknown>;
}

const FieldErrors = z.object({ errors: z.array(z.object({ path: z.string(), message: z.string() }).passthrough()) });

/**
 * Saves a model (POST …/maps/advanced or PUT …/maps/advanced/{id}). A model the Service refuses
 * (400) is said with each field it names; the thrown error carries the status and code.
 */
export async function saveModel(
  client: ApiClient,
  method: 'POST' | 'PUT',
  path: string,
  model: unknown,
  comment: string | undefined,
): Promise<SaveAnswer> {
  const answer = await client.request(method, path, { body: model, query: { comment } });
  if (answer.status >= 400) {
    const fields = FieldErrors.safeParse(answer.body);
    if (fields.success) for (const e of fields.data.errors) process.stderr.write(`  ${e.path}: ${e.message}\n`);
    throw apiErrorOf(answer);
  }
  const parsed = SaveAnswer.safeParse(answer.body);
  if (!parsed.success) throw new UsageError(`${method} ${path} answered a body this client does not understand`, 1);
  return parsed.data;
}

/** The errors of a saved Map, one line each on stderr: the Block, the message and the code. */
export function printBlockErrors(errors: readonly BlockError[]): void {
  for (const e of errors) {
    process.stderr.write(`  ${e.blockName ? `Block ${e.blockName}` : 'Map'}: ${e.message} (${e.code})\n`);
  }
}

/**
 * Tells what a save answered: JSON (the saved Map with its check, and `extra`), or a line and, on
 * stderr, its errors per Block. Exit 1 when the saved revision does not validate.
 */
export function reportSave(
  saved: SaveAnswer,
  what: string,
  json: boolean,
  extra: Record<string, unknown> = {},
): number {
  if (json) printJson({ ...saved, ...extra });
  else process.stdout.write(`${what} Map ${saved.id} "${saved.name}", revision ${saved.revision}\n`);
  const errors = saved.errors ?? [];
  if (errors.length > 0) {
    process.stderr.write(`ferry: revision ${saved.revision} of "${saved.name}" does not validate:\n`);
    printBlockErrors(errors);
    return 1;
  }
  if (saved.validated === false) {
    process.stderr.write(
      `Not checked yet: a Connection's metadata is not loaded; ferry maps validate SOLUTION ${saved.id} checks it\n`,
    );
  } else if (!json) process.stdout.write("It validates against its Connections' metadata\n");
  return 0;
}

/** A Map's revisions. */
export const Revision = z
  .object({
    id: z.number(),
    revision: z.number(),
    revisionDate: z.string(),
    revisionComment: z.string().nullable().optional(),
    modifiedBy: z.string().nullable().optional(),
  })
  .passthrough();

/** A Block's one-line description: kind, Connection and entity, mappings. */
export function printBlocks(
  blocks: ReadonlyArray<Record<string, unknown>>,
  connectionNames: ReadonlyMap<string, string>,
): void {
  const rows: Array<{ depth: number; block: Record<string, unknown> }> = [];
  const walk = (list: unknown, depth: number): void => {
    if (!Array.isArray(list)) return;
    for (const b of list as Array<Record<string, unknown>>) {
      rows.push({ depth, block: b });
      for (const nested of ['then', 'else', 'body']) walk(b[nested], depth + 1);
    }
  };
  walk(blocks, 0);
  const text = (v: unknown): string => (typeof v === 'string' ? v : '');
  printTable(rows, [
    { header: 'BLOCK', value: (r) => `${'  '.repeat(r.depth)}${text(r.block['name'])}` },
    { header: 'TYPE', value: (r) => text(r.block['blockType']) },
    {
      header: 'CONNECTION',
      value: (r) => connectionNames.get(text(r.block['connectionId'])) ?? text(r.block['connectionId']),
    },
    { header: 'ENTITY', value: (r) => text(r.block['entity']) },
    {
      header: 'MAPPINGS',
      value: (r) => (Array.isArray(r.block['fieldMappings']) ? String(r.block['fieldMappings'].length) : ''),
    },
  ]);
}
