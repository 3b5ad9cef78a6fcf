import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOutputs, docExamples } from '../../helpers/doc-examples.js';
import { startService, type TestService } from '../../helpers/service.js';

const exec = promisify(execFile);
const DOC = path.resolve(import.meta.dirname, '../../../docs/metrics.md');
const TOKEN = 'docs-metrics-token-0123456789abcdef';

/**
 * The curl examples of docs/metrics.md marked `<!-- example: metrics -->` run, in order, as one
 * bash script against a real Service started with a metrics token and a metrics listener; the
 * output comment under each command must be printed.
 */
describe('docs/metrics.md: the curl examples run against a Service', () => {
  let svc: TestService;

  beforeAll(async () => {
    svc = await startService({ name: 'sqlite' }, { metricsToken: TOKEN, metricsListen: '127.0.0.1:0' });
  }, 60_000);

  afterAll(() => svc?.close());

  it('prints what the document says', { timeout: 60_000 }, async () => {
    const blocks = docExamples(DOC, 'metrics');
    expect(blocks.length).toBe(2);
    const script = blocks.join('\n\n');
    const listen = new URL(svc.service.metricsUrl() ?? '').host;
    const { stdout } = await exec('bash', ['-eo', 'pipefail', '-c', script], {
      timeout: 30_000,
      env: { ...process.env, FERRY_URL: svc.url, FERRY_METRICS_TOKEN: TOKEN, FERRY_METRICS_LISTEN: listen },
    });
    checkOutputs(script, stdout, (message) => expect.fail(message));
  });
});
