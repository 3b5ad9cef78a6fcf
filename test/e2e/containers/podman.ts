/**
 * Podman for the image tests: the command line these machines run containers with, the build
 * context of prebuilt files (no registry and no network in the build), and the two images of
 * installer/docker/Dockerfile built on a local base image (installer/docker/local-base.sh).
 *
 *   local-base.sh ─▶ localhost/ferry-base-test:<hash> (this machine's node, dash, a few tools; reused)
 *   esbuild ─▶ <cache>/prebuilt/dist ; production node_modules (hard links), src, connectors, installer
 *   podman build --target service|agent --build-arg BASE=<local base> --build-arg APP=prebuilt <cache>
 */
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { build } from 'esbuild';

export const ROOT = path.resolve(import.meta.dirname, '../../..');
export const DOCKERFILE = path.join(ROOT, 'installer/docker/Dockerfile');
/** podman's global options on these machines (Debian's podman, no systemd: runc and cgroupfs). */
export const PODMAN_GLOBAL = ['--runtime', 'runc', '--cgroup-manager=cgroupfs'];
export const SERVICE_IMAGE = 'localhost/ferry-service:test';
export const AGENT_IMAGE = 'localhost/ferry-agent:test';
/** The build context: kept between runs (podman's layer cache then redoes only what changed). */
const CONTEXT = path.join(ROOT, 'node_modules/.cache/ferry-images');

export interface Run {
  code: number;
  stdout: string;
  stderr: string;
}

/** Whether podman runs here (the reason when it does not). */
export function podmanMissing(): string | undefined {
  const r = spawnSync('podman', ['--version'], { encoding: 'utf8' });
  if (r.error) return `podman is not installed (${r.error.message}): apt-get install -y podman runc`;
  if (r.status !== 0) return `podman --version failed: ${r.stderr}`;
  return undefined;
}

/** Runs `podman <global options> <args>` to its end; `check` throws on a non-zero exit. */
export function podman(args: string[], opts: { check?: boolean; timeoutMs?: number } = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn('podman', [...PODMAN_GLOBAL, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (c: Buffer) => (stdout += c.toString()));
    child.stderr.on('data', (c: Buffer) => (stderr += c.toString()));
    const timer = setTimeout(() => child.kill('SIGKILL'), opts.timeoutMs ?? 120_000);
    child.once('error', reject);
    child.once('close', (code, signal) => {
      clearTimeout(timer);
      const run = { code: code ?? (signal ? 128 : -1), stdout, stderr };
      if (opts.check && run.code !== 0)
        reject(new Error(`podman ${args.join(' ')} exited ${run.code} (${signal ?? ''}):\n${stderr || stdout}`));
      else resolve(run);
    });
  });
}

/** A TCP port free on loopback now. */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')),
      );
    });
  });
}

/** Runs a command to its end, throwing with its output when it fails. */
function run(command: string, args: string[], opts: { cwd?: string; allowFailure?: boolean } = {}): string {
  const r = spawnSync(command, args, { cwd: opts.cwd ?? ROOT, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 });
  if (r.error) throw r.error;
  if (r.status !== 0 && !opts.allowFailure)
    throw new Error(`${command} ${args.join(' ')} exited ${r.status}:\n${r.stderr}${r.stdout}`);
  return r.stdout;
}

/** The local base image (built once per machine and script version); answers its name. */
export function localBase(): string {
  const out = run(path.join(ROOT, 'installer/docker/local-base.sh'), []).trim().split('\n');
  const tag = out[out.length - 1];
  if (!tag?.startsWith('localhost/')) throw new Error(`local-base.sh printed no image name:\n${out.join('\n')}`);
  return tag;
}

/** The top-level folders of the production dependencies under node_modules/ (nested ones come with them). */
function productionPackages(): string[] {
  // npm ls exits non-zero on extraneous packages; the list is still complete.
  const out = run('npm', ['ls', '--omit=dev', '--all', '--parseable'], { allowFailure: true });
  const dirs = new Set<string>();
  for (const line of out.split('\n')) {
    const rel = path.relative(ROOT, line.trim());
    if (rel.startsWith('node_modules' + path.sep) && !rel.slice('node_modules/'.length).includes('node_modules'))
      dirs.add(rel);
  }
  if (dirs.size === 0) throw new Error('npm ls listed no production dependency');
  return [...dirs].sort();
}

/** Files of the production dependencies that nothing loads at run time: typings, source maps, docs, native sources and objects. */
const UNUSED = [
  /\.d\.[cm]?ts$/,
  /\.map$/,
  /\.md$/i,
  /^better-sqlite3\/(deps|src|build\/Release\/(obj|obj\.target|\.deps))$/,
  /^isolated-vm\/(src|vendor|native-example)$/,
];

/** Removes what {@link UNUSED} names under `dir` (hard links: the checkout's files stay). */
function pruneUnused(dir: string, rel = ''): void {
  for (const entry of fs.readdirSync(path.join(dir, rel), { withFileTypes: true })) {
    const name = rel ? `${rel}/${entry.name}` : entry.name;
    if (UNUSED.some((re) => re.test(name))) fs.rmSync(path.join(dir, name), { recursive: true, force: true });
    else if (entry.isDirectory()) pruneUnused(dir, name);
  }
}

/**
 * Makes the `prebuilt` build context: prebuilt/app/ with the sources transpiled by esbuild (into
 * the context, not into the checkout's dist/), the connector manifests, the checkout's built web
 * console (dist/console) and the sources the Service bundles Connector packages from; prebuilt/node_modules/ with the checkout's production
 * dependencies (hard links: native modules built here match the base image's glibc, which is this
 * machine's), without what {@link UNUSED} names. Answers the context's folder.
 */
export async function prebuiltContext(): Promise<string> {
  const app = path.join(CONTEXT, 'prebuilt/app');
  const modules = path.join(CONTEXT, 'prebuilt');
  fs.mkdirSync(app, { recursive: true });
  const outDir = path.join(app, 'dist');
  fs.rmSync(outDir, { recursive: true, force: true });
  // Each file on its own, as tsc emits it (isolatedModules and verbatimModuleSyntax make that exact),
  // in a second instead of a type-checking build: `npm run typecheck` checks the types.
  const sources = ['src', 'service', 'connectors'].flatMap((dir) =>
    fs
      .readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts'))
      .map((f) => path.join(ROOT, dir, f)),
  );
  await build({
    entryPoints: sources,
    outdir: outDir,
    outbase: ROOT,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    sourcemap: true,
    logLevel: 'error',
  });
  for (const name of fs.readdirSync(path.join(ROOT, 'connectors'))) {
    const manifest = path.join(ROOT, 'connectors', name, 'manifest.json');
    if (fs.existsSync(manifest)) fs.copyFileSync(manifest, path.join(outDir, 'connectors', name, 'manifest.json'));
  }
  // The web console, as `npm run build` (which `npm ci` runs) made it: its toolchain is a development dependency.
  const consoleDir = path.join(ROOT, 'dist/console');
  if (fs.existsSync(consoleDir)) fs.cpSync(consoleDir, path.join(outDir, 'console'), { recursive: true });
  for (const file of ['package.json', 'package-lock.json', 'README.md'])
    fs.copyFileSync(path.join(ROOT, file), path.join(app, file));
  for (const dir of ['src', 'connectors', 'installer']) {
    fs.rmSync(path.join(app, dir), { recursive: true, force: true });
    fs.cpSync(path.join(ROOT, dir), path.join(app, dir), { recursive: true });
  }
  fs.rmSync(path.join(modules, 'node_modules'), { recursive: true, force: true });
  const packages = productionPackages();
  const linked = spawnSync('cp', ['-al', '--parents', ...packages, modules], { cwd: ROOT, encoding: 'utf8' });
  if (linked.status !== 0) {
    // Another file system than the checkout's: copies instead of links.
    fs.rmSync(path.join(modules, 'node_modules'), { recursive: true, force: true });
    run('cp', ['-a', '--parents', ...packages, modules]);
  }
  pruneUnused(path.join(modules, 'node_modules'));
  return CONTEXT;
}

/** Builds one target of the Dockerfile from the prebuilt context on `base`; answers the build's milliseconds. */
export async function buildImage(target: 'service' | 'agent', base: string, context: string): Promise<number> {
  const started = Date.now();
  const tag = target === 'service' ? SERVICE_IMAGE : AGENT_IMAGE;
  await podman(
    [
      'build',
      '--quiet',
      // The OCI format drops HEALTHCHECK.
      '--format',
      'docker',
      '--file',
      DOCKERFILE,
      '--build-arg',
      `BASE=${base}`,
      '--build-arg',
      'APP=prebuilt',
      '--target',
      target,
      '--tag',
      tag,
      context,
    ],
    { check: true, timeoutMs: 600_000 },
  );
  return Date.now() - started;
}
