import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAgentLogger } from '../../../src/logs/logger.js';

describe('the Agent logger', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-logs-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  const lines = () =>
    fs
      .readdirSync(dir)
      .filter((n) => n.endsWith('.log'))
      .flatMap((n) => fs.readFileSync(path.join(dir, n), 'utf8').split('\n').filter(Boolean))
      .map((l) => JSON.parse(l) as Record<string, unknown>);

  it('writes JSON lines with agentId, and solutionId and executionId from children, into a dated file', async () => {
    const { log, flush, close } = await createAgentLogger({
      logsDir: dir,
      level: 'info',
      agentId: 'agent-7',
      maxSize: '10m',
      files: 3,
      stdout: false,
    });
    log.child({ component: 'run', solutionId: 'sol-1', executionId: 'ex-1' }).info({ rows: 3 }, 'batch written');
    log.debug('hidden below the level');
    flush();
    await close();
    expect(fs.readdirSync(dir).some((n) => /^agent\.\d{4}-\d{2}-\d{2}\.1\.log$/.test(n))).toBe(true);
    expect(lines()).toEqual([
      expect.objectContaining({
        agentId: 'agent-7',
        component: 'run',
        solutionId: 'sol-1',
        executionId: 'ex-1',
        rows: 3,
        msg: 'batch written',
      }),
    ]);
  });

  it('never writes secrets: the agent secret, bearer headers, installation keys', async () => {
    const { log, close } = await createAgentLogger({
      logsDir: dir,
      level: 'info',
      agentId: 'a',
      maxSize: '10m',
      files: 3,
      stdout: false,
    });
    log.info(
      {
        agentSecret: 'S1',
        config: { agentSecret: 'S2' },
        headers: { authorization: 'Bearer a.S3' },
        agentInstallationKey: 'K1',
      },
      'careful',
    );
    await close();
    const text = fs
      .readdirSync(dir)
      .map((n) => fs.readFileSync(path.join(dir, n), 'utf8'))
      .join('');
    for (const secret of ['S1', 'S2', 'S3', 'K1']) expect(text).not.toContain(secret);
    expect(text).toContain('[redacted]');
  });

  it('rolls over by size and keeps only the configured number of files', async () => {
    const { log, flush, close } = await createAgentLogger({
      logsDir: dir,
      level: 'info',
      agentId: 'a',
      maxSize: '1k',
      files: 2,
      stdout: false,
    });
    for (let i = 0; i < 60; i++) {
      log.info({ i, pad: 'x'.repeat(100) }, 'filler');
      flush();
      // Rolling happens on the stream's drain; give it a turn.
      await new Promise((r) => setImmediate(r));
    }
    const deadline = Date.now() + 3000;
    while (fs.readdirSync(dir).filter((n) => n.endsWith('.log')).length > 3 && Date.now() < deadline)
      await new Promise((r) => setTimeout(r, 20));
    await close();
    const files = fs.readdirSync(dir).filter((n) => n.endsWith('.log'));
    expect(files.length).toBeGreaterThan(1);
    expect(files.length).toBeLessThanOrEqual(3);
  });

  it("creates its folder and every log file, rolled ones included, readable by the Agent's user only", async () => {
    const logsDir = path.join(dir, 'logs');
    const { log, flush, close } = await createAgentLogger({
      logsDir,
      level: 'debug',
      agentId: 'a',
      maxSize: '1k',
      files: 5,
      stdout: false,
    });
    // The roll happens in the logger's own time: on a loaded machine it can take seconds, so lines
    // keep coming (as they do in an Agent) until a second file exists.
    const rolled = (): boolean => fs.readdirSync(logsDir).filter((n) => n.endsWith('.log')).length >= 2;
    const deadline = Date.now() + 30_000;
    for (let i = 0; !rolled() && Date.now() < deadline; i++) {
      log.debug({ i, record: 'x'.repeat(100) }, 'record data at debug level');
      flush();
      await new Promise((r) => setTimeout(r, i < 30 ? 0 : 20));
    }
    await close();
    const files = fs.readdirSync(logsDir).filter((n) => n.endsWith('.log'));
    expect(files.length).toBeGreaterThan(1);
    expect(fs.statSync(logsDir).mode & 0o777).toBe(0o700);
    for (const f of files)
      expect({ f, mode: fs.statSync(path.join(logsDir, f)).mode & 0o777 }).toEqual({ f, mode: 0o600 });
  });
});
