/**
 * `ferry solutions create|update|prepare|delete --org N`: changing Solutions. create builds the
 * model from flags (over a model given with --data), naming the Agent and Connections by name or
 * ID; update reads the Solution, changes what is given and sends it back (PUT S); prepare waits
 * for the prepare job and answers its errors per Map; delete asks first on a terminal.
 */
import { z } from 'zod';
import { readData } from './api.js';
import { orgOf } from './args.js';
import { resolveCredentials } from './config.js';
import { findConnection } from './connections.js';
import { UsageError } from './errors.js';
import { apiErrorOf, ApiClient } from './http.js';
import { printJson, wantsJson } from './output.js';
import { canPrompt, promptLine } from './prompt.js';
import { waitPrepared } from './solution-runs.js';
import {
  findSolution,
  secondsOption,
  Solution,
  SOLUTIONS_USAGE,
  solutionsBase,
  solutionsCommand,
} from './solutions-common.js';

const DEFAULT_PREPARE_TIMEOUT_S = 300;

const Agent = z.object({ id: z.string(), name: z.string(), isConnected: z.boolean().optional() });

/** The Agent given (ID or name), else the Organization's only one. */
async function agentOf(client: ApiClient, org: number, given: string | undefined): Promise<string> {
  const agents = await client.call('GET', `/v1/orgs/${org}/agents`, z.array(Agent), { query: { limit: 1000 } });
  if (given) {
    const match = agents.filter((a) => a.id.toLowerCase() === given.toLowerCase() || a.name === given);
    if (match.length === 1 && match[0]) return match[0].id;
    throw new UsageError(
      match.length === 0
        ? `No Agent "${given}" in Organization ${org}`
        : `Several Agents are named "${given}": give its ID`,
      1,
    );
  }
  if (agents.length === 1 && agents[0]) return agents[0].id;
  throw new UsageError(
    agents.length === 0
      ? `Organization ${org} has no Agent: install one (ferry agent install)`
      : `Organization ${org} has several Agents (${agents.map((a) => a.name).join(', ')}): choose one with --agent ID|NAME`,
  );
}

/** `a, b` → `['a', 'b']`. */
const entityList = (text: string): string[] =>
  text
    .split(',')
    .map((e) => e.trim())
    .filter(Boolean);

/** The fields of a Solution that a PUT sets, as read: what an update starts from. */
function settable(s: Solution): Record<string, unknown> {
  const rs = s.solutionType.toLowerCase() === 'replication';
  return {
    id: s.id,
    name: s.name,
    description: s.description ?? null,
    solutionType: s.solutionType,
    agentId: s.agentId,
    isDisabled: s.isDisabled ?? false,
    ...(rs
      ? {
          connectionIdForSource: s.connectionIdForSource ?? null,
          connectionIdForTarget: s.connectionIdForTarget ?? null,
          replicationSettings: s.replicationSettings ?? null,
          checkForBulk: s.checkForBulk ?? false,
          mapLinks: [],
        }
      : {
          mapLinks: [...(s.mapLinks ?? [])]
            .sort((a, b) => a.index - b.index)
            .map((m) => ({ id: m.id, index: m.index })),
        }),
  };
}

/** The Map links in the order `--map-order` gives (IDs or names), the Maps it does not name after them in their order. */
function reordered(s: Solution, order: string): Array<{ id: number; index: number }> {
  const links = [...(s.mapLinks ?? [])].sort((a, b) => a.index - b.index);
  const wanted = order
    .split(',')
    .map((m) => m.trim())
    .filter(Boolean)
    .map((ref) => {
      const found = links.filter((m) => String(m.id) === ref || m.name.toLowerCase() === ref.toLowerCase());
      if (found.length !== 1 || !found[0])
        throw new UsageError(
          found.length === 0
            ? `--map-order: "${s.name}" has no Map "${ref}"; its Maps: ${links.map((m) => `${m.id} ${m.name}`).join(', ') || 'none'}`
            : `--map-order: several Maps are named "${ref}": give its ID`,
        );
      return found[0].id;
    });
  if (new Set(wanted).size !== wanted.length) throw new UsageError('--map-order names a Map twice');
  const ids = [...wanted, ...links.map((m) => m.id).filter((id) => !wanted.includes(id))];
  return ids.map((id, index) => ({ id, index }));
}

/** `ferry solutions update ID|NAME [--name N] [--description D] …`: a read-modify-write; what is not given is kept. */
export const solutionsUpdate = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  if (positionals.length > 1) throw new UsageError(`unexpected ${positionals[1]}\n\n${SOLUTIONS_USAGE}`);
  if (values.entities !== undefined && values.all) throw new UsageError('give --entities a,b or --all, not both');
  if (values.bulk && values['no-bulk']) throw new UsageError('give --bulk or --no-bulk, not both');
  if (values.enable && values.disable) throw new UsageError('give --enable or --disable, not both');
  const patch = values.data === undefined ? {} : (JSON.parse(await readData(values.data)) as unknown);
  if (typeof patch !== 'object' || patch === null || Array.isArray(patch))
    throw new UsageError('--data: give a part of a Solution model, a JSON object');
  const flags = [
    'name',
    'description',
    'agent',
    'source',
    'target',
    'entities',
    'all',
    'bulk',
    'no-bulk',
    'enable',
    'disable',
    'map-order',
  ] as const;
  if (values.data === undefined && !flags.some((f) => values[f] !== undefined))
    throw new UsageError(`give what changes (--name, --description, --agent, …, or --data)\n\n${SOLUTIONS_USAGE}`);
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, positionals[0]);
  const rs = s.solutionType.toLowerCase() === 'replication';
  const replicationOnly = (['source', 'target', 'entities', 'all', 'bulk', 'no-bulk'] as const).filter(
    (f) => values[f] !== undefined,
  );
  if (!rs && replicationOnly.length > 0)
    throw new UsageError(
      `--${replicationOnly[0]} is for a Replication; "${s.name}" is ${s.solutionType}: its Maps hold its Connections and entities`,
    );
  if (rs && values['map-order'] !== undefined)
    throw new UsageError(`--map-order is for Solutions with Maps; "${s.name}" is a Replication`);
  const body: Record<string, unknown> = { ...settable(s), ...patch };
  if (values.name !== undefined) body['name'] = values.name;
  if (values.description !== undefined) body['description'] = values.description;
  if (values.agent !== undefined) body['agentId'] = await agentOf(client, org, values.agent);
  if (values.enable) body['isDisabled'] = false;
  if (values.disable) body['isDisabled'] = true;
  if (values.bulk) body['checkForBulk'] = true;
  if (values['no-bulk']) body['checkForBulk'] = false;
  if (values['map-order'] !== undefined) body['mapLinks'] = reordered(s, values['map-order']);
  const source = values.source === undefined ? undefined : (await findConnection(client, org, values.source)).id;
  const target = values.target === undefined ? undefined : (await findConnection(client, org, values.target)).id;
  if (source !== undefined) body['connectionIdForSource'] = source;
  if (target !== undefined) body['connectionIdForTarget'] = target;
  if (values.all) body['replicationSettings'] = { selectionType: 'All', entities: [] };
  if (values.entities !== undefined)
    body['replicationSettings'] = { selectionType: 'Selected', entities: entityList(values.entities) };
  const moved =
    (source !== undefined && source !== s.connectionIdForSource) ||
    (target !== undefined && target !== s.connectionIdForTarget);
  // A new source or target needs the entities chosen again: the Service says so unless they are given.
  if (
    rs &&
    moved &&
    values.entities === undefined &&
    !values.all &&
    !('replicationSettings' in patch) &&
    !('entities' in patch)
  )
    delete body['replicationSettings'];
  const updated = await client.call('PUT', `${solutionsBase(org)}/${s.id}`, Solution, { body });
  if (wantsJson(values.json)) return printJson(updated);
  process.stdout.write(
    `Updated the ${updated.solutionType} Solution "${updated.name}" (${updated.id}), ${updated.status ?? ''}\n`,
  );
});

/** `ferry solutions create --name N --type T …`: 201 answers the Solution (a Replication then prepares itself). */
export const solutionsCreate = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  if (positionals.length > 0)
    throw new UsageError(`unexpected ${positionals[0]}: give the name with --name\n\n${SOLUTIONS_USAGE}`);
  const model = values.data === undefined ? {} : (JSON.parse(await readData(values.data)) as unknown);
  if (typeof model !== 'object' || model === null || Array.isArray(model))
    throw new UsageError('--data: give a Solution model, a JSON object');
  const body: Record<string, unknown> = { ...model };
  if (values.name !== undefined) body['name'] = values.name;
  if (values.type !== undefined) body['solutionType'] = values.type;
  if (values.description !== undefined) body['description'] = values.description;
  if (values.bulk) body['checkForBulk'] = true;
  if (!body['name'] || !body['solutionType'])
    throw new UsageError(
      `give --name NAME and --type Replication|Integration|IntegrationEvent|Migration\n\n${SOLUTIONS_USAGE}`,
    );
  if (values.entities !== undefined && values.all) throw new UsageError('give --entities a,b or --all, not both');
  const client = new ApiClient(resolveCredentials(env));
  if (values.agent !== undefined || !body['agentId']) body['agentId'] = await agentOf(client, org, values.agent);
  if (values.source !== undefined)
    body['connectionIdForSource'] = (await findConnection(client, org, values.source)).id;
  if (values.target !== undefined)
    body['connectionIdForTarget'] = (await findConnection(client, org, values.target)).id;
  if (values.all) body['replicationSettings'] = { selectionType: 'All', entities: [] };
  if (values.entities !== undefined)
    body['replicationSettings'] = { selectionType: 'Selected', entities: entityList(values.entities) };
  const created = await client.call('POST', solutionsBase(org), Solution, { body });
  if (wantsJson(values.json)) return printJson(created);
  const next =
    created.solutionType.toLowerCase() === 'replication'
      ? 'it prepares itself'
      : 'add its Maps, then ferry solutions prepare';
  process.stdout.write(
    `Created the ${created.solutionType} Solution "${created.name}" (${created.id}), ${created.status ?? ''}: ${next}\n`,
  );
});

/** `ferry solutions prepare ID|NAME`: exit 0 once prepared, 1 with its errors per Map. */
export const solutionsPrepare = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const timeoutS = secondsOption('timeout', values.timeout) ?? DEFAULT_PREPARE_TIMEOUT_S;
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, positionals[0]);
  const started = await client.call(
    'POST',
    `${solutionsBase(org)}/${s.id}/prepare`,
    z.object({ id: z.string() }).passthrough(),
  );
  const job = await waitPrepared(client, org, s, started.id, Date.now() + timeoutS * 1000);
  if (wantsJson(values.json)) printJson(job);
  else if (!job.hasError) process.stdout.write(`Prepared "${s.name}"\n`);
  return job.hasError ? 1 : 0;
});

/** `ferry solutions delete ID|NAME [--yes]`: asks on a terminal; elsewhere --yes is needed. */
export const solutionsDelete = solutionsCommand(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const client = new ApiClient(resolveCredentials(env));
  const s = await findSolution(client, org, positionals[0]);
  if (!values.yes) {
    if (!canPrompt()) throw new UsageError(`give --yes to delete "${s.name}" without a prompt`);
    const answer = await promptLine(`Delete the Solution "${s.name}", its Maps and its History? [y/N] `);
    if (!/^y(es)?$/i.test(answer.trim())) {
      process.stderr.write('Nothing deleted\n');
      return 1;
    }
  }
  const answer = await client.request('DELETE', `${solutionsBase(org)}/${s.id}`);
  if (answer.status >= 400) throw apiErrorOf(answer);
  if (wantsJson(values.json)) return printJson({ id: s.id, name: s.name, deleted: true });
  process.stdout.write(`Deleted the Solution "${s.name}"\n`);
});
