import { spawn, spawnSync } from 'node:child_process';
import path from 'node:path';
import { ADMIN, type Credentials } from './service.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/** Whether util-linux `script` is here to give the CLI a pseudo-terminal. */
export const HAS_SCRIPT = process.platform === 'linux' && spawnSync('script', ['--version']).status === 0;

/**
 * The time limit of a case in a suite whose cases each run several `ferry` processes. Each one
 * starts Node and tsx, most of a CPU-second: on a loaded two-core machine (the whole suite in
 * parallel) that is 4 s or more, so a case of seven runs passes the default 30 s with nothing wrong.
 */
export const CLI_SUITE_TIMEOUT_MS = 120_000;

/** How a `ferry` process ended. */
export interface CliRun {
  code: number;
  stdout: string;
  stderr: string;
}

export interface CliOptions {
  /** The process's whole environment: `loginEnv` for a logged-in CLI. */
  env: NodeJS.ProcessEnv;
  /** What stdin reads before its end (not on a terminal). */
  input?: string;
  /** On a pseudo-terminal (util-linux `script`, 200 columns): stdout and stderr both arrive on stdout. */
  terminal?: boolean;
  /** On a terminal: each prompt that appears is answered with the next answer, as a person types it. */
  answers?: Array<{ prompt: RegExp; answer: string }>;
  /** A process still going after this long is killed (SIGKILL), so that none outlives its test by long. */
  killAfterMs?: number;
}

/** A `ferry` process on its way. */
export interface CliProcess {
  /** Its end, with everything it wrote. */
  readonly done: Promise<CliRun>;
  /** Resolves once what it wrote so far (stdout and stderr) matches; rejects when it ends first. */
  waitFor(pattern: RegExp): Promise<void>;
}

/** The environment of a CLI logged in through FERRY_* to `service` as its administrator, with no config folder. */
export function loginEnv(
  service: { url: string; orgId: number; admin?: Credentials },
  extra: NodeJS.ProcessEnv = {},
): NodeJS.ProcessEnv {
  const admin = service.admin ?? ADMIN;
  return {
    ...process.env,
    FERRY_URL: service.url,
    FERRY_USER: admin.email,
    FERRY_PASSWORD: admin.password,
    FERRY_ORG: String(service.orgId),
    FERRY_LOG_LEVEL: 'silent',
    FERRY_CONFIG_DIR: '/nonexistent',
    ...extra,
  };
}

/** Starts `ferry ARGS` from the source tree, collecting what it writes. */
export function startFerry(args: string[], opts: CliOptions): CliProcess {
  const argv = [process.execPath, '--import', 'tsx', 'src/cli/main.ts', ...args];
  const [cmd, cmdArgs] = opts.terminal
    ? [
        'script',
        ['-qefc', `stty cols 200; exec ${argv.map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ')}`, '/dev/null'],
      ]
    : [argv[0] as string, argv.slice(1)];
  const child = spawn(cmd, cmdArgs, { cwd: ROOT, env: opts.env, stdio: ['pipe', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  const listeners = new Set<() => void>();
  const wrote = (): void => {
    for (const l of [...listeners]) l();
  };
  const answers = [...(opts.answers ?? [])];
  let unanswered = '';
  child.stdout.on('data', (c: Buffer) => {
    const text = c.toString('utf8');
    stdout += text;
    if (opts.terminal) {
      unanswered += text;
      const next = answers[0];
      if (next && next.prompt.test(unanswered)) {
        answers.shift();
        unanswered = '';
        child.stdin.write(`${next.answer}\r`);
      }
    }
    wrote();
  });
  child.stderr.on('data', (c: Buffer) => {
    stderr += c.toString('utf8');
    wrote();
  });
  // On a terminal stdin stays open: `script` passes what is typed to the prompts.
  if (!opts.terminal) child.stdin.end(opts.input ?? '');
  const timer = setTimeout(() => child.kill('SIGKILL'), opts.killAfterMs ?? 180_000);
  let closed = false;
  const done = new Promise<CliRun>((resolve, reject) => {
    child.on('error', reject);
    child.on('close', (code) => {
      closed = true;
      clearTimeout(timer);
      child.stdin.destroy();
      resolve({ code: code ?? -1, stdout, stderr });
      wrote();
    });
  });
  return {
    done,
    waitFor(pattern) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          if (pattern.test(stdout + stderr)) {
            listeners.delete(check);
            resolve();
          } else if (closed) {
            listeners.delete(check);
            reject(new Error(`ferry ${args.join(' ')} ended before writing ${pattern}:\n${stdout}${stderr}`));
          }
        };
        listeners.add(check);
        check();
      });
    },
  };
}

/** Runs `ferry ARGS` to its end. */
export function runFerry(args: string[], opts: CliOptions): Promise<CliRun> {
  return startFerry(args, opts).done;
}

/** Runs `ferry ARGS` to its end, logged in to `service` through FERRY_* (`env` added to that); stdout a pipe (JSON) unless `terminal`. */
export function ferry(
  service: Parameters<typeof loginEnv>[0],
  args: string[],
  opts: Omit<CliOptions, 'env'> & { env?: NodeJS.ProcessEnv } = {},
): Promise<CliRun> {
  return runFerry(args, { ...opts, env: loginEnv(service, opts.env) });
}

/** The JSON a run printed. */
export const parse = <T>(text: string): T => JSON.parse(text) as T;
