// Builds the web console into dist/console (part of `npm run build`, which `npm install` and
// `npm start` run) when its sources changed since the last build: a hash of the sources and of
// the toolchain's versions is kept beside the output, so an unchanged console rewrites nothing.
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const root = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(root, '../dist/console');
const stampFile = path.join(out, '.source-hash');

if (!fs.existsSync(path.join(root, 'index.html'))) {
  // A copy of the tree without the console (some packaging steps copy only the server).
  process.stdout.write('console: no sources, not built\n');
  process.exit(0);
}

/** @param {string} dir @returns {string[]} */
function filesUnder(dir) {
  return fs
    .readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) => path.join(e.parentPath, e.name))
    .sort();
}

const hash = createHash('sha256');
const inputs = [
  ...['index.html', 'vite.config.ts', 'tsconfig.json', 'build.mjs'].map((f) => path.join(root, f)),
  ...filesUnder(path.join(root, 'src')),
];
for (const file of inputs)
  hash.update(path.relative(root, file)).update('\0').update(fs.readFileSync(file)).update('\0');
for (const pkg of ['vite', 'preact']) {
  const { version } = JSON.parse(fs.readFileSync(path.resolve(root, `../node_modules/${pkg}/package.json`), 'utf8'));
  hash.update(`${pkg}@${version}\0`);
}
const digest = hash.digest('hex');

const built = fs.existsSync(path.join(out, 'index.html')) && fs.existsSync(stampFile);
if (built && fs.readFileSync(stampFile, 'utf8') === digest) process.exit(0);

const { build } = await import('vite');
await build({ root, configFile: path.join(root, 'vite.config.ts'), logLevel: 'warn' });
fs.writeFileSync(stampFile, digest);
process.stdout.write(`console: built into ${path.relative(process.cwd(), out) || out}\n`);
