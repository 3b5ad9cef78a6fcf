import { describe, expect, it } from 'vitest';
import { packRecords, type ConnectorRecord, type Value } from '../../../../src/connectors/sdk.js';
import {
  atStamp,
  compareShapedBytes,
  compareStamp,
  later,
  newer,
  OTHER_SHAPE,
  sameMark,
  stampBytes,
  stampShape,
  stampShapeBytes,
} from '../../../../src/maps/runtime/stamps.js';
import { MarkTracker } from '../../../../src/maps/runtime/watermark.js';
import { FirstCopy } from '../../../../src/maps/runtime/first-copy.js';

const sign = (n: number): number => Math.sign(n);

/** Pairs [older, newer] that the old first-copy comparator put the wrong way round, and a few it did not. */
const ORDERED: readonly (readonly [string, Value, Value])[] = [
  ['two zones', '2024-01-01T10:00:00+02:00', '2024-01-01T09:00:00Z'],
  ['two zones, ±hhmm', '2024-01-01T10:30:00+0200', '2024-01-01T09:00:00-0100'],
  ['two separators', '2024-01-01T09:00:00', '2024-01-01 10:00:00'],
  ['a fraction of a second', '2024-01-01T10:00:00Z', '2024-01-01T10:00:00.5Z'],
  ['one zone, by text', '2024-01-01T09:59:59+02:00', '2024-01-01T10:00:00+02:00'],
  ['a date and a time', '2024-01-01T23:59:59Z', '2024-01-02'],
  ['two dates', '2024-01-01', '2024-01-02'],
  ['text Date.parse reads, out of text order', '2024-01-01 09:00:00', '2024-01- 1 10:00:00'],
  ['text that is no date', 'apple', 'banana'],
  ['numbers', 5, 13],
  ['numbers of other lengths', 12, 100],
];

describe('compareStamp: the one order of stamps', () => {
  it.each(ORDERED)('%s: older < newer, and the other way round', (_, older, newerOne) => {
    expect(sign(compareStamp(newerOne, String(older)))).toBe(1);
    expect(sign(compareStamp(older, String(newerOne)))).toBe(-1);
    expect(newer(newerOne, String(older))).toBe(true);
    expect(newer(older, String(newerOne))).toBe(false);
    expect(later(String(older), newerOne)).toBe(String(newerOne));
    expect(later(String(newerOne), older)).toBe(String(newerOne));
  });

  it.each([
    ['two zones', '2024-01-01T11:00:00+02:00', '2024-01-01T09:00:00Z'],
    ['a fraction of zeros', '2024-01-01T10:00:00.000Z', '2024-01-01T10:00:00Z'],
    ['a date and its midnight (UTC)', '2024-01-01', '2024-01-01T00:00:00Z'],
    ['one text', 'apple', 'apple'],
    ['a number and its text', 5, '5.0'],
  ] as const)('%s: the same stamp', (_, a, b) => {
    expect(compareStamp(a, b)).toBe(0);
    expect(sameMark(b, a)).toBe(true);
    expect(atStamp(a, b)).toBe(true);
    // The mark stays the mark at the same instant.
    expect(later(b, a)).toBe(b);
  });

  it('no value is neither later nor the mark', () => {
    expect(later('2024-01-01T00:00:00Z', null)).toBe('2024-01-01T00:00:00Z');
    expect(later(null, undefined)).toBeNull();
    expect(later(null, '2024-01-01T00:00:00Z')).toBe('2024-01-01T00:00:00Z');
    expect(sameMark('2024-01-01T00:00:00Z', null)).toBe(false);
  });

  it('orders every two stamps that Date.parse reads by their instants, whatever their forms', () => {
    const stamps = [
      '2024-01-01T10:00:00Z',
      '2024-01-01T10:00:00.250Z',
      '2024-01-01t10:00:01z',
      '2024-01-01T12:00:00+02:00',
      '2024-01-01T09:00:00-01:00',
      '2024-01-01T11:30:00+0130',
      '2024-01-01T10:00:00',
      '2024-01-01 10:00:00',
      '2024-01-01 09:59:59.999',
      '2024-01-01',
      '2024-01-02',
      '2023-12-31T23:59:59Z',
      '2024-01- 1 10:00:00',
      '2024-01-01 10:00: 5',
      '2024-01-01 10:00:00 EST',
      'Jan 1, 2024 10:00:00 GMT',
    ];
    for (const a of stamps) {
      for (const b of stamps) {
        expect(sign(compareStamp(a, b)), `${a} against ${b}`).toBe(sign(Date.parse(a) - Date.parse(b)));
      }
    }
  });

  it('orders other text as text', () => {
    expect(sign(compareStamp('2024-01-01T10:00:00+02', '2024-01-01T09:00:00Z'))).toBe(1);
    expect(sign(compareStamp('not a date', '2024-01-01'))).toBe(1);
    expect(sign(compareStamp('1 000', '2 000'))).toBe(-1);
  });
});

describe('the bytes of packed batches', () => {
  const bytes = (s: string): Buffer => Buffer.from(s, 'utf8');
  const forms = [
    '2024-01-01',
    '2024-01-01T10:00:00',
    '2024-01-01 10:00:00',
    '2024-01-01T10:00:00Z',
    '2024-01-01T10:00:00.5Z',
    '2024-01-01T10:00:00.123+02:00',
    '2024-01-01T10:00:00-0500',
    '2024-01-01T10:00:00+02',
    '2024-01-01T10:00',
    '2024-01-01T10:00:00 EST',
    '2024-01- 1 10:00:00',
    '2024-01-01T10:00:00.Z',
    'apple',
  ];

  it('give a stamp the shape its text has', () => {
    for (const s of forms) expect(stampShapeBytes(bytes(s), 0, s.length), s).toBe(stampShape(s));
    // A mark is compared by bytes only in ASCII, where its bytes have its text's shape.
    expect(stampBytes('2024-01-01T10:00:00Z')).toEqual(bytes('2024-01-01T10:00:00Z'));
    expect(stampBytes('2024-01-01T10:00:00+0é:00')).toBeUndefined();
    expect(stampBytes('apple')).toBeUndefined();
    expect(forms.filter((s) => stampShape(s) < 0)).toEqual([
      '2024-01-01T10:00',
      '2024-01-01T10:00:00 EST',
      '2024-01- 1 10:00:00',
      '2024-01-01T10:00:00.Z',
      'apple',
    ]);
  });

  it('order two stamps of one shape as compareStamp does, and find every other of another shape', () => {
    const all = [
      ...forms,
      '2024-01-02',
      '2024-01-01T09:59:59Z',
      '2024-01-01T10:00:00.25Z',
      '2024-01-01T11:00:00.1+02:00',
      '2024-01-01T11:00:00+03:00',
    ];
    for (const o of all) {
      const shape = stampShape(o);
      if (shape < 0) continue;
      for (const s of all) {
        const c = compareShapedBytes(bytes(s), 0, s.length, shape, bytes(o), 0, o.length);
        const same = stampShape(s) === shape && s.slice(-(shape & 7) || s.length) === o.slice(-(shape & 7) || o.length);
        if (!same) {
          expect(c, `${s} against ${o}`).toBe(OTHER_SHAPE);
          continue;
        }
        expect(c, `${s} against ${o}`).not.toBe(OTHER_SHAPE);
        if (c !== 0) expect(sign(c), `${s} against ${o}`).toBe(sign(compareStamp(s, o)));
      }
    }
  });
});

describe('the watermark and the first copy order stamps alike', () => {
  const recs = (stamps: readonly Value[]): ConnectorRecord[] => stamps.map((m, i) => ({ id: i + 1, m }));

  /** The mark and the records at it after one batch, as MarkTracker, FirstCopy.batch and FirstCopy.batchPacked leave them. */
  function marks(
    stamps: readonly Value[],
    mark: string | null = null,
  ): { tracker: unknown; records: unknown; packed: unknown } {
    const batch = recs(stamps);
    const tracker = new MarkTracker(mark, [], 'm', ['id']);
    tracker.advance(batch);
    const initial = { parts: [], mark, atMark: [] };
    const records = new FirstCopy('id', 'm', initial);
    records.batch(batch);
    const packed = new FirstCopy('id', 'm', initial);
    packed.batchPacked(packRecords(batch, ['id', 'm']));
    return { tracker: tracker.state(), records: records.watermark(), packed: packed.watermark() };
  }

  it.each(ORDERED)('%s: each keeps the newer stamp, in either order of the rows', (_, older, newerOne) => {
    for (const stamps of [
      [older, newerOne],
      [newerOne, older],
      [older, null, newerOne, older],
    ]) {
      const { tracker, records, packed } = marks(stamps);
      const at = stamps.flatMap((s, i) => (s === newerOne ? [`k:[${i + 1}]`] : []));
      expect(tracker).toEqual({ lastRunDate: String(newerOne), processedAtLastRunDate: at });
      expect(records).toEqual(tracker);
      expect(packed).toEqual(tracker);
    }
  });

  it('two forms of one instant are both at the mark', () => {
    const { tracker, records, packed } = marks([
      '2024-01-01T11:00:00+02:00',
      '2024-01-01T09:00:00Z',
      '2024-01-01T08:00:00Z',
    ]);
    expect(tracker).toEqual({ lastRunDate: '2024-01-01T11:00:00+02:00', processedAtLastRunDate: ['k:[1]', 'k:[2]'] });
    expect(records).toEqual(tracker);
    expect(packed).toEqual(tracker);
  });

  it('a mark in another zone than the batch’s stamps is compared by instant', () => {
    // 10:00+02:00 is 08:00Z: the batch's 08:00Z is at the mark, its 07:59Z before it, 08:01Z after.
    const mark = '2024-01-01T10:00:00+02:00';
    const { tracker, records, packed } = marks(['2024-01-01T07:59:00Z', '2024-01-01T08:00:00Z'], mark);
    expect(tracker).toEqual({ lastRunDate: mark, processedAtLastRunDate: ['k:[2]'] });
    expect(records).toEqual(tracker);
    expect(packed).toEqual(tracker);
    expect(marks(['2024-01-01T08:01:00Z', '2024-01-01T08:00:00Z'], mark).packed).toEqual({
      lastRunDate: '2024-01-01T08:01:00Z',
      processedAtLastRunDate: ['k:[1]'],
    });
  });

  it('a record copied at the mark, read again with its stamp in another zone, is skipped by both', () => {
    const mark = '2024-01-01T10:00:00+02:00';
    const again = [
      { id: 1, m: '2024-01-01T08:00:00Z' },
      { id: 2, m: '2024-01-01T08:00:00Z' },
      { id: 3, m: '2024-01-01T09:00:00Z' },
    ];
    const tracker = new MarkTracker(mark, ['k:[1]'], 'm', ['id']);
    expect(tracker.skip(again).map((r) => r['id'])).toEqual([2, 3]);
    const part = new FirstCopy('id', 'm', { parts: [{ upTo: 1, since: mark }], mark, atMark: ['k:[1]'] });
    expect(part.toWrite(again).map((r) => r['id'])).toEqual([2, 3]);
    expect(part.toWritePacked(packRecords(again, ['id', 'm']))?.map((r) => r['id'])).toEqual([2, 3]);
  });
});
