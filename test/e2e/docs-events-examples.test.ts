import { execFile } from 'node:child_process';
import path from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { checkOutputs, docExamples } from '../helpers/doc-examples.js';
import { ADMIN } from '../helpers/service.js';
import { until, type ServiceUnderTest } from './agent/harness.js';
import {
  createConnection,
  SQLITE,
  sqliteTarget,
  startWithAgent,
  stopAll,
  type RunningAgent,
  type SqliteTarget,
} from './solutions/harness.js';

const exec = promisify(execFile);
const DOC = path.resolve(import.meta.dirname, '../../docs/events.md');

/**
 * The curl examples of docs/events.md marked `<!-- example: events -->` run, in the order they
 * appear, as one bash script against a real Service with a real Agent: they set up an Event
 * Solution, send it messages (JSON, an array, XML, a header token, an idempotent retry) and list
 * and clear its endpoint. A comment line right under a command (`# {"accepted":1,…}`) is that
 * command's output, and must be printed, in order. Then the messages are in the target.
 */
const examples = (): string[] => docExamples(DOC, 'events');

describe('docs/events.md: the curl examples run against a Service and an Agent', () => {
  let sut: ServiceUnderTest;
  let agent: RunningAgent;
  let target: SqliteTarget;
  let db: string;

  beforeAll(async () => {
    ({ sut, agent } = await startWithAgent({ csv: {} }));
    target = sqliteTarget(path.join(sut.dataDir, 'orders.db'), ['orders'], { primaryKey: true });
    db = await createConnection(sut, 'Orders DB', SQLITE, { file: target.file });
  }, 240_000);

  afterAll(async () => {
    await stopAll(sut);
  });

  it('prints what the document says, and the messages arrive', { timeout: 180_000 }, async () => {
    const blocks = examples();
    expect(blocks.length).toBeGreaterThanOrEqual(8);
    const script = blocks.join('\n\n');
    const { stdout } = await exec('bash', ['-eo', 'pipefail', '-c', script], {
      cwd: sut.dataDir,
      timeout: 120_000,
      env: {
        ...process.env,
        FERRY_URL: sut.url,
        AUTH: `${ADMIN.email}:${ADMIN.password}`,
        ORG: String(sut.orgId),
        AGENT: agent.agentId,
        DB: db,
      },
    });
    checkOutputs(script, stdout, (message) => expect.fail(message));
    // Orders 42…48 went through the Map, unless the clear at the end took them first.
    await until('the orders in the target', async () => (target.count('orders') > 0 ? true : undefined), 60_000);
  });
});
