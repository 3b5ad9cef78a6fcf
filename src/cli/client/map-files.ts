/**
 * `ferry maps edit|export|import`: a Map model as a JSON file. export writes the model of a
 * revision; import creates a Map from one (or, with --map, saves it as that Map's next revision);
 * edit opens the latest model in the person's editor and saves what they wrote.
 *
 *   edit:   GET M/{id} ─▶ temporary file ─▶ $VISUAL / $EDITOR ─▶ changed? ─▶ PUT M/advanced/{id}
 *           (--file F or no terminal: F's model)          └ refused or not JSON: the file is kept
 *
 * `lastRunDate` (where net change reads from) belongs to the Map, not to its definition: export
 * leaves it out, and a save keeps the Map's own unless the model sets one (null reads everything).
 */
import { spawnSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { z } from 'zod';
import { orgOf } from './args.js';
import { resolveCredentials } from './config.js';
import { UsageError } from './errors.js';
import { ApiClient } from './http.js';
import {
  findMap,
  type MapAnswer,
  mapsBase,
  mapsCommand,
  modelOf,
  modelText,
  parseModel,
  positionalsOf,
  readModelFile,
  refuseTakenName,
  reportSave,
  saveModel,
} from './maps-common.js';
import { printJson, printTable, wantsJson } from './output.js';
import { readStdin } from './prompt.js';
import { findSolution, intOption, type Solution } from './solutions-common.js';

const ImportAnswer = z.object({
  maps: z.array(z.object({ id: z.number(), name: z.string(), revision: z.number(), action: z.string() }).passthrough()),
  unresolvedConnections: z.array(
    z.object({ mapName: z.string(), connectionId: z.string(), connectionName: z.string().nullable() }).passthrough(),
  ),
});

/** The model with the Map's own lastRunDate, unless the model sets one. */
function keepingRunState(model: Record<string, unknown>, map: MapAnswer): Record<string, unknown> {
  return 'lastRunDate' in model || !map.lastRunDate ? model : { ...model, lastRunDate: map.lastRunDate };
}

/** Opens `file` in the person's editor and waits for it to close. */
function runEditor(env: NodeJS.ProcessEnv, file: string): void {
  const editor = env['VISUAL'] || env['EDITOR'] || (process.platform === 'win32' ? 'notepad' : 'vi');
  // Through a shell, so that an editor given with its flags (`code --wait`) works.
  const run =
    process.platform === 'win32'
      ? spawnSync(`${editor} "${file}"`, { stdio: 'inherit', shell: true })
      : spawnSync('/bin/sh', ['-c', `${editor} "$1"`, 'ferry-edit', file], { stdio: 'inherit' });
  if (run.error) throw new UsageError(`cannot run the editor ${editor}: ${run.error.message}`, 1);
  if (run.status !== 0) {
    throw new UsageError(`the editor ${editor} ended with exit ${run.status ?? run.signal}; nothing saved`, 1);
  }
}

/** `ferry maps edit SOLUTION MAP [--file F]`: exit 0 saved (or nothing changed), 1 refused or not valid. */
export const mapsEdit = mapsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const [solutionName, mapName] = positionalsOf(positionals, ['SOLUTION', 'MAP']);
  const onTerminal = process.stdin.isTTY === true && process.stdout.isTTY === true;
  if (values.file === undefined && !onTerminal) {
    throw new UsageError('not on a terminal: give the model to save with --file FILE (- for stdin)');
  }
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, solutionName);
  const map = await findMap(client, org, s, mapName as string);
  const json = wantsJson(values.json);
  const save = async (model: Record<string, unknown>): Promise<number> => {
    const target = `${mapsBase(org, s.id)}/advanced/${map.id}`;
    const saved = await saveModel(client, 'PUT', target, keepingRunState(model, map), values.comment);
    return reportSave(saved, 'Saved', json);
  };
  if (values.file !== undefined) return save(await readModelFile(values.file, '--file '));

  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'ferry-map-'));
  const file = path.join(dir, `map-${map.id}.json`);
  const before = modelText(modelOf(map, true));
  await fs.writeFile(file, before);
  runEditor(env, file);
  const after = await fs.readFile(file, 'utf8');
  if (after.trim() === before.trim()) {
    await fs.rm(dir, { recursive: true, force: true });
    process.stderr.write(`No change to "${map.name}": nothing saved\n`);
    return;
  }
  let code: number;
  try {
    code = await save(parseModel(after, 'The edited model'));
  } catch (err) {
    process.stderr.write(`Your edit is kept in ${file}: ferry maps edit "${s.name}" ${map.id} --file ${file}\n`);
    throw err;
  }
  if (code === 0) await fs.rm(dir, { recursive: true, force: true });
  else process.stderr.write(`The saved model is also in ${file}\n`);
  return code;
});

/** `ferry maps export SOLUTION MAP [--revision R] [--out FILE]`: the model, to stdout or a file. */
export const mapsExport = mapsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const [solutionName, mapName] = positionalsOf(positionals, ['SOLUTION', 'MAP']);
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, solutionName);
  const map = await findMap(client, org, s, mapName as string, intOption('revision', values.revision, 1));
  const text = modelText(modelOf(map));
  if (values.out === undefined) {
    process.stdout.write(text);
    return;
  }
  await fs.writeFile(values.out, text).catch((err: unknown) => {
    throw new UsageError(`--out ${values.out}: ${err instanceof Error ? err.message : String(err)}`, 1);
  });
  process.stderr.write(`Wrote Map ${map.id} "${map.name}" (revision ${map.revision}) to ${values.out}\n`);
});

/** `ferry maps import SOLUTION FILE|- [--map MAP]`: creates the Map, or saves it as MAP's next revision. */
export const mapsImport = mapsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const [solutionName, file] = positionalsOf(positionals, ['SOLUTION', 'FILE']) as [string, string];
  let text: string;
  try {
    text = file === '-' ? await readStdin() : await fs.readFile(file, 'utf8');
  } catch (err) {
    throw new UsageError(`${file}: ${err instanceof Error ? err.message : String(err)}`);
  }
  const json = wantsJson(values.json);
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, solutionName);
  if (text.trimStart().startsWith('[')) {
    if (values.map !== undefined) {
      throw new UsageError(`${file} holds a list of Maps (an export of the Solution): import it without --map`);
    }
    return importExportFile(client, org, s, text, json);
  }
  const model = parseModel(text, file);
  const comment = values.comment ?? (file === '-' ? 'Imported' : `Imported from ${path.basename(file)}`);
  const name = typeof model['name'] === 'string' ? model['name'] : undefined;
  if (values.map === undefined) {
    if (name !== undefined) {
      await refuseTakenName(client, org, s, name, 'replace it with --map ID, or rename the model');
    }
    const { lastRunDate: _ignored, ...definition } = model;
    const saved = await saveModel(client, 'POST', `${mapsBase(org, s.id)}/advanced`, definition, comment);
    return reportSave(saved, 'Created', json);
  }
  const map = await findMap(client, org, s, values.map);
  const target = `${mapsBase(org, s.id)}/advanced/${map.id}`;
  const saved = await saveModel(client, 'PUT', target, keepingRunState(model, map), comment);
  return reportSave(saved, 'Replaced', json);
});

/**
 * A file of several Maps (the Service's export, or the original service's) goes through the
 * import endpoint: same-named Maps get a new revision, others are added; Connections it cannot
 * match by ID, name or alias are said.
 */
async function importExportFile(
  client: ApiClient,
  org: number,
  s: Solution,
  text: string,
  json: boolean,
): Promise<number> {
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch (err) {
    throw new UsageError(`the file is not JSON: ${err instanceof Error ? err.message : String(err)}`);
  }
  const answer = await client.call('POST', `${mapsBase(org, s.id)}/import`, ImportAnswer, { body });
  if (json) printJson(answer);
  else {
    printTable(answer.maps, [
      { header: 'ID', value: (m) => String(m.id) },
      { header: 'NAME', value: (m) => m.name },
      { header: 'REV', value: (m) => String(m.revision) },
      { header: 'DONE', value: (m) => m.action },
    ]);
  }
  for (const u of answer.unresolvedConnections) {
    const which = u.connectionName ? `named "${u.connectionName}"` : u.connectionId;
    process.stderr.write(`Map "${u.mapName}": no Connection ${which} here\n`);
  }
  return 0;
}
