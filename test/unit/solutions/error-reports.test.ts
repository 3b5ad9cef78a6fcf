import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { MAX_MESSAGE_BYTES, Report } from '../../../src/protocol/channel.js';
import { MAX_ERRORS_PER_REPORT, type RunRecordError } from '../../../src/protocol/solutions.js';
import { ErrorBatcher } from '../../../src/solutions/error-reports.js';

const error = (over: Partial<RunRecordError> = {}): RunRecordError => ({
  id: randomUUID(),
  mapId: 1,
  mapName: 'orders',
  sourceEntity: 'orders.csv',
  blockId: 'b2',
  blockName: 'Create',
  code: 'RUN_WRITE_FAILED',
  errorMessage: 'Create: orders refused the record: new row violates check constraint "c"',
  errorDetail: '{"blockId":"b2","recordError":{"code":"CheckViolation"}}',
  canReprocess: true,
  failedRecordId: randomUUID(),
  ...over,
});

/** The report message's size in bytes, as the channel sends it. */
const messageBytes = (errors: RunRecordError[]): number =>
  Buffer.byteLength(
    JSON.stringify(
      Report.parse({
        id: randomUUID(),
        type: 'report',
        at: new Date().toISOString(),
        report: { kind: 'runErrors', runId: randomUUID(), solutionId: randomUUID(), errors },
      }),
    ),
  );

/** Lets the microtasks queued so far run. */
const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('record errors in reports', () => {
  it('writes the full reports of one pass together, a microtask later, and the rest at the end, in order', async () => {
    const writes: RunRecordError[][][] = [];
    const batcher = new ErrorBatcher((reports) => writes.push(reports));
    const errors = Array.from({ length: 2 * MAX_ERRORS_PER_REPORT + 7 }, () => error());
    for (const e of errors) batcher.add(e);
    expect(writes).toEqual([]);
    await tick();
    expect(writes.map((w) => w.map((r) => r.length))).toEqual([[MAX_ERRORS_PER_REPORT, MAX_ERRORS_PER_REPORT]]);
    batcher.flush();
    expect(writes.map((w) => w.map((r) => r.length))).toEqual([[MAX_ERRORS_PER_REPORT, MAX_ERRORS_PER_REPORT], [7]]);
    expect(writes.flat(2)).toEqual(errors);
  });

  it('keeps every report within a channel message, whatever the errors\u2019 texts', () => {
    const writes: RunRecordError[][] = [];
    const batcher = new ErrorBatcher((reports) => writes.push(...reports));
    // Long texts of 3-byte characters and a detail full of quotes: 200 of them would be ~20 MB.
    const errors = Array.from({ length: MAX_ERRORS_PER_REPORT }, () =>
      error({ errorMessage: '\u6f22'.repeat(10_000), errorDetail: '"'.repeat(20_000) }),
    );
    for (const e of errors) batcher.add(e);
    batcher.flush();
    expect(writes.length).toBeGreaterThan(1);
    expect(writes.flat()).toEqual(errors);
    for (const report of writes) expect(messageBytes(report)).toBeLessThanOrEqual(MAX_MESSAGE_BYTES);
  });

  it('throws a failed write from the next add and writes its reports later, none lost or doubled', async () => {
    const written: RunRecordError[] = [];
    let fail = true;
    const batcher = new ErrorBatcher((reports) => {
      if (fail) throw new Error('disk full');
      written.push(...reports.flat());
    });
    const errors = Array.from({ length: MAX_ERRORS_PER_REPORT + 1 }, () => error());
    for (const e of errors.slice(0, MAX_ERRORS_PER_REPORT)) batcher.add(e);
    await tick();
    expect(() => batcher.add(errors[MAX_ERRORS_PER_REPORT] as RunRecordError)).toThrow('disk full');
    fail = false;
    batcher.add(errors[MAX_ERRORS_PER_REPORT] as RunRecordError);
    batcher.flush();
    expect(written).toEqual(errors);
  });
});
