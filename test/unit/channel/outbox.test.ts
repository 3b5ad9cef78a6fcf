import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { Outbox } from '../../../src/channel/outbox.js';

describe('the durable outbox', () => {
  let dir: string;
  beforeEach(() => {
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-outbox-'));
  });
  afterEach(() => fs.rmSync(dir, { recursive: true, force: true }));

  it('keeps reports in order across a reopen until acknowledged', () => {
    const file = path.join(dir, 'outbox.db');
    const a = new Outbox(file);
    const r1 = a.enqueue({ kind: 'started', at: '2025-01-01T00:00:00.000Z', version: '1' });
    const r2 = a.enqueue({ kind: 'status', status: 'Running', at: '2025-01-01T00:00:01.000Z' });
    const r3 = a.enqueue({ kind: 'shutdown', at: '2025-01-01T00:00:02.000Z', status: 'Shutdown' });
    a.close();

    const b = new Outbox(file);
    expect(b.size).toBe(3);
    expect(b.pending().map((p) => p.report)).toEqual([r1, r2, r3]);
    b.acknowledge(r1.id);
    // Acknowledging twice (a duplicate ack) is harmless.
    b.acknowledge(r1.id);
    b.close();

    const c = new Outbox(file);
    expect(c.pending().map((p) => p.report.id)).toEqual([r2.id, r3.id]);
    expect(c.pending(0, 1).map((p) => p.report.id)).toEqual([r2.id]);
    c.close();
  });

  it('gives every report a unique durable ID and wakes the sender', () => {
    const box = new Outbox(path.join(dir, 'o.db'));
    let wakes = 0;
    const off = box.onEnqueue(() => wakes++);
    const ids = new Set(
      Array.from({ length: 20 }, () => box.enqueue({ kind: 'status', status: 'Running', at: 'now' }).id),
    );
    expect(ids.size).toBe(20);
    expect(wakes).toBe(20);
    off();
    box.enqueue({ kind: 'status', status: 'Running', at: 'now' });
    expect(wakes).toBe(20);
    box.close();
  });

  it('moves a report the Service refuses as invalid out of the way', () => {
    const box = new Outbox(path.join(dir, 'o.db'));
    const bad = box.enqueue({ kind: 'status', status: 'Running', at: 'x' });
    const good = box.enqueue({ kind: 'status', status: 'Running', at: 'y' });
    box.reject(bad.id, '{"code":"CHN_INVALID_MESSAGE"}');
    expect(box.pending().map((p) => p.report.id)).toEqual([good.id]);
    box.close();
  });

  it('hands the sender each report as the text of its message, setting aside rows that no longer read as a report', () => {
    const file = path.join(dir, 'o.db');
    const box = new Outbox(file);
    const first = box.enqueue({ kind: 'status', status: 'Running', at: 'a' });
    const [damaged, unknown, last] = box.enqueueAll([
      { kind: 'status', status: 'Running', at: 'b' },
      { kind: 'status', status: 'Running', at: 'c' },
      { kind: 'started', at: 'd', version: '1' },
    ]);
    box.close();
    const raw = new Database(file);
    raw.prepare('UPDATE outbox SET body = ? WHERE id = ?').run('{not json', damaged);
    raw.prepare('UPDATE outbox SET body = ? WHERE id = ?').run('{"kind":"fromALaterVersion"}', unknown);
    raw.close();
    const reopened = new Outbox(file);
    const m1 = reopened.next();
    expect(JSON.parse(m1?.text ?? '')).toEqual(first);
    reopened.acknowledge(first.id);
    const m2 = reopened.next();
    expect(m2?.id).toBe(last);
    expect(JSON.parse(m2?.text ?? '')).toEqual({
      id: last,
      type: 'report',
      at: expect.any(String),
      report: { kind: 'started', at: 'd', version: '1' },
    });
    reopened.acknowledge(last ?? '');
    expect(reopened.next()).toBeUndefined();
    reopened.close();
    const check = new Database(file);
    expect(check.prepare('SELECT id FROM outbox_dead ORDER BY seq').all()).toEqual([{ id: damaged }, { id: unknown }]);
    check.close();
  });

  it('stores a group of reports in order, or none of them when one is invalid', () => {
    const box = new Outbox(path.join(dir, 'o.db'));
    const ids = box.enqueueAll([
      { kind: 'status', status: 'Running', at: 'a' },
      { kind: 'started', at: 'b', version: '1' },
    ]);
    expect(box.pending().map((p) => p.report.id)).toEqual(ids);
    expect(() =>
      box.enqueueAll([
        { kind: 'status', status: 'Running', at: 'c' },
        { kind: 'status', status: 'Sleeping', at: 'd' } as never,
      ]),
    ).toThrow();
    expect(box.size).toBe(2);
    expect(box.enqueueAll([])).toEqual([]);
    box.close();
  });

  it('sets aside a stored row that no longer reads as a report instead of stopping the queue', () => {
    const file = path.join(dir, 'o.db');
    const box = new Outbox(file);
    const first = box.enqueue({ kind: 'status', status: 'Running', at: 'a' });
    const damaged = box.enqueue({ kind: 'status', status: 'Running', at: 'b' });
    const last = box.enqueue({ kind: 'status', status: 'Running', at: 'c' });
    box.close();
    const raw = new Database(file);
    raw.prepare('UPDATE outbox SET body = ? WHERE id = ?').run('{not json', damaged.id);
    raw.close();
    const reopened = new Outbox(file);
    expect(reopened.pending().map((p) => p.report.id)).toEqual([first.id, last.id]);
    expect(reopened.size).toBe(2);
    reopened.close();
    const check = new Database(file);
    expect(check.prepare('SELECT id FROM outbox_dead').all()).toEqual([{ id: damaged.id }]);
    check.close();
  });
});
