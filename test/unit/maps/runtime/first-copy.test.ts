import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { packRecords, type ConnectorRecord } from '../../../../src/connectors/sdk.js';
import { FirstCopy } from '../../../../src/maps/runtime/first-copy.js';
import { FileReplicationState } from '../../../../src/solutions/replication-state.js';

const at = (s: number): string => new Date(Date.UTC(2024, 0, 1, 0, 0, s)).toISOString();
const rec = (id: number | string, s: number | null): ConnectorRecord => ({
  id,
  m: s === null ? null : at(s),
  v: `r${id}`,
});

describe('FirstCopy', () => {
  it('a first part reads everything and saves the last key it wrote with the newest stamp it read', () => {
    const part = new FirstCopy('id', 'm', null);
    expect(part.filter()).toBeUndefined();
    expect(part.batch([rec(1, 5), rec(2, 9), rec(3, 2), rec(4, 9)])).toBe(true);
    expect(part.state()).toEqual({ parts: [{ upTo: 4, since: at(9) }], mark: at(9), atMark: ['k:[2]', 'k:[4]'] });
  });

  it('a resumed part reads what follows the last key and what changed since its part copied it', () => {
    const part = new FirstCopy('id', 'm', { parts: [{ upTo: 4, since: at(9) }], mark: at(9), atMark: [] });
    expect(part.filter()).toEqual({
      op: 'or',
      args: [
        { op: '>', field: 'id', value: 4 },
        { op: '>=', field: 'm', value: at(9) },
      ],
    });
  });

  it('a part that read no stamp asks only that a record has one', () => {
    const part = new FirstCopy('id', 'm', { parts: [{ upTo: 'k', since: null }], mark: null, atMark: [] });
    expect(part.filter()).toEqual({
      op: 'or',
      args: [
        { op: '>', field: 'id', value: 'k' },
        { op: 'not', arg: { op: 'isNull', field: 'm' } },
      ],
    });
  });

  it('with integer keys a part that passes an earlier one replaces it; one that stops short of it keeps it', () => {
    const first = { parts: [{ upTo: 100, since: at(10) }], mark: at(10), atMark: [] };
    const past = new FirstCopy('id', 'm', first);
    past.batch([rec(3, 30), rec(150, 12)]);
    expect(past.state().parts).toEqual([{ upTo: 150, since: at(30) }]);

    const short = new FirstCopy('id', 'm', first);
    short.batch([rec(3, 30), rec(50, 31)]);
    const s = short.state();
    expect(s.parts).toEqual([
      { upTo: 100, since: at(10) },
      { upTo: 50, since: at(31) },
    ]);
    // Both terms: up to 50 what changed since 31, from 50 to 100 what changed since 10, all after 100.
    expect(new FirstCopy('id', 'm', s).filter()).toEqual({
      op: 'and',
      args: [
        {
          op: 'or',
          args: [
            { op: '>', field: 'id', value: 100 },
            { op: '>=', field: 'm', value: at(10) },
          ],
        },
        {
          op: 'or',
          args: [
            { op: '>', field: 'id', value: 50 },
            { op: '>=', field: 'm', value: at(31) },
          ],
        },
      ],
    });
  });

  it('with text keys every part stays: JavaScript does not know the datastore’s order of them', () => {
    const part = new FirstCopy('id', 'm', { parts: [{ upTo: 'b', since: at(10) }], mark: at(10), atMark: [] });
    part.batch([rec('c', 11)]);
    expect(part.state().parts).toEqual([
      { upTo: 'b', since: at(10) },
      { upTo: 'c', since: at(11) },
    ]);
  });

  it('a part that has written nothing saves what it found', () => {
    const found = { parts: [{ upTo: 7, since: at(3) }], mark: at(3), atMark: ['k:[7]'] };
    expect(new FirstCopy('id', 'm', found).state()).toEqual(found);
  });

  it('records an earlier part copied at exactly the mark are read again but not written again, as records or packed', () => {
    const found = { parts: [{ upTo: 10, since: at(5) }], mark: at(5), atMark: ['k:[4]', 'k:[9]'] };
    const batch = [rec(4, 5), rec(6, 5), rec(9, 7), rec(11, 5), rec(12, null)];
    const part = new FirstCopy('id', 'm', found);
    // 4 is at the mark and was copied there; 6 is at it but was not; 9 was, but has changed since.
    expect(part.toWrite(batch).map((r) => r['id'])).toEqual([6, 9, 11, 12]);
    expect(part.toWritePacked(packRecords(batch, ['id', 'm', 'v']))?.map((r) => r['id'])).toEqual([6, 9, 11, 12]);
    expect(part.toWritePacked(packRecords([rec(6, 5), rec(11, 8)], ['id', 'm', 'v']))).toBeUndefined();
    // Folded in, the batch leaves 9's newer stamp as the mark, its records at it remembered.
    part.batch(batch);
    expect(part.state()).toEqual({ parts: [{ upTo: 12, since: at(7) }], mark: at(7), atMark: ['k:[9]'] });
    expect(part.watermark()).toEqual({ lastRunDate: at(7), processedAtLastRunDate: ['k:[9]'] });
  });

  it('a packed batch moves the mark and the position as its records would', () => {
    const batch = [rec(1, 3), rec(2, 8), rec(3, 8), rec(4, 1)];
    const packed = new FirstCopy('id', 'm', { parts: [{ upTo: 0, since: at(2) }], mark: at(2), atMark: [] });
    const records = new FirstCopy('id', 'm', { parts: [{ upTo: 0, since: at(2) }], mark: at(2), atMark: [] });
    expect(packed.batchPacked(packRecords(batch, ['id', 'm', 'v']))).toBe(true);
    records.batch(batch);
    expect(packed.state()).toEqual(records.state());
    expect(packed.state()).toEqual({ parts: [{ upTo: 4, since: at(8) }], mark: at(8), atMark: ['k:[2]', 'k:[3]'] });
  });
});

describe('FileReplicationState: a first copy’s progress', () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-first-copy-'));

  it('round-trips its parts', async () => {
    const cp = new FileReplicationState(dir).entity('orders', 'm');
    const state = {
      parts: [
        { upTo: 'b', since: at(1) },
        { upTo: 'a', since: null },
      ],
      mark: at(1),
      atMark: ['k:["b"]'],
    };
    await cp.saveInitial(state);
    expect(await new FileReplicationState(dir).entity('orders', 'm').loadInitial()).toEqual(state);
  });

  it('reads a file that has the last key and the first part’s mark as one part', async () => {
    const cp = new FileReplicationState(dir).entity('old', 'm');
    await cp.saveInitial({ parts: [], mark: null, atMark: [] });
    const file = fs.readdirSync(dir).find((f) => f.startsWith('old.m.') && f.endsWith('.initial.json')) as string;
    fs.writeFileSync(path.join(dir, file), JSON.stringify({ afterKey: 3000, mark: at(4), atMark: ['k:[2999]'] }));
    expect(await cp.loadInitial()).toEqual({
      parts: [{ upTo: 3000, since: at(4) }],
      mark: at(4),
      atMark: ['k:[2999]'],
    });
  });

  it('a file that is not progress starts the copy over', async () => {
    const cp = new FileReplicationState(dir).entity('bad', 'm');
    await cp.saveInitial({ parts: [], mark: null, atMark: [] });
    const file = fs.readdirSync(dir).find((f) => f.startsWith('bad.m.') && f.endsWith('.initial.json')) as string;
    fs.writeFileSync(
      path.join(dir, file),
      JSON.stringify({ parts: [{ upTo: null, since: at(1) }], mark: at(1), atMark: [] }),
    );
    expect(await cp.loadInitial()).toBeNull();
  });
});
