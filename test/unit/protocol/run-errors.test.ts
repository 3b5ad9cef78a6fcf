import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ReportBody } from '../../../src/protocol/channel.js';
import {
  errorsOf,
  MAX_SOURCE_KEY_FIELDS,
  MAX_SOURCE_KEY_TEXT,
  RunErrorsReport,
  RunRecordError,
  shareErrorFields,
  SourceKey,
  sourceKeyOf,
} from '../../../src/protocol/solutions.js';

const refused = (n: number, extra: Partial<RunRecordError> = {}): RunRecordError => ({
  id: randomUUID(),
  mapId: 3,
  mapName: 'CSV to orders',
  sourceEntity: 'orders',
  blockId: 'b2',
  blockName: 'Create orders',
  code: 'CON_WRITE_REFUSED',
  errorMessage: 'new row for relation "orders" violates check constraint "orders_qty_check"',
  errorDetail: JSON.stringify({ nativeCode: '23514' }),
  canReprocess: true,
  failedRecordId: randomUUID(),
  ...extra,
});

describe('runErrors reports with shared fields', () => {
  it('sends the fields every error has alike once, and reads back the same errors', () => {
    const errors = [
      refused(1),
      refused(2, { errorMessage: 'other text' }),
      refused(3, { failedRecordId: undefined, canReprocess: false }),
    ];
    delete errors[2]?.failedRecordId;
    const report = {
      kind: 'runErrors' as const,
      runId: randomUUID(),
      solutionId: randomUUID(),
      ...shareErrorFields(errors),
    };
    expect(report.shared).toEqual({
      mapId: 3,
      mapName: 'CSV to orders',
      sourceEntity: 'orders',
      blockId: 'b2',
      blockName: 'Create orders',
      code: 'CON_WRITE_REFUSED',
      errorDetail: '{"nativeCode":"23514"}',
    });
    expect(report.errors[0]).toEqual({
      id: errors[0]?.id,
      errorMessage: errors[0]?.errorMessage,
      canReprocess: true,
      failedRecordId: errors[0]?.failedRecordId,
    });
    // Through JSON and validation, as the Service receives it.
    const parsed = ReportBody.parse(JSON.parse(JSON.stringify(report)));
    expect(parsed.kind).toBe('runErrors');
    expect(errorsOf(parsed as RunErrorsReport)).toEqual(errors);
    // A quarter of the size, or less, for a report of errors that differ only in their IDs.
    const alike = Array.from({ length: 200 }, (_, i) => refused(i));
    const whole = JSON.stringify({ errors: alike }).length;
    expect(JSON.stringify(shareErrorFields(alike)).length).toBeLessThan(whole / 3.5);
  });

  it('shares nothing for one error, or for fields an error leaves out, so that no error gains a field it did not have', () => {
    const one = [refused(1)];
    expect(shareErrorFields(one)).toEqual({ errors: one });
    const noBlock = refused(2);
    delete noBlock.blockId;
    delete noBlock.mapId;
    const { shared, errors } = shareErrorFields([refused(1), noBlock]);
    expect(shared).not.toHaveProperty('blockId');
    expect(shared).not.toHaveProperty('mapId');
    expect(errorsOf({ shared, errors })[1]).toEqual(noBlock);
  });

  it('refuses an error that lacks a required field in itself and in shared, naming it', () => {
    const base = { kind: 'runErrors', runId: randomUUID(), solutionId: randomUUID() };
    const bad = RunErrorsReport.safeParse({
      ...base,
      shared: { mapName: 'm', sourceEntity: 'e', code: 'c', errorDetail: '{}', canReprocess: false },
      errors: [{ id: '1', errorMessage: 'x' }, { id: '2' }],
    });
    expect(bad.success).toBe(false);
    expect(bad.error?.issues.map((i) => i.path.join('.'))).toEqual(['errors.1.errorMessage']);
    // Errors sent whole, as older Agents send them, are taken as before.
    expect(RunErrorsReport.safeParse({ ...base, errors: [refused(1)] }).success).toBe(true);
    expect(RunErrorsReport.safeParse({ ...base, errors: [{ id: '1', mapName: 'm' }] }).success).toBe(false);
  });
});

describe('the source record of a record error', () => {
  it('travels with each error, never in shared, and reads back whole; an older Service drops it', () => {
    const errors = [
      refused(1, { sourceKey: { id: 7 }, sourceRow: 1 }),
      refused(2, { sourceKey: { id: 7 }, sourceRow: 2 }),
    ];
    const report = {
      kind: 'runErrors' as const,
      runId: randomUUID(),
      solutionId: randomUUID(),
      ...shareErrorFields(errors),
    };
    expect(report.shared).not.toHaveProperty('sourceKey');
    expect(report.shared).not.toHaveProperty('sourceRow');
    expect(report.errors.map((e) => [e.sourceKey, e.sourceRow])).toEqual([
      [{ id: 7 }, 1],
      [{ id: 7 }, 2],
    ]);
    const parsed = ReportBody.parse(JSON.parse(JSON.stringify(report)));
    if (parsed.kind !== 'runErrors') throw new Error('not runErrors');
    expect(JSON.parse(JSON.stringify(errorsOf(parsed)))).toEqual(errors);
    // What a Service from before the fields reads: the same report with them stripped as unknown.
    const old = RunRecordError.omit({ sourceKey: true, sourceRow: true }).partial().required({ id: true });
    expect(old.parse(errors[0])).not.toHaveProperty('sourceKey');
  });

  it("is the entity's key fields within the protocol's bounds", () => {
    expect(sourceKeyOf([], { id: 1 })).toBeUndefined();
    expect(sourceKeyOf(['id', 'region'], { id: 1, name: 'x' })).toEqual({ id: 1, region: null });
    const long = sourceKeyOf(['code'], { code: 'y'.repeat(5000) });
    expect(long?.['code']).toHaveLength(MAX_SOURCE_KEY_TEXT);
    expect(SourceKey.safeParse(long).success).toBe(true);
    expect(sourceKeyOf(['n'], { n: Number.NaN })).toEqual({ n: null });
    const wide = Array.from({ length: 40 }, (_, i) => `k${i}`);
    expect(Object.keys(sourceKeyOf(wide, {}) ?? {})).toHaveLength(MAX_SOURCE_KEY_FIELDS);
    expect(SourceKey.safeParse({ code: 'y'.repeat(1001) }).success).toBe(false);
  });
});
