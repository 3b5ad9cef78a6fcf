import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The folder of the Ferry package (the one whose package.json is named `ferry`), found by walking
 * up from this module: the same answer from the sources (tsx) and from `dist/`.
 */
export function packageRoot(from: string = path.dirname(fileURLToPath(import.meta.url))): string {
  for (let dir = from; ; dir = path.dirname(dir)) {
    try {
      const pkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8')) as { name?: unknown };
      if (pkg.name === 'ferry') return dir;
    } catch {
      // No package.json here: keep walking up.
    }
    if (path.dirname(dir) === dir) throw new Error(`No Ferry package.json above ${from}`);
  }
}

/** The `version` of the Ferry package.json: the API's version in the OpenAPI document. */
export function packageVersion(): string {
  const pkg = JSON.parse(fs.readFileSync(path.join(packageRoot(), 'package.json'), 'utf8')) as { version?: unknown };
  if (typeof pkg.version !== 'string') throw new Error('The Ferry package.json has no version');
  return pkg.version;
}
