/**
 * `ferry connections list|get|create|update|test --org N`: Connections through the API, with
 * property values encrypted and decrypted by the client (crypto.ts) so nobody encrypts by hand.
 *
 *   create: --set k=v … ─▶ prompt for protected ones not given (terminal) ─▶ encrypt ─▶ POST C
 *   update: GET C/{id} ─▶ the values given replace theirs (encrypted) ─▶ PUT C/{id} with the rest
 *           as read (protected ones blank: the Service keeps them)
 *   get:    GET C/{id} ─▶ decrypt the plain properties, mask the protected ones (--show-secrets)
 *   test:   POST C/{id}/test?agentId= ─▶ GET C/test/{commandId} until Completed ─▶ SUCCESS or why
 *
 * Protected properties (inputType Password in the Connector's form) are never echoed when typed
 * and never printed unless --show-secrets is given; the Service itself never returns them.
 */
import { z } from 'zod';
import { chooseAgent } from './agents.js';
import { keyValues, orgOf } from './args.js';
import { resolveCredentials } from './config.js';
import { findConnector, isGuid, isProtected, propertyForm, type PropertyForm } from './connectors.js';
import { cryptoTokenOf, decryptValue, encryptValue } from './crypto.js';
import { clientCommand, UsageError } from './errors.js';
import { ApiClient } from './http.js';
import { printFields, printJson, printTable, wantsJson } from './output.js';
import { canPrompt, promptSecret } from './prompt.js';

const USAGE = `Usage: ferry connections list --org N [--json]
       ferry connections get --org N ID|NAME [--show-secrets] [--json]
       ferry connections create --org N --connector NAME|ID --name NAME [--set key=value …]
                                [--color #AARRGGBB] [--alias A] [--no-prompt] [--json]
       ferry connections update --org N ID|NAME [--name NAME] [--set key=value …]
                                [--color #AARRGGBB] [--alias A] [--json]
       ferry connections test --org N ID|NAME [--agent ID|NAME] [--timeout SECONDS] [--json]

  create encrypts the values with the Organization's crypto token; on a terminal it asks (without
  echo) for the protected properties not given with --set (Enter leaves one blank): all of them
  when none is given, else only the required ones.
  update changes only what is given: the other properties, protected ones included, keep their
  values (--set key= blanks one).
  test runs the test on the given Agent, else on the only connected Agent with the Connector.`;

const Connection = z.object({
  id: z.string(),
  name: z.string(),
  alias: z.string(),
  connectorId: z.string(),
  connectorType: z.string(),
  color: z.string(),
  properties: z.array(z.object({ key: z.string(), value: z.string().nullable() })),
  createDateTime: z.string().nullable().optional(),
  lastModificationDateTime: z.string().nullable().optional(),
});
type Connection = z.infer<typeof Connection>;

const TestStarted = z.object({ commandId: z.string() });
const TestStatus = z.object({
  commandId: z.string(),
  name: z.string().nullable().optional(),
  status: z.string(),
  reply: z.string().nullable(),
});

const DEFAULT_COLOR = '#FF2F6FEB';
const MASK = '********';
const PAGE = 1000;

/** A Connection as the client shows it: property values decrypted, protected ones masked (null). */
interface ShownConnection extends Omit<Connection, 'properties'> {
  properties: Array<{ key: string; value: string | null; protected: boolean }>;
}

const OPTIONS = {
  org: { type: 'string' },
  json: { type: 'boolean' },
  help: { type: 'boolean', short: 'h' },
  'show-secrets': { type: 'boolean' },
  connector: { type: 'string' },
  name: { type: 'string' },
  set: { type: 'string', multiple: true },
  color: { type: 'string' },
  alias: { type: 'string' },
  'no-prompt': { type: 'boolean' },
  agent: { type: 'string' },
  timeout: { type: 'string' },
} as const;

const command = (run: Parameters<typeof clientCommand<typeof OPTIONS>>[2]) => clientCommand(OPTIONS, USAGE, run);

const base = (orgId: number): string => `/v1/orgs/${orgId}/connections`;

/** The Connection with this ID, or the only one with this name. */
export async function findConnection(
  client: ApiClient,
  orgId: number,
  idOrName: string | undefined,
): Promise<Connection> {
  if (!idOrName) throw new UsageError(`give the Connection's ID or name\n\n${USAGE}`);
  if (isGuid(idOrName)) return client.call('GET', `${base(orgId)}/${idOrName}`, Connection);
  const found = await client.call('GET', base(orgId), z.array(Connection), { query: { name: idOrName } });
  if (found.length === 1 && found[0]) return found[0];
  if (found.length === 0) throw new UsageError(`No Connection named "${idOrName}" in Organization ${orgId}`, 1);
  throw new UsageError(`Several Connections are named "${idOrName}": give its ID`);
}

/** Decrypts what may be shown; protected values stay null unless `showSecrets` and the Service sent one. */
function shown(conn: Connection, form: PropertyForm | undefined, token: string, showSecrets: boolean): ShownConnection {
  const protectedKeys = new Set((form ?? []).filter(isProtected).map((d) => d.propertyName.toLowerCase()));
  const properties = conn.properties.map((p) => {
    // Without the form nothing is known to be safe to show.
    const prot = form === undefined || protectedKeys.has(p.key.toLowerCase());
    if (prot && !showSecrets) return { key: p.key, value: null, protected: prot };
    if (!p.value) return { key: p.key, value: prot ? null : '', protected: prot };
    return { key: p.key, value: decryptValue(p.value, token, p.key), protected: prot };
  });
  return { ...conn, properties };
}

function printConnection(c: ShownConnection, showSecrets: boolean): void {
  printFields([
    ['ID', c.id],
    ['Name', c.name],
    ['Alias', c.alias],
    ['Connector', `${c.connectorType} (${c.connectorId})`],
    ['Modified', c.lastModificationDateTime ?? ''],
  ]);
  process.stdout.write('\n');
  printTable(c.properties, [
    { header: 'PROPERTY', value: (p) => p.key },
    {
      header: 'VALUE',
      value: (p) =>
        p.value !== null ? p.value : p.protected ? (showSecrets ? '(not returned by the Service)' : MASK) : '',
    },
  ]);
}

/** `ferry connections list`. */
export const connectionsList = command(async (values, _positionals, env) => {
  const org = orgOf(values.org, env);
  const client = new ApiClient(resolveCredentials(env));
  const all: Connection[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await client.call('GET', base(org), z.array(Connection), { query: { limit: PAGE, offset } });
    all.push(...page);
    if (page.length < PAGE) break;
  }
  if (wantsJson(values.json)) return printJson(all);
  printTable(all, [
    { header: 'ID', value: (c) => c.id },
    { header: 'NAME', value: (c) => c.name },
    { header: 'CONNECTOR', value: (c) => c.connectorType },
    { header: 'MODIFIED', value: (c) => c.lastModificationDateTime ?? '' },
  ]);
});

/** `ferry connections get`. */
export const connectionsGet = command(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const client = new ApiClient(resolveCredentials(env));
  const conn = await findConnection(client, org, positionals[0]);
  const [form, token] = await Promise.all([propertyForm(client, org, conn.connectorId), cryptoTokenOf(client, org)]);
  const showSecrets = values['show-secrets'] === true;
  const view = shown(conn, form, token, showSecrets);
  if (wantsJson(values.json)) return printJson(view);
  printConnection(view, showSecrets);
});

/** `ferry connections create`. */
export const connectionsCreate = command(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  if (positionals.length > 0)
    throw new UsageError(`unexpected ${positionals[0]}: give properties with --set key=value\n\n${USAGE}`);
  if (!values.connector || !values.name) throw new UsageError(`give --connector NAME|ID and --name NAME\n\n${USAGE}`);
  const client = new ApiClient(resolveCredentials(env));
  const connector = await findConnector(client, org, values.connector);
  const form = await propertyForm(client, org, connector.id);
  const given = keyValues(values.set ?? [], '--set');
  const byName = new Map((form ?? []).map((d) => [d.propertyName.toLowerCase(), d]));
  const plain = new Map<string, string>();
  for (const [key, value] of given) {
    const decoration = byName.get(key.toLowerCase());
    if (form && !decoration)
      throw new UsageError(
        `${connector.name} has no property "${key}"; its properties: ${form.map((d) => d.propertyName).join(', ')}`,
      );
    plain.set(decoration?.propertyName ?? key, value);
  }
  if (form && canPrompt() && !values['no-prompt']) {
    // A protected property given means the person chose how to sign in (PostgreSQL: a password or
    // a connection string): then only the required ones still missing are asked for.
    const protectedGiven = form.some((d) => isProtected(d) && plain.has(d.propertyName));
    for (const d of form.filter(isProtected)) {
      if (plain.has(d.propertyName) || (protectedGiven && !d.isRequired)) continue;
      const typed = await promptSecret(`${d.label ?? d.propertyName} (${d.propertyName}; Enter leaves it blank): `);
      if (typed) plain.set(d.propertyName, typed);
    }
  }
  const token = await cryptoTokenOf(client, org);
  const properties = [...plain].map(([key, value]) => ({ key, value: value === '' ? '' : encryptValue(value, token) }));
  const body = {
    name: values.name,
    connectorId: connector.id,
    color: values.color ?? DEFAULT_COLOR,
    ...(values.alias ? { alias: values.alias } : {}),
    properties,
  };
  const created = await client.call('POST', base(org), Connection, { body });
  const view = shown(created, form, token, false);
  if (wantsJson(values.json)) return printJson(view);
  process.stdout.write(`Created the ${connector.name} Connection "${created.name}" in Organization ${org}\n\n`);
  printConnection(view, false);
});

/** `ferry connections update ID|NAME`: a read-modify-write; what is not given keeps its value. */
export const connectionsUpdate = command(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  if (positionals.length > 1)
    throw new UsageError(`unexpected ${positionals[1]}: give properties with --set key=value\n\n${USAGE}`);
  const given = keyValues(values.set ?? [], '--set');
  if (given.length === 0 && values.name === undefined && values.color === undefined && values.alias === undefined) {
    throw new UsageError(`give what changes: --name, --set key=value, --color or --alias\n\n${USAGE}`);
  }
  const client = new ApiClient(resolveCredentials(env));
  const conn = await findConnection(client, org, positionals[0]);
  const [form, token] = await Promise.all([propertyForm(client, org, conn.connectorId), cryptoTokenOf(client, org)]);
  const byName = new Map((form ?? []).map((d) => [d.propertyName.toLowerCase(), d]));
  const changes = new Map<string, string>();
  for (const [key, value] of given) {
    const decoration = byName.get(key.toLowerCase());
    if (form && !decoration)
      throw new UsageError(
        `${conn.connectorType} has no property "${key}"; its properties: ${form.map((d) => d.propertyName).join(', ')}`,
      );
    // A blank protected value is kept by the Service; an encrypted empty one blanks it.
    const prot = decoration ? isProtected(decoration) : false;
    changes.set(
      (decoration?.propertyName ?? key).toLowerCase(),
      value === '' && !prot ? '' : encryptValue(value, token),
    );
  }
  // As read: plain values encrypted with the token (sent back unchanged), protected ones blank (kept).
  const properties = conn.properties.map((p) => ({
    key: p.key,
    value: changes.get(p.key.toLowerCase()) ?? p.value ?? '',
  }));
  for (const [key] of given) {
    if (!conn.properties.some((p) => p.key.toLowerCase() === key.toLowerCase()))
      properties.push({
        key: byName.get(key.toLowerCase())?.propertyName ?? key,
        value: changes.get(key.toLowerCase()) ?? '',
      });
  }
  const body = {
    id: conn.id,
    name: values.name ?? conn.name,
    connectorId: conn.connectorId,
    color: values.color ?? conn.color,
    alias: values.alias ?? conn.alias,
    properties,
  };
  const updated = await client.call('PUT', `${base(org)}/${conn.id}`, Connection, { body });
  const view = shown(updated, form, token, false);
  if (wantsJson(values.json)) return printJson(view);
  process.stdout.write(`Updated the ${updated.connectorType} Connection "${updated.name}" in Organization ${org}\n\n`);
  printConnection(view, false);
});

/** `ferry connections test`: exit 0 when the Agent answers SUCCESS, 1 with its message otherwise. */
export const connectionsTest = command(async (values, positionals, env) => {
  const org = orgOf(values.org, env);
  const timeoutS = values.timeout === undefined ? 120 : Number(values.timeout);
  if (!Number.isFinite(timeoutS) || timeoutS <= 0)
    throw new UsageError(`--timeout ${values.timeout}: give a number of seconds`);
  const client = new ApiClient(resolveCredentials(env));
  const conn = await findConnection(client, org, positionals[0]);
  const agent = await chooseAgent(client, org, values.agent, conn.connectorId);
  const started = await client.call('POST', `${base(org)}/${conn.id}/test`, TestStarted, {
    query: { agentId: agent.id },
  });
  if (!wantsJson(values.json)) process.stderr.write(`Testing "${conn.name}" on Agent ${agent.name}…\n`);
  const result = await client.poll(
    `${base(org)}/test/${started.commandId}`,
    TestStatus,
    (s) => s.status === 'Completed',
    { timeoutMs: timeoutS * 1000 },
  );
  const ok = result.reply === 'SUCCESS';
  if (wantsJson(values.json)) printJson({ ...result, connectionId: conn.id, agentId: agent.id, success: ok });
  else process.stdout.write(ok ? `OK: "${conn.name}" connects (Agent ${agent.name})\n` : '');
  if (!ok) {
    process.stderr.write(
      `ferry: the test of "${conn.name}" failed on Agent ${agent.name}: ${result.reply ?? 'no reply'}\n`,
    );
    return 1;
  }
});
