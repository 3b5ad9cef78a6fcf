/**
 * `ferry maps new SOLUTION --name N --source CONNECTION:ENTITY --target CONNECTION:ENTITY
 * [--action A]`: a Map scaffolded from the two entities' metadata (map-scaffold.ts) and created.
 *
 *   Solution, Connections by name or ID ─▶ GET C/{id}/entities/{entity}?agentId= the Solution's
 *   (POLL: loaded through that Agent the first time) ─▶ scaffoldMap ─▶ POST M/advanced
 *   ─▶ the Map, its check per Block, and what could not be matched
 */
import { z } from 'zod';
import { orgOf } from './args.js';
import { resolveCredentials } from './config.js';
import { findConnection } from './connections.js';
import { UsageError } from './errors.js';
import { ApiClient } from './http.js';
import { SCAFFOLD_ACTIONS, scaffoldMap, type Scaffold, type ScaffoldAction } from './map-scaffold.js';
import {
  mapsBase,
  mapsCommand,
  modelText,
  positionalsOf,
  refuseTakenName,
  reportSave,
  saveModel,
} from './maps-common.js';
import { printTable, wantsJson } from './output.js';
import { findSolution, secondsOption } from './solutions-common.js';

const DEFAULT_METADATA_TIMEOUT_S = 120;

const Field = z
  .object({
    fullName: z.string(),
    isPrimaryKey: z.boolean(),
    requiredInActionInput: z.boolean(),
    hasDefault: z.boolean().default(false),
    usedInActionInput: z.boolean(),
    usedInQuerySelect: z.boolean(),
  })
  .passthrough();

const Entity = z
  .object({
    fullName: z.string(),
    actions: z.array(z.object({ action: z.string(), operationName: z.string() }).passthrough()),
    fields: z.array(Field).default([]),
  })
  .passthrough();
type Entity = z.infer<typeof Entity>;

/** `--action` in any case; `Update/Insert` is UpdateInsert. */
function actionOf(text: string | undefined): ScaffoldAction {
  if (text === undefined) return 'Create';
  const key = text.replace(/\//g, '').toLowerCase();
  const action = SCAFFOLD_ACTIONS.find((a) => a.toLowerCase() === key);
  if (!action) throw new UsageError(`--action ${text}: give one of ${SCAFFOLD_ACTIONS.join(', ')}`);
  return action;
}

/** `CONNECTION:ENTITY`, split at the last colon (a Connection's name may hold one, an entity's seldom does). */
function endOf(flag: string, text: string | undefined): { connection: string; entity: string } {
  const at = text?.lastIndexOf(':') ?? -1;
  if (text === undefined || at <= 0 || at === text.length - 1) {
    throw new UsageError(`give --${flag} CONNECTION:ENTITY (a Connection's name or ID, then the entity)`);
  }
  return { connection: text.slice(0, at), entity: text.slice(at + 1) };
}

/** `ferry maps new`: exit 0 once created and valid, 1 when the Service refuses it or it does not validate. */
export const mapsNew = mapsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const [solutionName] = positionalsOf(positionals, ['SOLUTION']);
  if (!values.name) throw new UsageError("give the Map's name with --name NAME");
  const from = endOf('source', values.source);
  const to = endOf('target', values.target);
  const action = actionOf(values.action);
  const timeoutMs = (secondsOption('timeout', values.timeout) ?? DEFAULT_METADATA_TIMEOUT_S) * 1000;
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, solutionName);
  if (s.solutionType.toLowerCase() === 'replication') {
    throw new UsageError(`"${s.name}" is a Replication: it copies entities and has no Maps`);
  }
  if (!values['dry-run']) await refuseTakenName(client, org, s, values.name, 'choose another --name, or edit that Map');
  const [source, target] = await Promise.all([
    findConnection(client, org, from.connection),
    findConnection(client, org, to.connection),
  ]);
  const json = wantsJson(values.json);
  if (!json) process.stderr.write(`Reading ${source.name}:${from.entity} and ${target.name}:${to.entity}…\n`);
  // The first read of a Connection's metadata loads it through an Agent: the Solution's.
  const agent = s.agentId ? `?agentId=${s.agentId}` : '';
  const entityOf = (connectionId: string, entity: string): Promise<Entity> => {
    const path = `/v1/orgs/${org}/connections/${connectionId}/entities/${encodeURIComponent(entity)}${agent}`;
    return client.poll(path, Entity, () => true, { timeoutMs });
  };
  const [sourceEntity, targetEntity] = await Promise.all([
    entityOf(source.id, from.entity),
    entityOf(target.id, to.entity),
  ]);
  if (!sourceEntity.actions.some((a) => a.action === 'Query')) {
    throw new UsageError(`${source.name}:${sourceEntity.fullName} cannot be read (no Query action)`, 1);
  }
  const write = targetEntity.actions.find((a) => a.action === action);
  if (!write) {
    const has = targetEntity.actions.map((a) => a.action).filter((a) => a !== 'Query' && a !== 'NativeQuery');
    const what = `${target.name}:${targetEntity.fullName}`;
    throw new UsageError(`${what} does not support ${action}; it supports ${has.join(', ') || 'no write'}`, 1);
  }
  const scaffold = scaffoldMap({
    name: values.name,
    description: values.description,
    action,
    operationName: write.operationName,
    source: { connectionId: source.id, entity: sourceEntity },
    target: { connectionId: target.id, entity: targetEntity },
  });
  if (values['dry-run']) {
    process.stdout.write(modelText(scaffold.model));
    if (!json) printUnmatched(scaffold);
    return;
  }
  const saved = await saveModel(client, 'POST', `${mapsBase(org, s.id)}/advanced`, scaffold.model, values.comment);
  if (json) {
    const unmatched = { unusedSourceFields: scaffold.unusedSource, unmappedRequiredFields: scaffold.unmappedRequired };
    return reportSave(saved, 'Created', true, { ...unmatched, notes: scaffold.notes });
  }
  const flow = `${source.name}:${sourceEntity.fullName} → ${action} ${target.name}:${targetEntity.fullName}`;
  process.stdout.write(`${flow}, ${scaffold.pairs.length} fields matched\n`);
  printTable(scaffold.pairs, [
    { header: 'TARGET FIELD', value: (p) => p.target },
    { header: 'SOURCE FIELD', value: (p) => p.source },
  ]);
  printUnmatched(scaffold);
  return reportSave(saved, 'Created', false);
});

/** What the scaffold could not match, on stderr. */
function printUnmatched(scaffold: Scaffold): void {
  const lines = [
    ...(scaffold.unmappedRequired.length > 0
      ? [`Required target fields not mapped: ${scaffold.unmappedRequired.join(', ')}`]
      : []),
    ...(scaffold.unusedSource.length > 0 ? [`Source fields not used: ${scaffold.unusedSource.join(', ')}`] : []),
    ...scaffold.notes,
  ];
  for (const l of lines) process.stderr.write(`${l}\n`);
}
