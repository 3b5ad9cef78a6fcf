import path from 'node:path';
import Database from 'better-sqlite3';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  ferry,
  install,
  killAll,
  reportsOf,
  serviceUnderTest,
  until,
  untilStatus,
  workerPids,
  type ServiceUnderTest,
} from './harness.js';

/** The report IDs waiting in an instance's durable outbox. */
function queued(dir: string): string[] {
  const db = new Database(path.join(dir, 'data', 'outbox.db'), { readonly: true });
  try {
    return (db.prepare('SELECT id FROM outbox ORDER BY seq').all() as Array<{ id: string }>).map((r) => r.id);
  } finally {
    db.close();
  }
}

describe('a Service outage loses no report and doubles none', () => {
  let sut: ServiceUnderTest;
  let home: string;
  beforeAll(async () => {
    sut = serviceUnderTest();
    await sut.start();
    home = path.join(sut.dataDir, 'agents');
  }, 60_000);
  afterEach(() => killAll());
  afterAll(async () => {
    killAll();
    await sut.dispose();
  });

  it(
    'reports queued while the Service is down arrive once, in order, after it comes back',
    { timeout: 180_000 },
    async () => {
      const a = await install(sut, home);
      const b = await install(sut, home);
      const runA = ferry(['agent', 'run', '--home', home, '--instance', '1']);
      const runB = ferry(['agent', 'run', '--home', home, '--instance', '2']);
      await untilStatus(sut, a.agentId, 'Running');
      await untilStatus(sut, b.agentId, 'Running');
      await until('empty outboxes', () =>
        queued(a.dir).length === 0 && queued(b.dir).length === 0 ? true : undefined,
      );

      await sut.stop();

      // A stops gracefully while the Service is down: its Shutdown report stays in the outbox.
      expect(await runA.stop()).toBe(0);
      const waitingA = queued(a.dir);
      expect(waitingA.length).toBeGreaterThan(0);
      // B's worker dies and comes back while the Service is down: its new start is queued too.
      process.kill(workerPids(runB)[0] as number, 'SIGKILL');
      await until('B restarted with reports queued', () =>
        workerPids(runB).length >= 2 && queued(b.dir).length >= 2 ? true : undefined,
      );
      const waitingB = queued(b.dir);

      await sut.start();
      await until('B to deliver its queue', () => (queued(b.dir).length === 0 ? true : undefined));
      await untilStatus(sut, b.agentId, 'Running');
      const lateA = reportsOf(sut, a.agentId);
      expect(lateA.filter((r) => r.kind === 'shutdown')).toHaveLength(0);

      const againA = ferry(['agent', 'run', '--home', home, '--instance', '1']);
      await until('A to deliver its queue', () => (queued(a.dir).length === 0 ? true : undefined));
      await untilStatus(sut, a.agentId, 'Running');

      for (const [agentId, waiting] of [
        [a.agentId, waitingA],
        [b.agentId, waitingB],
      ] as const) {
        const stored = reportsOf(sut, agentId);
        const ids = stored.map((r) => r.messageId);
        expect(new Set(ids).size).toBe(ids.length);
        for (const id of waiting) expect(ids).toContain(id);
      }
      const kindsA = reportsOf(sut, a.agentId).map((r) => r.kind);
      expect(kindsA.filter((k) => k === 'shutdown')).toHaveLength(1);
      expect(kindsA.filter((k) => k === 'started')).toHaveLength(2);
      // Order: the old Shutdown arrives before the new start.
      expect(kindsA.lastIndexOf('shutdown')).toBeLessThan(kindsA.lastIndexOf('started'));
      expect(reportsOf(sut, b.agentId).filter((r) => r.kind === 'started')).toHaveLength(2);

      expect(await againA.stop()).toBe(0);
      expect(await runB.stop()).toBe(0);
    },
  );
});
