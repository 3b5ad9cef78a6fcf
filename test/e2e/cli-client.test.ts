/**
 * `ferry` as an API client, run as real processes against a real Service: login (password from
 * stdin, the environment and a terminal prompt), `ferry api`, the crypto round trip with the
 * Service's own cipher, Connections created, read, listed and tested through an Agent, and the
 * errors a person meets (wrong password, not logged in, an API refusal).
 */
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decryptProperty, encryptProperty } from '../../service/connections/properties-crypto.js';
import { connectPlayedAgent, OpenChannels, type Incoming } from '../helpers/agent-client.js';
import { CLI_SUITE_TIMEOUT_MS, HAS_SCRIPT, parse, runFerry, type CliOptions, type CliRun } from '../helpers/cli.js';
import { startService, type TestService } from '../helpers/service.js';
import { STORE_TARGETS } from '../helpers/stores.js';

const POSTGRES = '18cc2a91-e317-4972-9c24-be9fc63775ab';
const CSV = 'd2227fbd-50de-482d-9fa3-d5c685da7ba4';
const SECRET = 'Pg-s3cret-never-shown';

/** The CLI's environment: its own config folder and no login variables inherited from the test's. */
function cliEnv(configDir: string, extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, FERRY_CONFIG_DIR: configDir, FERRY_LOG_LEVEL: 'silent', ...extra };
  for (const k of ['FERRY_URL', 'FERRY_USER', 'FERRY_PASSWORD', 'FERRY_ORG']) if (!(k in extra)) delete env[k];
  return env;
}

/** Runs `ferry ARGS` with stdin and stdout as pipes; a run still going after 30 s (waiting at a prompt nobody answers) is killed. */
const ferry = (args: string[], opts: Omit<CliOptions, 'killAfterMs'>): Promise<CliRun> =>
  runFerry(args, { ...opts, killAfterMs: 30_000 });

/** Runs `ferry ARGS` on a pseudo-terminal, so what is echoed to the terminal is what a person would see. */
const ferryOnTerminal = (args: string[], opts: Pick<CliOptions, 'env' | 'answers'>): Promise<CliRun> =>
  ferry(args, { ...opts, terminal: true });

interface ShownConnection {
  id: string;
  name: string;
  connectorType: string;
  properties: Array<{ key: string; value: string | null; protected: boolean }>;
}

describe('ferry as an API client', { timeout: CLI_SUITE_TIMEOUT_MS }, () => {
  let svc: TestService;
  let tmp: string;
  let configDir: string;
  let env: NodeJS.ProcessEnv;
  let token: string;
  const channels = new OpenChannels();
  let agentId: string;
  const tested: Incoming[] = [];

  beforeAll(async () => {
    svc = await startService(STORE_TARGETS[0] ?? { name: 'sqlite' });
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-cli-client-'));
    configDir = path.join(tmp, 'config');
    env = cliEnv(configDir);
    token = (await svc.request<{ apiCryptoToken: string }>('GET', `/v1/orgs/${svc.orgId}/SecuritySettings`)).body
      .apiCryptoToken;
    // An Agent that answers Connection tests: SUCCESS when the password it receives is SECRET.
    const { agent } = await connectPlayedAgent(svc, channels, {
      name: 'Tester',
      hello: {
        installedConnectors: [
          { connectorId: POSTGRES, version: '1.0.0' },
          { connectorId: CSV, version: '1.0.0' },
        ],
      },
      reply: (cmd) => {
        if (cmd['type'] !== 'testConnection') return undefined;
        tested.push(cmd);
        const props = cmd['properties'] as Record<string, string>;
        return props['password'] === SECRET
          ? { re: cmd['id'], ok: true, result: { ok: true } }
          : {
              re: cmd['id'],
              ok: false,
              error: { code: 'CON_AUTH', kind: 'config', message: 'password authentication failed for user "etl"' },
            };
      },
    });
    agentId = agent.agentId;
  });
  afterAll(async () => {
    await channels.closeAll();
    await svc?.close();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  it('refuses a wrong password with a clear message and exit 4, keeping nothing', async () => {
    const run = await ferry(['login', svc.url, '--user', svc.admin.email, '--password-stdin'], {
      env,
      input: 'not-the-password\n',
    });
    expect(run.code).toBe(4);
    expect(run.stderr).toContain('refused the credentials');
    expect(run.stderr + run.stdout).not.toContain('not-the-password');
    expect(fs.existsSync(path.join(configDir, 'credentials.json'))).toBe(false);
  });

  it('is not logged in before a login: exit 4 naming ferry login', async () => {
    const run = await ferry(['api', 'GET', '/v1/orgs'], { env });
    expect(run.code).toBe(4);
    expect(run.stderr).toContain('ferry login');
  });

  it('logs in with the password on stdin and keeps it in a 0600 file', async () => {
    const run = await ferry(['login', `${svc.url}/v1/`, '--user', svc.admin.email, '--password-stdin'], {
      env,
      input: `${svc.admin.password}\n`,
    });
    expect(run.code, run.stderr).toBe(0);
    expect(run.stderr).toContain(`as ${svc.admin.email}`);
    expect(run.stdout + run.stderr).not.toContain(svc.admin.password);
    const file = path.join(configDir, 'credentials.json');
    expect(fs.statSync(file).mode & 0o777).toBe(0o600);
    expect(fs.statSync(configDir).mode & 0o777).toBe(0o700);
    expect(parse<{ url: string; user: string }>(fs.readFileSync(file, 'utf8'))).toMatchObject({
      url: svc.url,
      user: svc.admin.email,
    });
  });

  it('logs in with FERRY_PASSWORD, and works from FERRY_URL, FERRY_USER and FERRY_PASSWORD alone', async () => {
    const other = path.join(tmp, 'other-config');
    const login = await ferry(['login', svc.url, '--user', svc.admin.email], {
      env: cliEnv(other, { FERRY_PASSWORD: svc.admin.password }),
    });
    expect(login.code, login.stderr).toBe(0);
    expect(fs.existsSync(path.join(other, 'credentials.json'))).toBe(true);
    const bare = await ferry(['api', 'GET', 'orgs'], {
      env: cliEnv(path.join(tmp, 'none'), {
        FERRY_URL: svc.url,
        FERRY_USER: svc.admin.email,
        FERRY_PASSWORD: svc.admin.password,
      }),
    });
    expect(bare.code, bare.stderr).toBe(0);
    expect(parse<Array<{ id: number }>>(bare.stdout).map((o) => o.id)).toContain(svc.orgId);
  });

  it.skipIf(!HAS_SCRIPT)('logs in at a terminal prompt without echoing the password', async () => {
    const dir = path.join(tmp, 'tty-config');
    const run = await ferryOnTerminal(['login', svc.url, '--user', svc.admin.email], {
      env: cliEnv(dir),
      answers: [{ prompt: /Password for /, answer: svc.admin.password }],
    });
    expect(run.code, run.stdout).toBe(0);
    expect(run.stdout).toContain('Logged in');
    expect(run.stdout).not.toContain(svc.admin.password);
  });

  it('calls the API: GET prints JSON, POST sends --data inline, from a file and from stdin', async () => {
    const orgs = await ferry(['api', 'GET', '/v1/orgs', '--query', 'expandStatus=true'], { env });
    expect(orgs.code, orgs.stderr).toBe(0);
    expect(parse<Array<{ id: number }>>(orgs.stdout)[0]?.id).toBe(svc.orgId);
    const rule = (name: string) =>
      JSON.stringify({
        name,
        allowedIpRangeStartAddress: '10.0.0.1',
        allowedIpRangeEndAddress: '10.0.0.9',
        apiAccessEnabled: false,
      });
    const inline = await ferry(['api', 'POST', `orgs/${svc.orgId}/securityrules`, '--data', rule('inline')], { env });
    expect(inline.code, inline.stderr).toBe(0);
    expect(parse<{ name: string }>(inline.stdout).name).toBe('inline');
    const file = path.join(tmp, 'rule.json');
    fs.writeFileSync(file, rule('from-file'));
    expect((await ferry(['api', 'post', `orgs/${svc.orgId}/securityrules`, '--data', `@${file}`], { env })).code).toBe(
      0,
    );
    expect(
      (
        await ferry(['api', 'POST', `orgs/${svc.orgId}/securityrules`, '--data', '-'], {
          env,
          input: rule('from-stdin'),
        })
      ).code,
    ).toBe(0);
    const names = (await svc.request<Array<{ name: string }>>('GET', `/v1/orgs/${svc.orgId}/securityrules`)).body.map(
      (r) => r.name,
    );
    expect(names).toEqual(expect.arrayContaining(['inline', 'from-file', 'from-stdin']));
  });

  it('exits 1 on an API error with the problem title and detail on stderr, and 2 on bad usage', async () => {
    const missing = await ferry(['api', 'GET', '/v1/orgs/987654'], { env });
    expect(missing.code).toBe(1);
    expect(missing.stdout).toBe('');
    expect(missing.stderr).toMatch(/^ferry: 40[34] .+: .+\(API_[A-Z_]+\)/);
    const invalid = await ferry(['api', 'POST', `orgs/${svc.orgId}/securityrules`, '--data', '{"name": 1}'], { env });
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('API_VALIDATION');
    expect((await ferry(['api', 'POST', 'orgs', '--data', '{not json'], { env })).code).toBe(2);
    expect((await ferry(['api', 'FETCH', 'orgs'], { env })).code).toBe(2);
    expect((await ferry(['connections', 'list', '--org', '1', '--bogus'], { env })).code).toBe(2);
  });

  it('encrypts and decrypts with the Organization crypto token, compatible with the Service', async () => {
    const enc = await ferry(['crypto', 'encrypt', '--org', String(svc.orgId), 'hello wörld'], { env });
    expect(enc.code, enc.stderr).toBe(0);
    expect(decryptProperty(enc.stdout.trim(), token)).toBe('hello wörld');
    const dec = await ferry(
      ['crypto', 'decrypt', '--org', String(svc.orgId), encryptProperty('from the service', token)],
      { env },
    );
    expect(dec.code, dec.stderr).toBe(0);
    expect(dec.stdout).toBe('from the service\n');
    const piped = await ferry(['crypto', 'encrypt', '--org', String(svc.orgId), '-'], { env, input: 'stdin value\n' });
    expect(decryptProperty(piped.stdout.trim(), token)).toBe('stdin value');
    const wrong = await ferry(
      ['crypto', 'decrypt', '--org', String(svc.orgId), encryptProperty('x', 'another-token')],
      { env },
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('crypto token');
  });

  let pgId: string;
  it('creates a Connection in one command; the Service stores the given values; the password never appears', async () => {
    const run = await ferry(
      [
        'connections',
        'create',
        '--org',
        String(svc.orgId),
        '--connector',
        'postgresql',
        '--name',
        'Warehouse',
        '--set',
        'host=db.internal',
        '--set',
        'user=etl',
        '--set',
        `password=${SECRET}`,
        '--set',
        'port=5433',
      ],
      { env },
    );
    expect(run.code, run.stderr).toBe(0);
    expect(run.stdout + run.stderr).not.toContain(SECRET);
    const shown = parse<ShownConnection>(run.stdout);
    pgId = shown.id;
    expect(shown).toMatchObject({ name: 'Warehouse', connectorType: 'PostgreSQL' });
    expect(shown.properties.find((p) => p.key === 'host')).toEqual({
      key: 'host',
      value: 'db.internal',
      protected: false,
    });
    expect(shown.properties.find((p) => p.key === 'password')).toEqual({
      key: 'password',
      value: null,
      protected: true,
    });

    // Through the API: the plain properties decrypt to what was given.
    const stored = await svc.request<{ properties: Array<{ key: string; value: string }> }>(
      'GET',
      `/v1/orgs/${svc.orgId}/connections/${pgId}`,
    );
    const plain = Object.fromEntries(
      stored.body.properties
        .filter((p) => p.key !== 'password' && p.key !== 'connectionString')
        .map((p) => [p.key, decryptProperty(p.value, token)]),
    );
    expect(plain).toMatchObject({ host: 'db.internal', user: 'etl', port: '5433' });
    // The password reached the Service: a test hands it, in plain, to the Agent.
    const before = tested.length;
    const started = await svc.request<{ commandId: string }>(
      'POST',
      `/v1/orgs/${svc.orgId}/connections/${pgId}/test?agentId=${agentId}`,
    );
    expect(started.status).toBe(200);
    await expect.poll(() => tested.length).toBe(before + 1);
    expect((tested[before]?.['properties'] as Record<string, string>)['password']).toBe(SECRET);
  });

  it('refuses a property the Connector does not have, naming its properties', async () => {
    const run = await ferry(
      [
        'connections',
        'create',
        '--org',
        String(svc.orgId),
        '--connector',
        'CSV',
        '--name',
        'Bad',
        '--set',
        'fodler=/tmp',
      ],
      { env },
    );
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('"fodler"');
    expect(run.stderr).toContain('folder');
  });

  it('lists and gets Connections as JSON when piped, masking protected properties', async () => {
    const list = await ferry(['connections', 'list', '--org', String(svc.orgId)], { env });
    expect(list.code, list.stderr).toBe(0);
    expect(parse<Array<{ id: string; name: string }>>(list.stdout).map((c) => c.name)).toContain('Warehouse');
    const get = await ferry(['connections', 'get', '--org', String(svc.orgId), 'Warehouse'], { env });
    expect(get.code, get.stderr).toBe(0);
    const shown = parse<ShownConnection>(get.stdout);
    expect(shown.id).toBe(pgId);
    expect(shown.properties.find((p) => p.key === 'user')?.value).toBe('etl');
    expect(shown.properties.find((p) => p.key === 'password')).toMatchObject({ value: null, protected: true });
    const revealed = await ferry(['connections', 'get', '--org', String(svc.orgId), pgId, '--show-secrets', '--json'], {
      env,
    });
    expect(parse<ShownConnection>(revealed.stdout).properties.find((p) => p.key === 'host')?.value).toBe('db.internal');
  });

  it.skipIf(!HAS_SCRIPT)('prints tables on a terminal, and JSON there with --json', async () => {
    const list = await ferryOnTerminal(['connections', 'list', '--org', String(svc.orgId)], { env });
    expect(list.code, list.stdout).toBe(0);
    expect(list.stdout).toMatch(/ID\s+NAME\s+CONNECTOR\s+MODIFIED/);
    expect(list.stdout).toMatch(/Warehouse\s+PostgreSQL/);
    const get = await ferryOnTerminal(['connections', 'get', '--org', String(svc.orgId), 'Warehouse'], { env });
    expect(get.stdout).toMatch(/host\s+db\.internal/);
    expect(get.stdout).toMatch(/password\s+\*{8}/);
    const json = await ferryOnTerminal(['connections', 'list', '--org', String(svc.orgId), '--json'], { env });
    expect(json.stdout).toMatch(/^\s*\[/);
  });

  it.skipIf(!HAS_SCRIPT)(
    'asks on a terminal for the protected properties not given, without echoing them',
    async () => {
      const run = await ferryOnTerminal(
        [
          'connections',
          'create',
          '--org',
          String(svc.orgId),
          '--connector',
          POSTGRES,
          '--name',
          'Prompted',
          '--set',
          'host=db2',
        ],
        {
          env,
          answers: [
            { prompt: /\(password; Enter leaves it blank\): $/, answer: SECRET },
            { prompt: /\(connectionString; Enter leaves it blank\): $/, answer: '' },
          ],
        },
      );
      expect(run.code, run.stdout).toBe(0);
      expect(run.stdout).toContain('Created the PostgreSQL Connection "Prompted"');
      expect(run.stdout).not.toContain(SECRET);
      // The typed password was stored: the test through the Agent succeeds with it.
      const test = await ferry(['connections', 'test', '--org', String(svc.orgId), 'Prompted'], { env });
      expect(test.code, test.stderr).toBe(0);
      // One protected property given: the other (not required) one is not asked for.
      const given = await ferryOnTerminal(
        [
          'connections',
          'create',
          '--org',
          String(svc.orgId),
          '--connector',
          'PostgreSQL',
          '--name',
          'By URL',
          '--set',
          'connectionString=postgres://etl@db3/w',
        ],
        { env },
      );
      expect(given.code, given.stdout).toBe(0);
      expect(given.stdout).not.toContain('Enter leaves it blank');
    },
  );

  it('tests a Connection through the Agent and waits for the answer: exit 0 on SUCCESS, 1 with the reason', async () => {
    const ok = await ferry(['connections', 'test', '--org', String(svc.orgId), 'Warehouse'], { env });
    expect(ok.code, ok.stderr).toBe(0);
    expect(parse<{ status: string; reply: string; success: boolean }>(ok.stdout)).toMatchObject({
      status: 'Completed',
      reply: 'SUCCESS',
      success: true,
    });
    const made = await ferry(
      [
        'connections',
        'create',
        '--org',
        String(svc.orgId),
        '--connector',
        'PostgreSQL',
        '--name',
        'Wrong password',
        '--set',
        'password=nope',
      ],
      { env },
    );
    expect(made.code, made.stderr).toBe(0);
    const bad = await ferry(
      ['connections', 'test', '--org', String(svc.orgId), 'Wrong password', '--agent', 'Tester'],
      { env },
    );
    expect(bad.code).toBe(1);
    expect(bad.stderr).toContain('password authentication failed');
  });

  it('logs out: the file is gone and calls need a login again', async () => {
    const out = await ferry(['logout'], { env });
    expect(out.code).toBe(0);
    expect(fs.existsSync(path.join(configDir, 'credentials.json'))).toBe(false);
    expect((await ferry(['connections', 'list', '--org', String(svc.orgId)], { env })).code).toBe(4);
  });
});
