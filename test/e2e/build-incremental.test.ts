/**
 * `npm run build` (what `npm start` runs first) builds only what changed: on a copy of the sources,
 * a second build rewrites no file of dist, and a build after one source file changed rewrites that
 * file's output only.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';

const exec = promisify(execFile);
const ROOT = path.resolve(import.meta.dirname, '../..');
const npm = process.platform === 'win32' ? 'npm.cmd' : 'npm';

/** Every file under `dir` with its modification time in nanoseconds. */
function stamps(dir: string): Map<string, bigint> {
  const out = new Map<string, bigint>();
  for (const entry of fs.readdirSync(dir, { recursive: true, withFileTypes: true })) {
    if (!entry.isFile()) continue;
    const file = path.join(entry.parentPath, entry.name);
    out.set(path.relative(dir, file), fs.statSync(file, { bigint: true }).mtimeNs);
  }
  return out;
}

/** The files whose time differs between two snapshots, or that only one of them has. */
function changed(before: Map<string, bigint>, after: Map<string, bigint>): string[] {
  const names = new Set([...before.keys(), ...after.keys()]);
  return [...names].filter((n) => before.get(n) !== after.get(n)).sort();
}

describe('npm run build', () => {
  let dir: string;
  beforeAll(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-build-'));
    for (const name of ['src', 'service', 'connectors'])
      fs.cpSync(path.join(ROOT, name), path.join(dir, name), { recursive: true });
    for (const name of ['package.json', 'tsconfig.json', 'tsconfig.build.json'])
      fs.copyFileSync(path.join(ROOT, name), path.join(dir, name));
    fs.symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
  });
  afterAll(() => fs.rmSync(dir, { recursive: true, force: true }));

  const build = () => exec(npm, ['run', '--silent', 'build'], { cwd: dir, env: { ...process.env, CI: 'true' } });

  it(
    'rewrites nothing when nothing changed, and only the changed file after an edit',
    { timeout: 300_000 },
    async () => {
      await build();
      const dist = path.join(dir, 'dist');
      expect(fs.existsSync(path.join(dist, 'src/cli/main.js'))).toBe(true);
      expect(fs.existsSync(path.join(dist, 'connectors/csv/manifest.json'))).toBe(true);
      const first = stamps(dist);

      await build();
      expect(changed(first, stamps(dist))).toEqual([]);

      const source = path.join(dir, 'src/cli/up.ts');
      fs.appendFileSync(source, '\nexport const BUILD_PROBE = 1;\n');
      await build();
      const rewritten = changed(first, stamps(dist));
      expect(rewritten).toContain(path.join('src', 'cli', 'up.js'));
      // The file, its source map and the build's record of what it built; nothing else.
      expect(
        rewritten.filter((f) => !f.startsWith(path.join('src', 'cli', 'up.js')) && !f.endsWith('.tsbuildinfo')),
      ).toEqual([]);
    },
  );
});
