import { describe, expect, it } from 'vitest';
import {
  defaultLaterThan,
  executionSortOf,
  historyResultOf,
  isoOr,
  parseInstant,
} from '../../../../service/history/query.js';

describe('parseInstant', () => {
  it('reads dates and date-times as clients write them, UTC unless an offset is given', () => {
    expect(parseInstant('2024-1-1')?.toISOString()).toBe('2024-01-01T00:00:00.000Z');
    expect(parseInstant('2024-01-31T10:00')?.toISOString()).toBe('2024-01-31T10:00:00.000Z');
    expect(parseInstant('2024-1-31 9:05:07.1234567Z')?.toISOString()).toBe('2024-01-31T09:05:07.000Z');
    expect(parseInstant('2024-01-31T10:00:00+02:00')?.toISOString()).toBe('2024-01-31T08:00:00.000Z');
    expect(parseInstant('2024-01-31T10:00:00.000Z')?.toISOString()).toBe('2024-01-31T10:00:00.000Z');
  });

  it('reads dates back to the .NET minimum, as public clients send them (1753-01-01, 0001-01-01)', () => {
    expect(parseInstant('1753-01-01')?.toISOString()).toBe('1753-01-01T00:00:00.000Z');
    expect(parseInstant('1899-12-31T23:59:59Z')?.toISOString()).toBe('1899-12-31T23:59:59.000Z');
    expect(parseInstant('0001-01-01T00:00:00')?.toISOString()).toBe('0001-01-01T00:00:00.000Z');
    expect(parseInstant('0099-12-31')?.toISOString()).toBe('0099-12-31T00:00:00.000Z');
  });

  it('refuses what is not a real date', () => {
    for (const text of ['', 'yesterday', '2024-2-30', '2024-13-01', '31/01/2024', '2024-01-01T25:00', '1e9'])
      expect(parseInstant(text), text).toBeUndefined();
  });
});

describe('executionSortOf and historyResultOf', () => {
  it('read a sort column by name in any case, or by its index 0..3', () => {
    expect(['0', '1', '2', '3'].map(executionSortOf)).toEqual(['Start', 'Result', 'RecordsProcessed', 'RecordsFailed']);
    expect(executionSortOf('recordsfailed')).toBe('RecordsFailed');
    expect(executionSortOf(' START ')).toBe('Start');
    for (const text of ['4', '-1', '01', 'Duration', '']) expect(executionSortOf(text), text).toBeUndefined();
  });

  it('read a result in any case, InProgress included', () => {
    expect(historyResultOf('inprogress')).toBe('InProgress');
    expect(historyResultOf('RECORDERRORSANDFATALERRORS')).toBe('RecordErrorsAndFatalErrors');
    expect(historyResultOf('Failed')).toBeUndefined();
  });
});

describe('defaultLaterThan and isoOr', () => {
  it('opens the window 45 days back', () => {
    expect(defaultLaterThan(new Date('2026-03-01T00:00:00Z')).toISOString()).toBe('2026-01-15T00:00:00.000Z');
  });

  it('normalizes reported timestamps so that they compare as text, else falls back', () => {
    expect(isoOr('2026-01-01T10:00:00+01:00', 'x')).toBe('2026-01-01T09:00:00.000Z');
    expect(isoOr('2026-01-01T10:00:00Z', 'x')).toBe('2026-01-01T10:00:00.000Z');
    expect(isoOr('not a time', 'fallback')).toBe('fallback');
    expect(isoOr(undefined, 'fallback')).toBe('fallback');
  });
});
