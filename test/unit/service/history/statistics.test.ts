import { describe, expect, it } from 'vitest';
import {
  durationSeconds,
  formatDuration,
  parseStatistics,
  toStatistics,
} from '../../../../service/history/statistics.js';
import type { RunMapStats } from '../../../../src/protocol/solutions.js';

const rs: RunMapStats = {
  mapName: 'customers',
  entity: 'customers',
  processed: 3,
  failed: 0,
  minMs: 1,
  maxMs: 2,
  avgMs: 1.5,
  totalMs: 59_999,
  totalTime: '00:00:59',
  blocks: [],
};

describe('formatDuration', () => {
  it('writes hh:mm:ss, rounding down to the second, hours past 99 in more digits', () => {
    expect(formatDuration(0)).toBe('00:00:00');
    expect(formatDuration(59_999)).toBe('00:00:59');
    expect(formatDuration(3_723_000)).toBe('01:02:03');
    expect(formatDuration(100 * 3_600_000)).toBe('100:00:00');
    expect(formatDuration(-5)).toBe('00:00:00');
    expect(formatDuration(Number.NaN)).toBe('00:00:00');
  });
});

describe('durationSeconds', () => {
  it('counts from start to stop, or to now while running, never below zero', () => {
    const now = new Date('2026-01-01T00:10:00.000Z');
    expect(durationSeconds('2026-01-01T00:00:00.000Z', '2026-01-01T00:01:30.250Z', now)).toBe(90.25);
    expect(durationSeconds('2026-01-01T00:00:00.000Z', null, now)).toBe(600);
    expect(durationSeconds('2026-01-01T00:20:00.000Z', null, now)).toBe(0);
    expect(durationSeconds('garbage', null, now)).toBe(0);
  });
});

describe('parseStatistics and toStatistics', () => {
  it('reads the stored statistics, and nothing from what is not valid', () => {
    expect(parseStatistics(JSON.stringify([rs]))).toEqual([rs]);
    expect(parseStatistics('[]')).toEqual([]);
    expect(parseStatistics('{"no": "array"}')).toEqual([]);
    expect(parseStatistics('not json')).toEqual([]);
  });

  it('maps a Replication entity (no Map ID) and each Block of a Map', () => {
    const map: RunMapStats = {
      mapId: 3,
      mapName: 'Orders',
      processed: 2,
      failed: 1,
      minMs: 4,
      maxMs: 8,
      avgMs: 6,
      totalMs: 12,
      totalTime: '00:00:00',
      fatal: 'lost the connection',
      blocks: [
        {
          blockId: 'q',
          name: 'Query orders',
          blockType: 'Query',
          processed: 2,
          failed: 1,
          minMs: 4,
          maxMs: 8,
          avgMs: 6,
          totalMs: 12,
        },
      ],
    };
    const { mapStatistics, legacyCounters } = toStatistics([rs, map]);
    expect(mapStatistics).toEqual([
      {
        mapId: null,
        mapName: 'customers',
        entityName: 'customers',
        recordsProcessed: 3,
        recordsFailed: 0,
        minimum: 1,
        maximum: 2,
        average: 1.5,
        totalTime: 59_999,
        totalTimeFormatted: '00:00:59',
        fatalError: null,
      },
      {
        mapId: 3,
        mapName: 'Orders',
        entityName: null,
        recordsProcessed: 2,
        recordsFailed: 1,
        minimum: 4,
        maximum: 8,
        average: 6,
        totalTime: 12,
        totalTimeFormatted: '00:00:00',
        fatalError: 'lost the connection',
      },
    ]);
    expect(legacyCounters).toEqual([
      {
        mapName: 'Orders',
        blockId: 'q',
        blockName: 'Query orders',
        actionType: 'Query',
        callCount: 2,
        errorCount: 1,
        minimum: 4,
        maximum: 8,
        average: 6,
        totalTime: 12,
      },
    ]);
  });
});
