import { describe, expect, it } from 'vitest';
import { recordError } from '../../../../src/maps/runtime/record-error.js';
import { RunRecordError } from '../../../../src/protocol/solutions.js';

const base = {
  mapName: 'orders',
  sourceEntity: 'orders',
  blockId: 'write',
  blockName: 'Upsert',
  code: 'RUN_WRITE_FAILED',
  errorMessage: 'refused',
  errorDetail: '{}',
};

describe('the one record-error constructor', () => {
  it('gives time-ordered IDs and names the record by its key', () => {
    const a = recordError({ ...base, key: { fields: ['id'], record: { id: 7, name: 'x' } }, sourceRow: 3 });
    const b = recordError(base);
    expect(a.id < b.id).toBe(true);
    expect(a.sourceKey).toEqual({ id: 7 });
    expect(a.sourceRow).toBe(3);
    expect(a.canReprocess).toBe(false);
    expect(b.sourceKey).toBeUndefined();
    expect(recordError({ ...base, key: { fields: [], record: { id: 1 } } }).sourceKey).toBeUndefined();
  });

  it('keeps every field within the protocol, so a report of it is never refused', () => {
    const e = recordError({
      ...base,
      mapName: 'm'.repeat(900),
      sourceEntity: 'e'.repeat(2000),
      blockName: 'b'.repeat(900),
      errorMessage: 'x'.repeat(20_000),
      errorDetail: 'd'.repeat(50_000),
      key: { fields: ['k'], record: { k: 'v'.repeat(5000) } },
    });
    expect(e.errorMessage).toHaveLength(10_000);
    expect(e.errorDetail).toHaveLength(20_000);
    expect(RunRecordError.safeParse({ ...e, mapId: 1 }).success).toBe(true);
  });
});
