import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Collects a child's stdout so that several patterns can be awaited in turn. */
function watch(child: ChildProcess) {
  let out = '';
  child.stdout?.on('data', (chunk: Buffer) => (out += chunk.toString()));
  return {
    text: () => out,
    /** Polls the output until `pattern` matches or the deadline passes. */
    async waitFor(pattern: RegExp, ms: number): Promise<RegExpMatchArray> {
      const deadline = Date.now() + ms;
      for (;;) {
        const m = out.match(pattern);
        if (m) return m;
        if (child.exitCode !== null) throw new Error(`exited with ${child.exitCode}; output:\n${out}`);
        if (Date.now() > deadline) throw new Error(`no match for ${pattern} within ${ms} ms; output:\n${out}`);
        await new Promise((r) => setTimeout(r, 50));
      }
    },
  };
}

describe('ferry up (what npm start runs) as a real process', () => {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-up-'));
  let child: ChildProcess | undefined;
  afterAll(() => {
    if (child?.pid && child.exitCode === null) child.kill('SIGKILL');
    fs.rmSync(dataDir, { recursive: true, force: true });
  });

  it('starts on SQLite, prints the generated password once, serves the API and stops on SIGTERM', async () => {
    const start = () =>
      spawn(process.execPath, ['--import', 'tsx', 'src/cli/main.ts', 'up', '--port', '0'], {
        cwd: ROOT,
        env: {
          ...process.env,
          FERRY_DATA_DIR: dataDir,
          FERRY_LOG_LEVEL: 'warn',
          FERRY_ADMIN_PASSWORD: '',
          FERRY_DATABASE_URL: '',
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
    child = start();
    const first = watch(child);
    const [, url] = await first.waitFor(/listening on (http:\/\/\S+)/, 60_000);
    const [, password] = await first.waitFor(/Password: (\S+)/, 5_000);
    expect(password).toBeTruthy();
    const auth = `Basic ${Buffer.from(`admin@ferry.local:${password}`).toString('base64')}`;
    const res = await fetch(`${url}/v1/orgs`, { headers: { authorization: auth } });
    expect(res.status).toBe(200);
    expect(fs.existsSync(path.join(dataDir, 'ferry.db'))).toBe(true);
    const exited = new Promise<number | null>((resolve) => child?.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited).toBe(0);

    // A second start keeps the store and does not print a password again.
    child = start();
    const second = watch(child);
    const [, url2] = await second
      .waitFor(/Try: /, 60_000)
      .then(() => second.waitFor(/listening on (http:\/\/\S+)/, 1_000));
    const again = await fetch(`${url2}/v1/orgs`, { headers: { authorization: auth } });
    expect(again.status).toBe(200);
    expect(second.text()).not.toMatch(/Password:/);
    const exited2 = new Promise<number | null>((resolve) => child?.once('exit', resolve));
    child.kill('SIGTERM');
    expect(await exited2).toBe(0);
  });

  it(
    'npm start hands a signal to the Service and its Agent: SIGINT to npm (what a process manager or Ctrl-C sends) stops them all',
    { timeout: 180_000 },
    async () => {
      const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-npm-start-'));
      const npm = spawn('npm', ['start', '--', '--port', '0'], {
        cwd: ROOT,
        env: {
          ...process.env,
          FERRY_DATA_DIR: dir,
          FERRY_LOG_LEVEL: 'warn',
          FERRY_ADMIN_PASSWORD: 'a-long-enough-password',
          FERRY_DATABASE_URL: '',
        },
        stdio: ['ignore', 'pipe', 'inherit'],
      });
      try {
        const out = watch(npm);
        // The banner names the Agent only once the API shows it connected, by the API's name.
        const [, name, agentId, folder] = await out.waitFor(
          /Agent: +"([^"]+)" \(([0-9a-f-]{36})\) connected, instance ferry-agent-1 in (\S+) /,
          150_000,
        );
        const [, url] = out.text().match(/listening on (http:\/\/\S+)/) ?? [];
        const auth = `Basic ${Buffer.from('admin@ferry.local:a-long-enough-password').toString('base64')}`;
        const agents = (await (
          await fetch(`${url}/v1/orgs/1/agents`, { headers: { authorization: auth } })
        ).json()) as Array<{ id: string; name: string; status: string }>;
        expect(agents.find((a) => a.id === agentId)).toMatchObject({ name, status: 'Running' });
        expect(folder).toBe(path.join(dir, 'agent', 'ferry-agent-1'));
        expect(out.text()).toContain(`Next:     curl -u admin@ferry.local:PASSWORD ${url}/v1/orgs/1/agents`);
        expect(out.text()).not.toMatch(/ferry-agent-1 running/);
        /** The processes started for this data folder (the Service, the Agent's supervisor and worker). */
        const ours = (): string[] =>
          fs
            .readdirSync('/proc')
            .filter((p) => /^\d+$/.test(p))
            .flatMap((p) => {
              try {
                const args = fs.readFileSync(`/proc/${p}/cmdline`, 'utf8').split('\0').join(' ');
                const env = fs.readFileSync(`/proc/${p}/environ`, 'utf8');
                return args.includes(dir) || env.includes(`FERRY_DATA_DIR=${dir}`) ? [`${p} ${args}`] : [];
              } catch {
                return [];
              }
            });
        expect(ours().length).toBeGreaterThanOrEqual(3);
        const exited = new Promise<void>((resolve) => npm.once('exit', () => resolve()));
        npm.kill('SIGINT');
        await exited;
        let left = ours();
        for (let i = 0; i < 100 && left.length > 0; i++) {
          await new Promise((r) => setTimeout(r, 100));
          left = ours();
        }
        expect(left).toEqual([]);
      } finally {
        if (npm.exitCode === null) npm.kill('SIGKILL');
        fs.rmSync(dir, { recursive: true, force: true });
      }
    },
  );
});
