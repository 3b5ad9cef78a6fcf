import { describe, expect, it } from 'vitest';
import { FerryError } from '../../../../src/errors/ferry-error.js';
import { isTargetFailure, withTargetRetry, type RetryNotice } from '../../../../src/maps/runtime/target-retry.js';

const FAST = { budgetMs: 400, firstDelayMs: 10, maxDelayMs: 40 };
const gone = (): FerryError =>
  new FerryError('CON_UNREACHABLE', 'The Create batch failed: terminating connection due to administrator command', {
    details: { nativeCode: '57P01' },
  });

describe('withTargetRetry', () => {
  it('tries a call whose datastore went away again, with back-off, until it answers', async () => {
    let calls = 0;
    const notices: RetryNotice[] = [];
    const out = await withTargetRetry(
      'W: Create in t',
      FAST,
      new AbortController().signal,
      () => (++calls < 4 ? Promise.reject(gone()) : Promise.resolve('written')),
      { onRetry: (n) => notices.push(n) },
    );
    expect(out).toBe('written');
    expect(calls).toBe(4);
    expect(notices.map((n) => n.waitMs)).toEqual([10, 20, 40]);
    expect(notices.every((n) => n.error.code === 'CON_UNREACHABLE')).toBe(true);
  });

  it('past the budget throws RUN_TARGET_UNAVAILABLE naming the last failure and its native code', async () => {
    const t0 = performance.now();
    const err = await withTargetRetry('W: Create in t', FAST, new AbortController().signal, () =>
      Promise.reject(gone()),
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'RUN_TARGET_UNAVAILABLE', details: { cause: { code: 'CON_UNREACHABLE' } } });
    expect((err as Error).message).toMatch(
      /^W: Create in t: the datastore stayed unavailable for 0\.\d s \(\d+ tries\)\. CON_UNREACHABLE \(57P01\): The Create batch failed/,
    );
    const took = performance.now() - t0;
    expect(took).toBeGreaterThanOrEqual(FAST.budgetMs - 5);
    expect(took).toBeLessThan(FAST.budgetMs + 5_000);
  });

  it('passes any other failure on at once, and stops waiting when the signal fires', async () => {
    let calls = 0;
    const refused = new FerryError('CON_ENTITY_NOT_FOUND', 'no such table');
    await expect(
      withTargetRetry('W', FAST, new AbortController().signal, () => (++calls, Promise.reject(refused))),
    ).rejects.toBe(refused);
    expect(calls).toBe(1);
    const ac = new AbortController();
    const waiting = withTargetRetry('W', { ...FAST, budgetMs: 60_000, firstDelayMs: 30_000 }, ac.signal, () =>
      Promise.reject(gone()),
    );
    setTimeout(() => ac.abort(), 20);
    const t0 = performance.now();
    await expect(waiting).rejects.toMatchObject({ code: 'CON_UNREACHABLE' });
    expect(performance.now() - t0).toBeLessThan(10_000);
  });

  it('asks before each later try whether the failed one had committed after all', async () => {
    let calls = 0;
    const out = await withTargetRetry(
      'W',
      FAST,
      new AbortController().signal,
      () => (++calls, Promise.reject(gone())),
      { settled: () => Promise.resolve(calls >= 2 ? 'committed' : undefined) },
    );
    expect(out).toBe('committed');
    expect(calls).toBe(2);
  });

  it('counts the datastore failures by code, not by text', () => {
    for (const code of [
      'CON_UNREACHABLE',
      'CON_TIMEOUT',
      'CON_AUTH_FAILED',
      'CON_DATASTORE_ERROR',
      'CON_ABORTED',
    ] as const)
      expect(isTargetFailure(new FerryError(code, 'x'))).toBe(true);
    for (const code of ['CON_PLUGIN_FAILED', 'CON_ENTITY_NOT_FOUND', 'CON_QUERY_INVALID', 'RUN_WRITE_FAILED'] as const)
      expect(isTargetFailure(new FerryError(code, 'connection terminated'))).toBe(false);
    expect(isTargetFailure(new Error('Connection terminated unexpectedly'))).toBe(false);
  });
});
