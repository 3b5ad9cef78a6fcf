import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { WorkerThread, workerFailure } from '../../../src/util/worker-thread.js';

const threads: Array<WorkerThread<unknown, unknown>> = [];

/** A thread of `factory`, closed after the test. */
function start<Req = unknown, Res = unknown>(
  factory: string,
  opts: { data?: unknown; graceful?: boolean } = {},
): WorkerThread<Req, Res> {
  const t = new WorkerThread<Req, Res>({ name: 'test', factory, ...opts });
  threads.push(t);
  return t;
}

afterEach(async () => {
  await Promise.all(threads.splice(0).map((t) => t.close()));
});

describe('WorkerThread', () => {
  it('answers calls in order, with the data the factory was given', async () => {
    const t = start<number, number>('(require, data) => (n) => ({ reply: n * data.factor })', { data: { factor: 3 } });
    expect(await Promise.all([1, 2, 3].map((n) => t.call(n)))).toEqual([3, 6, 9]);
    expect(t.alive).toBe(true);
    expect(t.pending).toBe(0);
  });

  it('moves transferred buffers both ways instead of copying them', async () => {
    const t = start<Uint8Array, Uint8Array>(
      '() => (bytes) => { bytes[0] += 1; return { reply: bytes, transfer: [bytes.buffer] }; }',
    );
    const sent = new Uint8Array([41, 1]);
    const back = await t.call(sent, [sent.buffer]);
    expect(sent.byteLength).toBe(0);
    expect([...back]).toEqual([42, 1]);
  });

  it('fails the call whose handler throws, with its code, and goes on answering', async () => {
    const t = start<string, string>(
      '() => (s) => { if (s === "bad") throw Object.assign(new TypeError("refused " + s), { code: "E_BAD" }); return { reply: s }; }',
    );
    const bad = t.call('bad');
    const good = t.call('good');
    await expect(bad).rejects.toMatchObject({
      failure: 'thrown',
      code: 'E_BAD',
      thrownName: 'TypeError',
      message: 'refused bad',
    });
    expect(await good).toBe('good');
    expect(t.alive).toBe(true);
  });

  it('fails every call when the factory throws, with its code, and is then not alive', async () => {
    const t = start('() => { throw Object.assign(new Error("no such file"), { code: "ENOENT" }); }');
    await expect(t.call(1)).rejects.toMatchObject({ failure: 'start', code: 'ENOENT', message: 'no such file' });
    expect(t.alive).toBe(false);
    await expect(t.call(2)).rejects.toMatchObject({ failure: 'start' });
  });

  it('fails the pending calls and every later one when the thread throws outside a call', async () => {
    const t = start<number, number>(
      '() => (n) => { if (n === 2) process.nextTick(() => { throw new Error("boom"); }); return { reply: n }; }',
    );
    const two = t.call(2);
    const three = t.call(3);
    expect(await two).toBe(2);
    await expect(three).rejects.toMatchObject({ failure: 'failed', message: 'The test thread failed: boom' });
    expect(t.alive).toBe(false);
    await expect(t.call(4)).rejects.toMatchObject({ failure: 'failed' });
  });

  it('settles the calls answered before the thread exited mid-call, and fails the rest', async () => {
    const t = start<number, number>('() => (n) => { if (n === 2) process.exit(7); return { reply: n }; }');
    const calls = [1, 2, 3].map((n) =>
      t.call(n).then(
        (r) => ({ r }),
        (e: unknown) => ({ e }),
      ),
    );
    const [one, two, three] = await Promise.all(calls);
    expect(one).toEqual({ r: 1 });
    expect(two).toMatchObject({ e: { failure: 'exited', message: 'The test thread stopped (exit code 7).' } });
    expect(three).toMatchObject({ e: { failure: 'exited' } });
    expect(t.alive).toBe(false);
  });

  it('close fails the calls still out with its reason, ends a thread that never answers, and fails later calls', async () => {
    const t = start('() => () => { for (;;); }');
    const stuck = t.call(1).catch((e: unknown) => e);
    const reason = new Error('the session was disconnected');
    await t.close(reason);
    expect(await stuck).toBe(reason);
    await expect(t.call(2)).rejects.toBe(reason);
    expect(t.alive).toBe(false);
    // Without a reason, the calls fail as closed.
    const u = start('() => () => { for (;;); }');
    const out = u.call(1).catch((e: unknown) => e);
    await u.close();
    expect(workerFailure(await out)).toBe('closed');
  });

  it('fails a call whose signal fires, and goes on answering the others', async () => {
    const t = start<number, number>(
      '() => (ms) => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms); return { reply: ms }; }',
    );
    const ac = new AbortController();
    const slow = t.call(300, undefined, ac.signal);
    setTimeout(() => ac.abort(), 20);
    await expect(slow).rejects.toMatchObject({ failure: 'aborted' });
    expect(await t.call(1)).toBe(1);
    const already = new AbortController();
    already.abort();
    await expect(t.call(1, undefined, already.signal)).rejects.toMatchObject({ failure: 'aborted' });
  });

  it('waitSync delivers every answer before it returns', () => {
    const t = start<number, number>(
      '() => (ms) => { Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms); return { reply: ms }; }',
    );
    const got: number[] = [];
    for (const ms of [30, 10, 0]) t.send(ms, { resolve: (r) => got.push(r), reject: () => got.push(-1) });
    expect(t.waitSync(10_000)).toBe(true);
    expect(got).toEqual([30, 10, 0]);
    t.send(500, { resolve: (r) => got.push(r), reject: () => got.push(-1) });
    expect(t.waitSync(20)).toBe(false);
  });

  it('waitSync sees a factory that failed, and fails its calls before it returns', () => {
    const t = start('(require) => require("./no-such-module-anywhere.js")');
    const got: Array<string | undefined> = [];
    t.send(1, { resolve: () => got.push('ok'), reject: (e) => got.push(workerFailure(e)) });
    expect(t.waitSync(10_000)).toBe(true);
    expect(got).toEqual(['start']);
    expect(t.alive).toBe(false);
  });

  it('a graceful close lets the handler dispose of what it holds before the thread ends', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'ferry-worker-thread-'));
    try {
      const file = path.join(dir, 'disposed');
      const t = start<number, number>(
        '(require, data) => ({ handle: (n) => ({ reply: n }), dispose: () => require("node:fs").writeFileSync(data.file, "yes") })',
        { data: { file }, graceful: true },
      );
      expect(await t.call(5)).toBe(5);
      await t.close();
      expect(fs.readFileSync(file, 'utf8')).toBe('yes');
      await expect(t.call(6)).rejects.toMatchObject({ failure: 'closed' });
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  });
});
