#!/usr/bin/env node
/**
 * The `ferry` command. The CLI is the one place that composes both halves: Service commands are
 * loaded lazily, so the Agent runtime never loads Service code.
 */
import { readFileSync } from 'node:fs';

type Command = (argv: string[], env: NodeJS.ProcessEnv) => Promise<void>;

const loadService = () => import('../../service/cli.js');
// The Agent commands load only Agent code; `up` composes both halves.
const loadAgent = () => import('./agent.commands.js');
const loadUp = () => import('./up.js');
const loadFormula = () => import('./formula.commands.js');
const loadMap = () => import('./map.commands.js');
// The API client: one small module per resource under client/.
const loadLogin = () => import('./client/login.js');
const loadApi = () => import('./client/api.js');
const loadCrypto = () => import('./client/crypto.js');
const loadConnections = () => import('./client/connections.js');
const loadSolutions = () => import('./client/solutions.js');
const loadSolutionRuns = () => import('./client/solution-runs.js');
const loadSolutionChanges = () => import('./client/solution-changes.js');
const loadLookupTables = () => import('./client/lookup-tables.js');
const loadMaps = () => import('./client/maps.js');
const loadMapFiles = () => import('./client/map-files.js');

const COMMANDS: Record<string, Command> = {
  'service start': async (argv, env) => (await loadService()).serviceStart(argv, env),
  'service openapi': async (argv, env) => (await loadService()).serviceOpenapi(argv, env),
  'service agent-package': async (argv, env) => (await loadService()).serviceAgentPackage(argv, env),
  'service create-org': async (argv, env) => (await loadService()).serviceCreateOrg(argv, env),
  'service manage-connector': async (argv, env) => (await loadService()).serviceManageConnector(argv, env),
  'service allow': async (argv, env) => (await loadService()).serviceAllow(argv, env),
  'service set-password': async (argv, env) => (await loadService()).serviceSetPassword(argv, env),
  'agent install': async (argv, env) => (await loadAgent()).agentInstall(argv, env),
  'agent uninstall': async (argv, env) => (await loadAgent()).agentUninstall(argv, env),
  'agent run': async (argv, env) => (await loadAgent()).agentRun(argv, env),
  'agent worker': async (argv, env) => (await loadAgent()).agentWorker(argv, env),
  'agent start': async (argv, env) => (await loadAgent()).agentStart(argv, env),
  'agent stop': async (argv, env) => (await loadAgent()).agentStop(argv, env),
  'agent status': async (argv, env) => (await loadAgent()).agentStatus(argv, env),
  'agent failures': async (argv, env) => (await import('./agent-failures.commands.js')).agentFailures(argv, env),
  'formula eval': async (argv) => (await loadFormula()).formulaEval(argv),
  'map validate': async (argv) => (await loadMap()).mapValidate(argv),
  'map run': async (argv) => (await loadMap()).mapRun(argv),
  'map failures': async (argv) => (await import('./map-failures.commands.js')).mapFailures(argv),
  login: async (argv, env) => (await loadLogin()).login(argv, env),
  logout: async (argv, env) => (await loadLogin()).logout(argv, env),
  api: async (argv, env) => (await loadApi()).api(argv, env),
  'crypto encrypt': async (argv, env) => (await loadCrypto()).cryptoEncrypt(argv, env),
  'crypto decrypt': async (argv, env) => (await loadCrypto()).cryptoDecrypt(argv, env),
  'connections list': async (argv, env) => (await loadConnections()).connectionsList(argv, env),
  'connections get': async (argv, env) => (await loadConnections()).connectionsGet(argv, env),
  'connections create': async (argv, env) => (await loadConnections()).connectionsCreate(argv, env),
  'connections update': async (argv, env) => (await loadConnections()).connectionsUpdate(argv, env),
  'connections test': async (argv, env) => (await loadConnections()).connectionsTest(argv, env),
  'solutions list': async (argv, env) => (await loadSolutions()).solutionsList(argv, env),
  'solutions show': async (argv, env) => (await loadSolutions()).solutionsShow(argv, env),
  'solutions start': async (argv, env) => (await loadSolutions()).solutionsStart(argv, env),
  'solutions stop': async (argv, env) => (await loadSolutions()).solutionsStop(argv, env),
  'solutions watch': async (argv, env) => (await loadSolutionRuns()).solutionsWatch(argv, env),
  'solutions history': async (argv, env) => (await loadSolutionRuns()).solutionsHistory(argv, env),
  'solutions errors': async (argv, env) => (await loadSolutionRuns()).solutionsErrors(argv, env),
  'solutions reprocess': async (argv, env) => (await loadSolutionRuns()).solutionsReprocess(argv, env),
  'solutions create': async (argv, env) => (await loadSolutionChanges()).solutionsCreate(argv, env),
  'solutions update': async (argv, env) => (await loadSolutionChanges()).solutionsUpdate(argv, env),
  'solutions prepare': async (argv, env) => (await loadSolutionChanges()).solutionsPrepare(argv, env),
  'solutions delete': async (argv, env) => (await loadSolutionChanges()).solutionsDelete(argv, env),
  'solutions schedule': async (argv, env) =>
    (await import('./client/solution-schedule.js')).solutionsSchedule(argv, env),
  'lookuptables list': async (argv, env) => (await loadLookupTables()).lookupTablesList(argv, env),
  'lookuptables import': async (argv, env) => (await loadLookupTables()).lookupTablesImport(argv, env),
  'lookuptables export': async (argv, env) => (await loadLookupTables()).lookupTablesExport(argv, env),
  'maps list': async (argv, env) => (await loadMaps()).mapsList(argv, env),
  'maps show': async (argv, env) => (await loadMaps()).mapsShow(argv, env),
  'maps new': async (argv, env) => (await import('./client/map-new.js')).mapsNew(argv, env),
  'maps edit': async (argv, env) => (await loadMapFiles()).mapsEdit(argv, env),
  'maps validate': async (argv, env) => (await loadMaps()).mapsValidate(argv, env),
  'maps import': async (argv, env) => (await loadMapFiles()).mapsImport(argv, env),
  'maps export': async (argv, env) => (await loadMapFiles()).mapsExport(argv, env),
  'maps revisions': async (argv, env) => (await loadMaps()).mapsRevisions(argv, env),
  'maps revert': async (argv, env) => (await loadMaps()).mapsRevert(argv, env),
  // The main job on the embedded default: the Service, plus one local Agent installed once.
  up: async (argv, env) => (await loadUp()).up(argv, env),
  '--version': async () => {
    process.stdout.write(`${packageVersion()}\n`);
  },
  version: async () => {
    process.stdout.write(`${packageVersion()}\n`);
  },
};

const USAGE = `Usage: ferry <command> [options]

Commands:
  up                     Service on the embedded store and one local Agent (what npm start runs)
  service start          the Service: --port, --host, --data-dir, --database-url
  service openapi        print the OpenAPI document
  service agent-package  publish this build as an Agent version older Agents update to:
                         [--out DIR] [--version V] [--data-dir]
  service create-org     add a root Organization: --name, --admin-email, [--platform-hosted],
                         [--data-center N], [--allow RANGES], [--data-dir], [--database-url]
  service manage-connector  make an Organization the vendor of a private Connector:
                         --connector ID --vendor-org N [--data-dir] [--database-url]
  service allow          add Security Rules with API access (recovery when every call answers 403):
                         --org N ADDRESS|START-END|CIDR… [--data-dir] [--database-url]
  service set-password   set a user's password (prompted, or read from stdin; empty or --generate:
                         generated and shown once): --email E [--data-dir] [--database-url]
  agent install          register and install an Agent instance: --key KEY --service URL [--name N]
                         [--user U] [--no-service]
  agent run              run an instance in the foreground (supervised; restarts replace the process)
  agent start|stop       start or stop an instance's OS service (systemd)
  agent status           an instance's configuration (never its secret) and whether it runs
  agent uninstall        stop an instance and remove its service unit and folder
  agent failures         the failed records an instance keeps on this machine: list [--execution RUN] | show ID
                         every agent command takes --home DIR (FERRY_AGENT_HOME) and --instance N
  formula eval           evaluate a formula: '<formula>' [--record '<json>'] [--lookup-tables '<json>']
  map validate           validate a Map: MAP.json --connections CONNS.json (per-Block results)
  map run                run a Map locally: MAP.json --connections CONNS.json [--state F] [--failures DIR]
  map failures list|show the failed records a map run kept: --failures DIR [--map M] [--code C] | ID
  login                  keep the login of a Service: URL [--user EMAIL] [--password-stdin] (docs/cli.md)
  logout                 forget it
  api                    call the API with that login: METHOD PATH [--data JSON|@FILE|-] [--query k=v]
  crypto encrypt|decrypt a Connection property value: --org N VALUE
  connections list|get|create|update|test   Connections by name or ID: --org N (create and update
                         encrypt the values they are given; update keeps what is not given)
  solutions list|show|create|update|prepare|start|stop|watch|history|errors|reprocess|schedule|delete
                         Solutions by name or ID: --org N (watch: live progress, then the run's summary;
                         reprocess: a run's failed records again, as a new run)
  lookuptables list|import|export   Lookup Tables by name or ID: --org N (import FILE.csv|FILE.json
                         creates the table or replaces its values; export to stdout or --out FILE)
  maps list|show|new|edit|validate|import|export|revisions|revert
                         a Solution's Maps: --org N SOLUTION [MAP] (new scaffolds one from two entities'
                         fields: --name N --source CONN:ENTITY --target CONN:ENTITY [--action A])
  version                print the version

Configuration comes from flags and FERRY_* variables (see README.md).`;

function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

/** What an unknown command is told, first: the command, then the ones its group has, else a pointer to the usage. */
function unknownCommand(argv: string[]): string {
  const [one = '', two] = argv;
  const group = Object.keys(COMMANDS)
    .filter((c) => c.startsWith(`${one} `))
    .map((c) => c.slice(one.length + 1));
  if (group.length > 0) {
    const what =
      two === undefined || two.startsWith('-')
        ? `ferry ${one} needs a command`
        : `unknown command "${two}" for "ferry ${one}"`;
    return `ferry: ${what}; its commands: ${group.join(', ')}\n`;
  }
  return `ferry: unknown command "${one}"; run ferry --help for the commands\n`;
}

async function main(argv: string[]): Promise<number> {
  const two = argv.slice(0, 2).join(' ');
  const one = argv[0] ?? '';
  const [name, rest] = COMMANDS[two] ? [two, argv.slice(2)] : COMMANDS[one] ? [one, argv.slice(1)] : [undefined, argv];
  if (one === '--help' || one === '-h' || one === 'help') {
    process.stdout.write(USAGE + '\n');
    return 0;
  }
  if (!name) {
    process.stderr.write(one === '' ? `${USAGE}\n` : unknownCommand(argv));
    return 2;
  }
  await (COMMANDS[name] as Command)(rest, process.env);
  return 0;
}

main(process.argv.slice(2)).then(
  (code) => {
    if (code !== 0) process.exitCode = code;
  },
  (err: unknown) => {
    process.stderr.write(`ferry: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exitCode = 1;
  },
);
