/**
 * `ferry maps list|show|validate|revisions|revert --org N SOLUTION …`: a Solution's Maps through
 * the API. Scaffolding a Map is in map-new.ts; editing, export and import (a model as a JSON file)
 * in map-files.ts. All share maps-common.ts.
 *
 *   validate: POST M/{id}/validate [model] ─▶ validateId ─▶ GET M/{validateId}/validationresults
 *             (404 + Retry-After while it runs) ─▶ findings per Block; exit 1 with errors
 *   revert:   POST M/{id}/revert?revision=R ─▶ R's model saved as the next revision (not valid until
 *             validated, and the Solution prepared again)
 */
import { z } from 'zod';
import { orgOf } from './args.js';
import { resolveCredentials } from './config.js';
import { UsageError } from './errors.js';
import { ApiClient } from './http.js';
import {
  findMap,
  MapAnswer,
  mapsBase,
  mapsCommand,
  positionalsOf,
  printBlocks,
  readModelFile,
  Revision,
} from './maps-common.js';
import { printFields, printJson, printTable, wantsJson } from './output.js';
import { findSolution, intOption, secondsOption, solutionsBase, when } from './solutions-common.js';

const PAGE = 1000;
const DEFAULT_VALIDATE_TIMEOUT_S = 120;

const MapLink = z
  .object({ id: z.number(), index: z.number(), enabled: z.boolean(), lockedBy: z.string().nullable().optional() })
  .passthrough();

const ValidateStarted = z.object({ validateId: z.string() });
const Finding = z
  .object({
    blockId: z.string().nullable(),
    blockName: z.string().nullable(),
    severity: z.string(),
    code: z.string(),
    message: z.string(),
    field: z.string().nullable().optional(),
  })
  .passthrough();

const ConnectionName = z.object({ id: z.string(), name: z.string() }).passthrough();

const plural = (n: number, word: string): string => `${n} ${word}${n === 1 ? '' : 's'}`;

/** The Organization's Connection names by ID, to show Blocks by name. */
export async function connectionNames(client: ApiClient, org: number): Promise<Map<string, string>> {
  const all = await client.call('GET', `/v1/orgs/${org}/connections`, z.array(ConnectionName), {
    query: { limit: PAGE },
  });
  return new Map(all.map((c) => [c.id, c.name]));
}

/** `ferry maps list SOLUTION [--name PART]`: the Maps in run order. */
export const mapsList = mapsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const [solutionName] = positionalsOf(positionals, ['SOLUTION']);
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, solutionName);
  const all: MapAnswer[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await client.call('GET', mapsBase(org, s.id), z.array(MapAnswer), {
      query: { name: values.name, limit: PAGE, offset },
    });
    all.push(...page);
    if (page.length < PAGE) break;
  }
  if (wantsJson(values.json)) return printJson(all);
  const links = new Map((s.mapLinks ?? []).map((l) => [l.id, l]));
  printTable(all, [
    { header: '#', value: (m) => String(links.get(m.id)?.index ?? '') },
    { header: 'ID', value: (m) => String(m.id) },
    { header: 'NAME', value: (m) => m.name },
    { header: 'REV', value: (m) => String(m.revision) },
    { header: 'ENABLED', value: (m) => (links.get(m.id)?.enabled === false ? 'no' : 'yes') },
    { header: 'VALID', value: (m) => (m.valid ? 'yes' : 'no') },
    { header: 'BLOCKS', value: (m) => String(m.blocks.length) },
    { header: 'MODIFIED', value: (m) => when(m.lastModificationDate) },
  ]);
});

/** `ferry maps show SOLUTION MAP [--revision R]`: the Map and its Blocks. */
export const mapsShow = mapsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const [solutionName, mapName] = positionalsOf(positionals, ['SOLUTION', 'MAP']);
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, solutionName);
  const map = await findMap(client, org, s, mapName as string, intOption('revision', values.revision, 1));
  if (wantsJson(values.json)) return printJson(map);
  const comment = map.revisionComment;
  const [link, names] = await Promise.all([
    client.call('GET', `${solutionsBase(org)}/${s.id}/maplinks/${map.id}`, MapLink),
    connectionNames(client, org),
  ]);
  printFields([
    ['ID', String(map.id)],
    ['Name', map.name],
    ['Description', map.description ?? ''],
    ['Solution', s.name],
    ['Place', `${link.index} in the run order${link.enabled ? '' : ' (disabled)'}`],
    ['Revision', `${map.revision} of ${when(map.revisionDate)}${comment ? `: ${comment}` : ''}`],
    ['Valid', map.valid ? 'yes' : 'no'],
    ['Locked by', map.lockedBy ?? ''],
    ['Last run', when(map.lastRunDate)],
  ]);
  process.stdout.write('\n');
  printBlocks(map.blocks, names);
});

/** `ferry maps validate SOLUTION MAP [--file F]`: exit 0 without errors, 1 with (listed per Block). */
export const mapsValidate = mapsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const [solutionName, mapName] = positionalsOf(positionals, ['SOLUTION', 'MAP']);
  const timeoutS = secondsOption('timeout', values.timeout) ?? DEFAULT_VALIDATE_TIMEOUT_S;
  const model = values.file === undefined ? undefined : await readModelFile(values.file, '--file ');
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, solutionName);
  const map = await findMap(client, org, s, mapName as string);
  const base = mapsBase(org, s.id);
  const { validateId } = await client.call('POST', `${base}/${map.id}/validate`, ValidateStarted, { body: model });
  const results = `${base}/${validateId}/validationresults?limit=${PAGE}`;
  const findings = await client.poll(results, z.array(Finding), () => true, { timeoutMs: timeoutS * 1000 });
  const errors = findings.filter((f) => f.severity === 'error');
  const warnings = findings.length - errors.length;
  const counts = `${plural(errors.length, 'error')}, ${plural(warnings, 'warning')}`;
  const what = model ? `The model of ${values.file}` : `Map ${map.id} "${map.name}" (revision ${map.revision})`;
  if (wantsJson(values.json)) {
    printJson({ mapId: map.id, name: map.name, validateId, valid: errors.length === 0, findings });
  } else {
    if (findings.length > 0) {
      printTable(findings, [
        { header: 'SEVERITY', value: (f) => f.severity },
        { header: 'BLOCK', value: (f) => f.blockName ?? '(Map)' },
        { header: 'CODE', value: (f) => f.code },
        { header: 'FIELD', value: (f) => f.field ?? '' },
        { header: 'MESSAGE', value: (f) => f.message },
      ]);
    }
    if (errors.length === 0) process.stdout.write(`${what} validates (${counts})\n`);
  }
  if (errors.length > 0) process.stderr.write(`ferry: ${what} does not validate: ${counts}\n`);
  return errors.length > 0 ? 1 : 0;
});

/** `ferry maps revisions SOLUTION MAP`: newest first. */
export const mapsRevisions = mapsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const [solutionName, mapName] = positionalsOf(positionals, ['SOLUTION', 'MAP']);
  const limit = intOption('limit', values.limit, 1) ?? 100;
  const offset = intOption('offset', values.offset, 0);
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, solutionName);
  const map = await findMap(client, org, s, mapName as string);
  const revisions = await client.call('GET', `${mapsBase(org, s.id)}/${map.id}/revisions`, z.array(Revision), {
    query: { limit, offset },
  });
  if (wantsJson(values.json)) return printJson(revisions);
  printTable(revisions, [
    { header: 'REV', value: (r) => `${r.revision}${r.revision === map.revision ? '*' : ''}` },
    { header: 'SAVED', value: (r) => when(r.revisionDate) },
    { header: 'BY', value: (r) => r.modifiedBy ?? '' },
    { header: 'COMMENT', value: (r) => r.revisionComment ?? '' },
  ]);
});

/** `ferry maps revert SOLUTION MAP --revision R`: R's model becomes the next revision. */
export const mapsRevert = mapsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const [solutionName, mapName] = positionalsOf(positionals, ['SOLUTION', 'MAP']);
  const revision = intOption('revision', values.revision, 1);
  if (revision === undefined) {
    throw new UsageError('give the revision to restore with --revision R (see ferry maps revisions)');
  }
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, solutionName);
  const map = await findMap(client, org, s, mapName as string);
  const reverted = await client.call('POST', `${mapsBase(org, s.id)}/${map.id}/revert`, MapAnswer, {
    query: { revision },
  });
  if (wantsJson(values.json)) return printJson(reverted);
  const { id, name } = reverted;
  process.stdout.write(`Map ${id} "${name}": revision ${revision} restored as revision ${reverted.revision}\n`);
  const next = `ferry maps validate "${s.name}" ${id}, then ferry solutions prepare "${s.name}"`;
  process.stderr.write(`It is not valid until validated: ${next}\n`);
});
