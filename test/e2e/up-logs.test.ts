/**
 * What `ferry up` (npm start) prints: on a terminal, the banner and readable log lines, with no
 * line per request at the default level; piped, JSON lines; FERRY_LOG_FORMAT overrides the choice.
 * Real processes; the terminal is a pseudo-terminal made by util-linux `script`.
 */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');
const UP_WITH_AGENT = [process.execPath, '--import', 'tsx', 'src/cli/main.ts', 'up', '--port', '0'];
const UP = [...UP_WITH_AGENT, '--no-agent'];
const hasScript = process.platform === 'linux' && spawnSync('script', ['--version']).status === 0;

interface Started {
  child: ChildProcess;
  text: () => string;
  dataDir: string;
  /** True once the process has exited and its output is all read. */
  closed: () => boolean;
}

const started: Started[] = [];
afterEach(() => {
  for (const s of started.splice(0)) {
    if (s.child.exitCode === null && s.child.signalCode === null) s.child.kill('SIGKILL');
    fs.rmSync(s.dataDir, { recursive: true, force: true });
  }
});

function start(
  env: Record<string, string>,
  onTerminal: boolean,
  up = UP,
  dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-up-logs-')),
): Started {
  const fullEnv = {
    ...process.env,
    FERRY_DATA_DIR: dataDir,
    FERRY_ADMIN_PASSWORD: 'correct-horse-battery',
    FERRY_DATABASE_URL: '',
    FERRY_LOG_FORMAT: '',
    FERRY_CLOUD_AGENTS: 'off',
    NO_COLOR: '1',
    ...env,
  };
  // `script` runs the command on a pseudo-terminal and copies what it prints to its own stdout. It
  // runs it through $SHELL -c; `exec` makes the command the shell's process whatever the shell (dash
  // would otherwise stay in between, take the SIGTERM itself and leave Ferry to die by SIGHUP).
  const [cmd, ...args] = onTerminal
    ? ['script', '-qfec', `exec ${up.map((a) => `'${a}'`).join(' ')}`, '/dev/null']
    : up;
  const child = spawn(cmd as string, args, { cwd: ROOT, env: fullEnv, stdio: ['pipe', 'pipe', 'pipe'] });
  let out = '';
  child.stdout?.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr?.on('data', (d: Buffer) => (out += d.toString()));
  let closed = false;
  child.once('close', () => (closed = true));
  const s = { child, text: () => out.replace(/\r\n/g, '\n'), dataDir, closed: () => closed };
  started.push(s);
  return s;
}

async function waitFor(s: Started, pattern: RegExp, ms: number): Promise<RegExpMatchArray> {
  const deadline = Date.now() + ms;
  for (;;) {
    const m = s.text().match(pattern);
    if (m) return m;
    if (s.closed()) throw new Error(`exited with ${s.child.exitCode}; output:\n${s.text()}`);
    if (Date.now() > deadline) throw new Error(`no match for ${pattern} within ${ms} ms; output:\n${s.text()}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Starts, makes a few API calls, stops with SIGTERM (to the process group under `script`), and answers the output. */
async function session(env: Record<string, string>, onTerminal: boolean): Promise<string> {
  const s = start(env, onTerminal);
  const [, url] = await waitFor(s, /listening on (http:\/\/[\w.:[\]]+)/, 60_000);
  const auth = `Basic ${Buffer.from('admin@ferry.local:correct-horse-battery').toString('base64')}`;
  for (let i = 0; i < 3; i++)
    expect((await fetch(`${url}/v1/orgs`, { headers: { authorization: auth } })).status).toBe(200);
  const exited = new Promise<void>((resolve) => s.child.once('exit', () => resolve()));
  if (onTerminal) spawnSync('pkill', ['-TERM', '-P', String(s.child.pid)]);
  else s.child.kill('SIGTERM');
  await waitFor(s, /shutting down/, 20_000);
  await exited;
  return s.text();
}

const logLines = (text: string): string[] =>
  text.split('\n').filter((l) => /shutting down|request completed|mail server/.test(l));

describe('ferry up output', () => {
  it.skipIf(!hasScript)(
    'on a terminal: the banner and readable lines, no request lines at info',
    { timeout: 120_000 },
    async () => {
      const text = await session({ FERRY_LOG_LEVEL: 'info' }, true);
      expect(text).toMatch(/Ferry Service listening on http/);
      expect(text).toMatch(/^\d\d:\d\d:\d\d\.\d{3} INFO {2}shutting down {2}signal=SIGTERM$/m);
      expect(text).not.toMatch(/^\{/m);
      expect(text).not.toMatch(/request completed|incoming request/);
    },
  );

  it('piped: JSON lines, and request lines only at debug', { timeout: 120_000 }, async () => {
    const info = await session({ FERRY_LOG_LEVEL: 'info' }, false);
    const lines = logLines(info);
    expect(lines.length).toBeGreaterThan(0);
    for (const line of lines) expect(() => JSON.parse(line) as unknown).not.toThrow();
    expect(info).not.toMatch(/request completed/);

    const debug = await session({ FERRY_LOG_LEVEL: 'debug' }, false);
    const completed = debug
      .split('\n')
      .filter((l) => l.includes('"request completed"'))
      .map((l) => JSON.parse(l) as { level: number; res: { statusCode: number } });
    expect(completed.length).toBeGreaterThanOrEqual(3);
    expect(completed.every((c) => c.level === 20)).toBe(true);
  });

  it('FERRY_LOG_FORMAT=pretty when piped; an unknown format is refused', { timeout: 120_000 }, async () => {
    const text = await session({ FERRY_LOG_FORMAT: 'pretty', FERRY_LOG_LEVEL: 'info' }, false);
    expect(text).toMatch(/ INFO {2}shutting down {2}signal=SIGTERM$/m);
    expect(text).not.toMatch(/^\{/m);

    const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-up-logs-'));
    const bad = spawnSync(UP[0] as string, UP.slice(1), {
      cwd: ROOT,
      env: { ...process.env, FERRY_LOG_FORMAT: 'xml', FERRY_DATA_DIR: dataDir },
      encoding: 'utf8',
      timeout: 60_000,
    });
    fs.rmSync(dataDir, { recursive: true, force: true });
    expect(bad.status).toBe(1);
    expect(bad.stderr).toMatch(/FERRY_LOG_FORMAT must be json or pretty/);
  });

  it(
    'an Agent folder the Service does not know (its store made anew): said at once, with what to do, and the Service runs on',
    { timeout: 120_000 },
    async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-up-logs-'));
      const instance = path.join(dataDir, 'agent', 'ferry-agent-1');
      fs.mkdirSync(instance, { recursive: true, mode: 0o700 });
      const agentId = '0b9c7a52-5c1e-4b7e-9a55-2f1d1f0c3e11';
      const config = {
        agentId,
        agentSecret: 'gone',
        orgId: 1,
        serviceUrl: 'http://127.0.0.1:1',
        name: 'old-host',
        serviceName: 'ferry-agent-1',
        fingerprint: 'fingerprint-of-old',
        installId: 'old',
        createdAt: new Date().toISOString(),
      };
      fs.writeFileSync(path.join(instance, 'config.json'), JSON.stringify(config), { mode: 0o600 });
      const s = start({ FERRY_LOG_LEVEL: 'warn' }, false, UP_WITH_AGENT, dataDir);
      const began = Date.now();
      await waitFor(
        s,
        new RegExp(`Agent: +"old-host" \\(${agentId}\\) is not known to this Service .*remove the instance folder`),
        60_000,
      );
      expect(Date.now() - began).toBeLessThan(45_000);
      expect(s.text()).not.toMatch(/connected, instance/);
      const [, url] = s.text().match(/listening on (http:\/\/[\w.:[\]]+)/) ?? [];
      const auth = `Basic ${Buffer.from('admin@ferry.local:correct-horse-battery').toString('base64')}`;
      expect((await fetch(`${url}/v1/orgs`, { headers: { authorization: auth } })).status).toBe(200);
      const exited = new Promise<void>((resolve) => s.child.once('exit', () => resolve()));
      s.child.kill('SIGTERM');
      await exited;
    },
  );
});
