import path from 'node:path';
import { parseArgs } from 'node:util';
import { createConsoleLogger, logFormatOf } from '../src/logs/console.js';
import { buildService, REDACT_PATHS } from './build-service.js';
import { setManagedConnectorVendor } from './store/repos/connector-installs.repo.js';
import { getOrg } from './store/repos/orgs.repo.js';
import { createRootOrganization, type BootstrapResult } from './bootstrap.js';
import { parseServiceConfig, type ServiceConfig, type ServiceConfigInput } from './config.js';
import { allowRanges, generatePassword, setPassword } from './recovery.js';
import { canPrompt, promptSecret, readStdin } from '../src/cli/client/prompt.js';

const SERVICE_OPTIONS = {
  port: { type: 'string' },
  host: { type: 'string' },
  'data-dir': { type: 'string' },
  'database-url': { type: 'string' },
} as const;

function configFrom(argv: string[], env: NodeJS.ProcessEnv) {
  const { values } = parseArgs({ args: argv, options: SERVICE_OPTIONS, allowPositionals: false });
  const overrides: Partial<ServiceConfigInput> = {
    port: values.port,
    host: values.host,
    dataDir: values['data-dir'],
    databaseUrl: values['database-url'],
  };
  return parseServiceConfig(env, overrides);
}

/** What a start prints: where the Service listens, how to log in, and the password when it was just generated. */
export function banner(config: ServiceConfig, url: string, b: BootstrapResult, replicaId?: string): string {
  const lines = [
    `Ferry Service listening on ${url}`,
    `  API:      ${url}/v1   (OpenAPI: ${url}/v1/openapi.json, browsable: ${url}/docs)`,
    `  Console:  ${url}/console   (sign in with an API user: docs/console.md)`,
    `  Store:    ${config.databaseUrl ? `PostgreSQL${replicaId ? `   Replica: ${replicaId}` : ''}` : `SQLite in ${config.dataDir}`}`,
    `  Org:      ${b.orgId}   Administrator: ${b.adminEmail}`,
  ];
  if (b.generatedPassword) {
    lines.push(
      `  Password: ${b.generatedPassword}   (generated now and shown only once; set FERRY_ADMIN_PASSWORD to choose one)`,
    );
  }
  lines.push(`  Try:      curl -u ${b.adminEmail}:PASSWORD ${url}/v1/orgs`);
  return lines.join('\n') + '\n';
}

/** `ferry service start`: runs the Service in the foreground until SIGINT or SIGTERM. */
export async function serviceStart(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const config = configFrom(argv, env);
  const logger = createConsoleLogger({
    level: config.logLevel,
    format: logFormatOf(env, process.stdout.isTTY === true),
    redact: REDACT_PATHS,
  });
  const service = await buildService(config, { logger });
  const url = await service.listen();
  process.stdout.write(banner(config, url, service.bootstrap, service.replicaId));

  let closing = false;
  const stop = (signal: string) => {
    if (closing) return;
    closing = true;
    service.app.log.info({ signal }, 'shutting down');
    // SIGTERM (a service manager, a rolling restart) drains first; SIGINT (Ctrl-C) stops at once.
    (signal === 'SIGTERM' ? service.drain() : service.close()).then(
      () => process.exit(0),
      (err: unknown) => {
        service.app.log.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.once('SIGINT', () => stop('SIGINT'));
  process.once('SIGTERM', () => stop('SIGTERM'));
}

/** `ferry service openapi`: prints the OpenAPI document without listening. */
export async function serviceOpenapi(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const config = configFrom(argv, { ...env, FERRY_LOG_LEVEL: 'silent' });
  const service = await buildService(config);
  await service.app.ready();
  process.stdout.write(JSON.stringify(service.app.swagger(), null, 2) + '\n');
  await service.close();
}

/**
 * `ferry service agent-package [--out DIR] [--version V]`: publishes this build as an Agent version:
 * writes `ferry-agent-<version>.tgz` into the folder the Service offers Agent versions from
 * (FERRY_AGENT_PACKAGES_DIR, else `<dataDir>/agent-packages`), so that older Agents update to it.
 */
export async function serviceAgentPackage(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { ...SERVICE_OPTIONS, out: { type: 'string' }, version: { type: 'string' } },
  });
  const config = parseServiceConfig(env, { dataDir: values['data-dir'] });
  const out = values.out ?? config.agentPackagesDir ?? path.join(config.dataDir, 'agent-packages');
  const { agentPackageFiles, writeAgentPackageFile } = await import('./http/agent-package-file.js');
  const files = agentPackageFiles(undefined, values.version);
  const manifest = files.find((f) => f.name === 'package/package.json');
  const version =
    values.version ?? (JSON.parse(manifest?.data.toString('utf8') ?? '{}') as { version: string }).version;
  const file = writeAgentPackageFile(out, version, files);
  process.stdout.write(`${file}\n`);
}

/**
 * `ferry service create-org`: the operator's way to add a root Organization (for example a
 * platform-hosted one, which the /v1 API cannot create), with its administrator and Security Rules.
 */
export async function serviceCreateOrg(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: {
      ...SERVICE_OPTIONS,
      name: { type: 'string' },
      'admin-email': { type: 'string' },
      'platform-hosted': { type: 'boolean', default: false },
      'data-center': { type: 'string' },
      allow: { type: 'string' },
    },
  });
  if (!values.name || !values['admin-email']) throw new Error('--name and --admin-email are required');
  const config = parseServiceConfig(env, { dataDir: values['data-dir'], databaseUrl: values['database-url'] });
  const result = await createRootOrganization(config, {
    name: values.name,
    adminEmail: values['admin-email'],
    platformHosted: values['platform-hosted'],
    dataCenterId: values['data-center'] === undefined ? undefined : Number(values['data-center']),
    allow: values.allow ?? config.bootstrapAllow,
  });
  process.stdout.write(
    `Organization ${result.orgId} created; Administrator ${values['admin-email']}` +
      (result.generatedPassword
        ? ` with password ${result.generatedPassword} (shown only once)`
        : ' (existing account)') +
      '\n',
  );
}

/**
 * `ferry service manage-connector`: makes an Organization the vendor that manages a private
 * (Managed) Connector of the catalogue (a plugin in FERRY_CONNECTORS_DIR whose manifest says
 * `"isPublic": false`); its Administrators then grant it to customer Organizations through the API.
 */
export async function serviceManageConnector(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { ...SERVICE_OPTIONS, connector: { type: 'string' }, 'vendor-org': { type: 'string' } },
  });
  if (!values.connector || !values['vendor-org']) throw new Error('--connector ID and --vendor-org N are required');
  const config = parseServiceConfig(
    { ...env, FERRY_LOG_LEVEL: 'silent' },
    { dataDir: values['data-dir'], databaseUrl: values['database-url'] },
  );
  const service = await buildService(config);
  try {
    const m = service.connectors.catalogue.get(values.connector);
    if (!m)
      throw new Error(
        `Connector ${values.connector} is not in the catalogue (built-in plugins and FERRY_CONNECTORS_DIR)`,
      );
    if (m.isPublic)
      throw new Error(
        `Connector ${m.name} is public; only a private Connector ("isPublic": false in its manifest) is managed by a vendor`,
      );
    const orgId = Number(values['vendor-org']);
    if (!Number.isInteger(orgId) || !(await getOrg(service.store.db, orgId)))
      throw new Error(`Organization ${values['vendor-org']} does not exist`);
    await setManagedConnectorVendor(service.store.db, m.id, orgId, new Date().toISOString());
    await service.connectors.installInOrg(orgId, m.id, 'ferry service manage-connector');
    process.stdout.write(`Organization ${orgId} now manages the ${m.name} connector (${m.id}) and has it installed.\n`);
  } finally {
    await service.close();
  }
}

/**
 * `ferry service allow --org N RANGE…`: adds a Security Rule with API access for each address,
 * range (start-end) or CIDR, straight in the store: the way back in when no rule lets any address
 * reach the API (FERRY_BOOTSTRAP_ALLOW is applied once, at the first start).
 */
export async function serviceAllow(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values, positionals } = parseArgs({
    args: argv,
    options: { ...SERVICE_OPTIONS, org: { type: 'string' } },
    allowPositionals: true,
  });
  const orgId = Number(values.org);
  if (!values.org || !/^\d{1,9}$/.test(values.org) || positionals.length === 0)
    throw new Error('Usage: ferry service allow --org N ADDRESS|START-END|CIDR…');
  const config = parseServiceConfig(
    { ...env, FERRY_LOG_LEVEL: 'silent' },
    { dataDir: values['data-dir'], databaseUrl: values['database-url'] },
  );
  const rules = await allowRanges(config, orgId, positionals);
  for (const r of rules) {
    const range =
      r.allowedIpRangeStartAddress === r.allowedIpRangeEndAddress
        ? r.allowedIpRangeStartAddress
        : `${r.allowedIpRangeStartAddress}-${r.allowedIpRangeEndAddress}`;
    process.stdout.write(`Security Rule ${r.id} added to Organization ${orgId}: API access from ${range}\n`);
  }
}

/**
 * `ferry service set-password --email E [--generate]`: sets a user's password straight in the
 * store. The new password is read from a terminal prompt (not echoed) or from stdin; an empty
 * answer, or --generate, makes one, printed once.
 */
export async function serviceSetPassword(argv: string[], env: NodeJS.ProcessEnv): Promise<void> {
  const { values } = parseArgs({
    args: argv,
    options: { ...SERVICE_OPTIONS, email: { type: 'string' }, generate: { type: 'boolean', default: false } },
  });
  if (!values.email)
    throw new Error(
      'Usage: ferry service set-password --email EMAIL [--generate] (the password is read from the terminal or stdin)',
    );
  const config = parseServiceConfig(
    { ...env, FERRY_LOG_LEVEL: 'silent' },
    { dataDir: values['data-dir'], databaseUrl: values['database-url'] },
  );
  let password = '';
  if (!values.generate) {
    if (canPrompt()) {
      password = await promptSecret(`New password for ${values.email} (empty: generate one): `);
      if (password && (await promptSecret('Repeat it: ')) !== password)
        throw new Error('The two passwords differ; nothing was changed');
    } else {
      password = (await readStdin()).split(/\r?\n/)[0] ?? '';
    }
  }
  const generated = password === '';
  if (generated) password = generatePassword();
  const { email } = await setPassword(config, values.email, password);
  process.stdout.write(
    generated
      ? `New password of ${email}: ${password}   (generated now and shown only once)\n`
      : `Password of ${email} changed.\n`,
  );
}
