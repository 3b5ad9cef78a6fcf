import { describe, expect, it } from 'vitest';
import { resumeValue } from '../../../../src/maps/runtime/resume-point.js';
import { countsOf, withCounts } from '../../../../src/maps/runtime/run-counts.js';
import { parseResumePoint } from '../../../../src/maps/runtime/resume-point.js';
import { parseWatermark } from '../../../../src/maps/runtime/checkpoint.js';

const COUNTS = {
  run: 'b0000000-0000-4000-8000-000000000001',
  processed: 4_000,
  failed: 3,
  at: '2024-05-01T10:00:04.000Z',
};

describe("a run's counts in a transactional checkpoint", () => {
  it('rides along a watermark and a resume point, which still read as themselves', () => {
    const wm = JSON.stringify(
      withCounts({ lastRunDate: '2024-01-02T00:00:00Z', processedAtLastRunDate: ['k:[1]'] }, COUNTS),
    );
    expect(countsOf(wm)).toEqual(COUNTS);
    expect(parseWatermark(wm, 'a Map')).toEqual({
      lastRunDate: '2024-01-02T00:00:00Z',
      processedAtLastRunDate: ['k:[1]'],
    });
    const point = resumeValue({ run: COUNTS.run, read: 4_000, last: 'abc' }, COUNTS);
    expect(countsOf(point)).toEqual(COUNTS);
    expect(parseResumePoint(point)).toEqual({ run: COUNTS.run, read: 4_000, last: 'abc' });
  });

  it('is absent from a checkpoint written without it, a cleared one, and anything that does not read as counts', () => {
    expect(countsOf(null)).toBeNull();
    expect(countsOf('null')).toBeNull();
    expect(countsOf(resumeValue(null))).toBeNull();
    expect(countsOf('{"lastRunDate":"2024-01-02T00:00:00Z"}')).toBeNull();
    expect(countsOf('not json')).toBeNull();
    expect(countsOf(JSON.stringify({ counted: { ...COUNTS, processed: -1 } }))).toBeNull();
    expect(countsOf(JSON.stringify({ counted: { ...COUNTS, processed: 1.5 } }))).toBeNull();
    expect(countsOf(JSON.stringify({ counted: { ...COUNTS, run: 7 } }))).toBeNull();
  });
});
