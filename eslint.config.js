// @ts-check
import js from '@eslint/js';
import { createTypeScriptImportResolver } from 'eslint-import-resolver-typescript';
import { importX } from 'eslint-plugin-import-x';
import tseslint from 'typescript-eslint';
import { noImportCycle } from './lint/no-import-cycle.js';

const DOMAIN = [
  'agents',
  'connections',
  'marketplace',
  'orgs',
  'users',
  'subscriptions',
  'lookup-tables',
  'solutions',
  'history',
].map((d) => `./service/${d}`);

/** Import restrictions: `target` files may not import from `from` (docs/architecture.md). */
const LAYERS = [
  // src/cli is the one `ferry` binary: it starts either half (ferry up, ferry service …).
  {
    target: [
      'agent',
      'channel',
      'connectors',
      'maps',
      'protocol',
      'solutions',
      'failures',
      'logs',
      'errors',
      'util',
    ].map((d) => `./src/${d}`),
    from: './service',
    message: 'The Agent never imports the Service.',
  },
  {
    target: './connectors',
    from: './src',
    except: ['./connectors/sdk.ts'],
    message: 'A Connector plugin imports only the SDK (src/connectors/sdk.ts).',
  },
  {
    target: './connectors',
    from: './service',
    message: 'A Connector plugin imports only the SDK (src/connectors/sdk.ts).',
  },
  {
    target: './src/protocol',
    from: [
      './src/agent',
      './src/channel',
      './src/cli',
      './src/connectors',
      './src/maps',
      './src/solutions',
      './src/failures',
      './src/logs',
    ],
    message: 'The protocol is the bottom of the Agent: it imports only zod and its own files.',
  },
  {
    target: './src/maps/runtime',
    from: ['./src/maps/compiler', './src/maps/blocks', './src/maps/open-run.ts'],
    message: 'The Map runtime runs a compiled plan; the plan brings the bound steps.',
  },
  {
    target: './src/failures',
    from: ['./src/maps', './src/solutions', './src/agent'],
    message:
      'The failed-record store is below the Map engine: the runtime reports into it (failures/sink.ts), it imports no Map code.',
  },
  {
    target: [
      ...DOMAIN,
      './service/gateway',
      './service/store',
      './service/util',
      './service/auth',
      './service/crypto',
      './service/jobs',
    ],
    from: './service/http',
    message: 'Below the HTTP layer: take plain inputs and return rows; routes map them.',
  },
  {
    target: [
      './service/gateway',
      './service/jobs',
      './service/store',
      './service/util',
      './service/auth',
      './service/crypto',
    ],
    from: DOMAIN,
    message: 'The gateway, the jobs and the store know no domain: the composition root (build-service.ts) wires them.',
  },
  {
    target: ['./service/store', './service/util'],
    from: ['./service/gateway', './service/jobs', './service/auth', './service/crypto'],
    message: 'The store and util are the bottom of the Service.',
  },
  { target: './service/util', from: './service/store', message: 'service/util is the bottom of the Service.' },
  // Between domain folders, one order: agents ← marketplace ← connections, marketplace ← orgs ← users;
  // solutions sits on agents, connections, marketplace and orgs, and nothing imports it.
  ...[
    ['agents', ['connections', 'marketplace', 'orgs', 'users', 'subscriptions', 'lookup-tables', 'solutions']],
    ['marketplace', ['connections', 'orgs', 'users', 'subscriptions', 'lookup-tables', 'solutions']],
    ['connections', ['solutions']],
    ['orgs', ['agents', 'connections', 'users', 'subscriptions', 'lookup-tables', 'solutions']],
    ['users', ['solutions']],
    ['subscriptions', ['agents', 'connections', 'marketplace', 'users', 'lookup-tables', 'solutions']],
    ['lookup-tables', ['agents', 'connections', 'marketplace', 'orgs', 'users', 'subscriptions', 'solutions']],
    ['solutions', ['users', 'subscriptions', 'lookup-tables']],
    // History reads the Solutions' and Subscriptions' repositories, and imports no other domain folder.
    [
      'history',
      ['agents', 'connections', 'marketplace', 'orgs', 'users', 'subscriptions', 'lookup-tables', 'solutions'],
    ],
  ].map(([target, from]) => ({
    target: `./service/${String(target)}`,
    from: /** @type {string[]} */ (from).map((d) => `./service/${d}`),
    message: 'Domain folders import each other in one order only (docs/architecture.md).',
  })),
];

export default tseslint.config(
  { ignores: ['dist/**', 'node_modules/**', 'data/**', 'coverage/**'] },
  js.configs.recommended,
  ...tseslint.configs.recommendedTypeChecked,
  {
    languageOptions: {
      parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'import-x': importX, ferry: { rules: { 'no-import-cycle': noImportCycle } } },
    settings: {
      'import-x/resolver-next': [createTypeScriptImportResolver({ project: './tsconfig.json' })],
      // The files an import-x rule reads are parsed as TypeScript too.
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
      'import-x/extensions': ['.ts', '.js'],
    },
    rules: {
      // No import cycles, type imports included: each layer imports only the ones below it
      // (docs/decisions.md). import-x/no-cycle skips `import type`, so the rule is our own.
      'ferry/no-import-cycle': 'error',
      // The allowed directions between layers (docs/architecture.md); a type import counts too.
      'import-x/no-restricted-paths': ['error', { zones: LAYERS }],
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/consistent-type-imports': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      '@typescript-eslint/require-await': 'off',
      '@typescript-eslint/no-unsafe-assignment': 'off',
      '@typescript-eslint/no-unsafe-member-access': 'off',
      '@typescript-eslint/no-unsafe-argument': 'off',
      '@typescript-eslint/no-unsafe-call': 'off',
      '@typescript-eslint/no-unsafe-return': 'off',
      '@typescript-eslint/restrict-template-expressions': ['error', { allowNumber: true, allowBoolean: true }],
    },
  },
  { files: ['eslint.config.js', 'lint/**/*.js', 'console/*.mjs'], ...tseslint.configs.disableTypeChecked },
  // Size limits (docs/decisions.md): split a file past 800 lines and a function past 150. The test
  // files and the conformance suite are not under the function limit: a describe() callback is a
  // grouping of cases, not a function.
  { rules: { 'max-lines': ['error', { max: 800, skipBlankLines: false, skipComments: false }] } },
  {
    files: ['src/**', 'service/**', 'connectors/**', 'lint/**', 'installer/**', 'test/bench/**'],
    rules: { 'max-lines-per-function': ['error', { max: 150 }] },
  },
);
