import path from 'node:path';
import { agentPackageFiles, writeAgentPackageFile } from '../../service/http/agent-package-file.js';

const ROOT = path.resolve(import.meta.dirname, '../..');

/**
 * Writes `ferry-agent-<version>.tgz` into `dir`: this checkout's built Agent renamed to `version`
 * (as `ferry service agent-package` writes it). `broken`: the worker of that version exits at once
 * (it still answers `version`), as a release that cannot start on this machine would. Needs
 * `npm run build`.
 */
export function writeAgentPackage(dir: string, version: string, opts: { broken?: boolean } = {}): string {
  const files = agentPackageFiles(ROOT, version);
  if (opts.broken) {
    const entry = files.find((f) => f.name === 'package/dist/src/cli/main.js');
    if (!entry) throw new Error('no main.js in the package');
    const stop =
      "if (process.argv.includes('worker')) { process.stderr.write('this build cannot run here\\n'); process.exit(1); }\n";
    const text = entry.data.toString('utf8');
    // After the shebang line, if any, so that the module still parses.
    const at = text.startsWith('#!') ? text.indexOf('\n') + 1 : 0;
    entry.data = Buffer.from(text.slice(0, at) + stop + text.slice(at));
  }
  return writeAgentPackageFile(dir, version, files);
}
