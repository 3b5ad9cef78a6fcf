import fs from 'node:fs';
import path from 'node:path';
import { packFiles, type PackageFile } from '../../src/connectors/package.js';
import { packageEntries } from './agent-package.js';

/**
 * The files of this build's Agent package as `npm pack` lays them out under `package/` (dist/,
 * connectors/, installer/, package.json and its lock), `version` written into its package.json
 * when given. Throws when the build is missing (no dist/).
 */
export function agentPackageFiles(root?: string, version?: string): PackageFile[] {
  const entries = packageEntries(root);
  if (!entries) throw new Error('This Ferry is not built (no dist/src/cli/main.js): run npm run build first.');
  const files: PackageFile[] = [];
  for (const f of entries.files) {
    let data = fs.readFileSync(f.source);
    if (version && f.name === 'package/package.json')
      data = Buffer.from(JSON.stringify({ ...(JSON.parse(data.toString('utf8')) as object), version }, null, 2));
    files.push({ name: f.name, data });
  }
  for (const d of entries.dirs) walk(d.source, d.name, files);
  return files;
}

function walk(dir: string, name: string, out: PackageFile[]): void {
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) walk(full, `${name}/${e.name}`, out);
    else if (e.isFile() && !e.name.endsWith('.tsbuildinfo'))
      out.push({ name: `${name}/${e.name}`, data: fs.readFileSync(full) });
  }
}

/** Writes `ferry-agent-<version>.tgz` of `files` into `dir` (the folder the Service offers Agent versions from). */
export function writeAgentPackageFile(dir: string, version: string, files: readonly PackageFile[]): string {
  fs.mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `ferry-agent-${version}.tgz`);
  const tmp = `${file}.tmp`;
  fs.writeFileSync(tmp, packFiles(files));
  // Renamed into place: the Service never reads a half-written package.
  fs.renameSync(tmp, file);
  return file;
}
