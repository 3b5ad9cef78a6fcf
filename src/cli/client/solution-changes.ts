/**
 * `ferry solutions create|prepare|delete --org N`: changing Solutions. create builds the model from
 * flags (over a model given with --data), naming the Agent and Connections by name or ID; prepare
 * waits for the prepare job and answers its errors per Map; delete asks first on a terminal.
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
  if (values.entities !== undefined) {
    const entities = values.entities
      .split(',')
      .map((e) => e.trim())
      .filter(Boolean);
    body['replicationSettings'] = { selectionType: 'Selected', entities };
  }
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
