import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { installerScript } from '../../../service/http/agent-package.js';

describe('the Agent installer script', () => {
  const script = installerScript({
    serviceUrl: 'https://ferry.example.com',
    installerUrl: 'https://ferry.example.com/i.sh',
    packageUrl: 'https://ferry.example.com/p.tgz',
  });

  it('registers into one Agent home and names it in the commands it prints last', () => {
    expect(script).toContain('agent install --home "$FERRY_AGENT_HOME"');
    const last = script.trimEnd().split('\n').pop() ?? '';
    expect(last).toContain('agent start --home $FERRY_AGENT_HOME');
    expect(last).toContain('agent run --home $FERRY_AGENT_HOME');
  });

  it('is valid POSIX shell', () => {
    const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-installer-')), 'install.sh');
    fs.writeFileSync(file, script);
    expect(() => execFileSync('sh', ['-n', file])).not.toThrow();
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  });
});
