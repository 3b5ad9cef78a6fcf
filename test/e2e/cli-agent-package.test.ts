import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { AgentPackages } from '../../service/agents/agent-updates.js';
import { CLI_SUITE_TIMEOUT_MS, runFerry } from '../helpers/cli.js';

/** `ferry service agent-package` publishes this build where the Service offers Agent versions. */
describe('ferry service agent-package', () => {
  it(
    'writes a package the Service offers, under the version asked for',
    { timeout: CLI_SUITE_TIMEOUT_MS },
    async () => {
      const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-agent-package-'));
      try {
        const run = await runFerry(['service', 'agent-package', '--data-dir', dataDir, '--version', '3.1.4'], {
          env: { ...process.env },
        });
        expect(run.code, run.stderr).toBe(0);
        const dir = path.join(dataDir, 'agent-packages');
        expect(run.stdout.trim()).toBe(path.join(dir, 'ferry-agent-3.1.4.tgz'));
        const offered = new AgentPackages(dir).list();
        expect(offered.map((p) => p.version)).toEqual(['3.1.4']);
        expect(offered[0]?.size).toBe(fs.statSync(path.join(dir, 'ferry-agent-3.1.4.tgz')).size);
        // Not a package: ignored, not offered.
        fs.writeFileSync(path.join(dir, 'ferry-agent-9.9.9.tgz'), 'not a gzip');
        expect(new AgentPackages(dir).list().map((p) => p.version)).toEqual(['3.1.4']);
      } finally {
        fs.rmSync(dataDir, { recursive: true, force: true });
      }
    },
  );
});
