import { describe, expect, it } from 'vitest';
import { WorkRegistry } from '../../../src/agent/work.js';

const deferred = () => {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
};

describe('the work registry', () => {
  it('counts running work and resolves idle when the last piece ends', async () => {
    const work = new WorkRegistry();
    await work.idle();
    const gate = deferred();
    const running = work.run('zipLogs', () => gate.promise);
    expect(work.count).toBe(1);
    let idle = false;
    const waited = work.idle().then(() => (idle = true));
    await Promise.resolve();
    expect(idle).toBe(false);
    gate.resolve();
    await running;
    await waited;
    expect(work.count).toBe(0);
  });

  it('refuses new work with AGT_DRAINING once draining, while running work goes on', async () => {
    const work = new WorkRegistry();
    const gate = deferred();
    const running = work.run('a', () => gate.promise.then(() => 'done'));
    work.drain('waiting to restart');
    await expect(work.run('b', async () => 'never')).rejects.toMatchObject({ code: 'AGT_DRAINING' });
    gate.resolve();
    await expect(running).resolves.toBe('done');
  });

  it('interrupts running work through its signal with AGT_INTERRUPTED', async () => {
    const work = new WorkRegistry();
    const running = work.run(
      'long',
      (w) =>
        new Promise((_resolve, reject) => w.signal.addEventListener('abort', () => reject(w.signal.reason as Error))),
    );
    work.interruptAll('restartNow');
    await expect(running).rejects.toMatchObject({ code: 'AGT_INTERRUPTED' });
    expect(work.count).toBe(0);
  });

  it('lets queued work wait out a pause (a Connector update) and go on when it ends; a drain ends the wait', async () => {
    const work = new WorkRegistry();
    work.pause('updating a connector');
    expect(work.refusing).toBe(true);
    let waited = false;
    const queued = work.unpaused().then(() => (waited = true));
    await Promise.resolve();
    expect(waited).toBe(false);
    work.resume('updating a connector');
    await queued;
    expect(work.refusing).toBe(false);
    await expect(work.run('queued', async () => 'ran')).resolves.toBe('ran');
    work.pause('again');
    const drained = work.unpaused();
    work.drain('waiting to restart');
    await drained;
    await expect(work.run('late', async () => 'never')).rejects.toMatchObject({ code: 'AGT_DRAINING' });
  });
});
