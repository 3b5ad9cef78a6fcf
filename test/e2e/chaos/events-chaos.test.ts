import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { STORE_TARGETS } from '../../helpers/stores.js';
import { chaosSeed, seededRandom } from './faults.js';
import {
  execution,
  LeaseWatch,
  planChaos,
  queueByLease,
  queuedInService,
  sendAll,
  serviceCounts,
  startEventsWorld,
  strikeAll,
  targetFigures,
  targetRows,
  untilDrained,
  untilSettled,
  type ChaosPlan,
  type EventsChaosConfig,
  type EventsWorld,
  type Execution,
  type FaultRecord,
  type GhostLease,
  type PostOutcome,
  type SendProgress,
  type TargetFigures,
} from './events-chaos.js';

const HAS_PG = STORE_TARGETS.some((t) => t.name === 'postgres');
const VERBOSE = process.env['FERRY_CHAOS_VERBOSE'] === '1';

const envInt = (name: string, dflt: number): number => {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return dflt;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number, not ${raw}`);
  return n;
};

/** 5,000 messages in `npm test`; FERRY_CHAOS_EVENTS=100000 for the full size of the issue. */
const MESSAGES = envInt('FERRY_CHAOS_EVENTS', 5_000);
const FULL = MESSAGES >= 50_000;
/** About 25 s of sending at the quick size (≈ 1 min in all); the full size ≈ 3 min on two busy cores. */
const RATE = envInt('FERRY_CHAOS_EVENTS_RATE', FULL ? 800 : Math.max(100, Math.round(MESSAGES / 25)));
const KILLS = envInt('FERRY_CHAOS_EVENTS_KILLS', FULL ? 4 : 2);
const DRAIN_MS = Math.max(180_000, MESSAGES * 10);
const SEND_RETRY_MS = 180_000;

/**
 * The chaos requirement of Event Solutions (docs/events.md): kill -9 of the Service and of the
 * Agent at seeded random moments while senders POST messages; every message whose POST was
 * answered 200 ends up in the target exactly once (an Upsert by key), and none whose POST was
 * refused. Replay a failure with the seed it prints: FERRY_CHAOS_SEED=<seed>. The full size:
 * FERRY_CHAOS_EVENTS=100000 (FERRY_CHAOS_EVENTS_RATE, FERRY_CHAOS_EVENTS_KILLS tune it).
 */
describe.skipIf(!HAS_PG)(
  'chaos of Event Solutions: kill -9 of the Service and the Agent while messages flow — each accepted message once, no refused one (needs FERRY_TEST_DATABASE_URL)',
  () => {
    const seed = chaosSeed();
    const lines: string[] = [];
    const log = (line: string): void => {
      lines.push(line);
      if (VERBOSE) process.stderr.write(`[events-chaos] ${line}\n`);
    };
    const cfg: EventsChaosConfig = {
      messages: MESSAGES,
      senders: 8,
      maxBatch: 20,
      rate: RATE,
      serviceKills: KILLS,
      agentKills: KILLS,
      refusedShare: 0.02,
      replayShare: 0.03,
      moments: [0.05, 0.85],
      sendRetryMs: SEND_RETRY_MS,
      drainMs: DRAIN_MS,
      log,
    };
    let world: EventsWorld | undefined;
    let plan: ChaosPlan;
    let outcomes: PostOutcome[] = [];
    let faults: FaultRecord[] = [];
    let drainError: unknown;
    let history: Execution[] = [];
    let ghosts: GhostLease[] = [];
    let figures: TargetFigures;
    let counts: ReturnType<typeof serviceCounts>;
    const killedRuns: Array<{ runId: string; execution: Execution | undefined }> = [];
    const trail = (): string => `seed ${seed}; the trial:\n${lines.join('\n')}`;

    beforeAll(
      async () => {
        process.stderr.write(
          `events chaos seed ${seed}, ${MESSAGES} messages (replay: FERRY_CHAOS_SEED=${seed} npx vitest run test/e2e/chaos/events-chaos.test.ts)\n`,
        );
        const t0 = Date.now();
        world = await startEventsWorld(log);
        const w = world;
        plan = planChaos(cfg, seededRandom(seed));
        log(
          `plan: ${plan.posts.length} POSTs, ${plan.posts.filter((p) => p.kind !== 'valid').length} made to be refused; faults ${plan.faults.map((f) => `${f.kind}@${Math.round(f.share * 100)}%`).join(', ')}`,
        );
        const progress: SendProgress = {
          dispatched: 0,
          acceptedMessages: 0,
          inFlight: 0,
          struck: false,
          done: false,
        };
        const sendStart = Date.now();
        const line = async (): Promise<string> => {
          let queued = '?';
          let rows = '?';
          try {
            queued = String(queuedInService(w));
            rows = String(await targetRows(w));
          } catch {
            // The store is being written or the Service restarts: the next line says.
          }
          return `${Math.round((Date.now() - sendStart) / 1000)} s: handed out ${progress.dispatched}, accepted ${progress.acceptedMessages}, queued ${queued}, in the target ${rows}`;
        };
        const ticker = setInterval(() => void line().then((l) => log(l)), 5_000);
        const watch = new LeaseWatch(w, sendStart, log);
        watch.start();
        try {
          [outcomes, faults] = await Promise.all([
            sendAll(w, cfg, plan, progress),
            strikeAll(w, cfg, plan, progress, sendStart),
          ]);
        } finally {
          clearInterval(ticker);
        }
        const sendMs = Date.now() - sendStart;
        const accepted = outcomes.filter((o) => o.state === 'accepted').reduce((n, o) => n + o.post.messages.length, 0);
        log(`sent in ${sendMs} ms: ${accepted} messages accepted; ${await line()}`);
        try {
          await untilDrained(w, cfg, accepted, watch, line);
        } catch (err) {
          drainError = err;
          log(`not drained: ${(err as Error).message}; ${await line()}; by lease: ${JSON.stringify(queueByLease(w))}`);
        } finally {
          watch.stop();
        }
        const drainedMs = Date.now() - sendStart;
        history = await untilSettled(w, 120_000).catch(async (err: unknown) => {
          log(`History not settled: ${(err as Error).message}`);
          return [];
        });
        ghosts = await watch.confirm();
        for (const runId of faults.flatMap((f) => f.openRuns))
          killedRuns.push({ runId, execution: await execution(w, runId) });
        figures = await targetFigures(w, outcomes);
        counts = serviceCounts(w);
        const retried = outcomes.reduce((n, o) => n + o.attempts - 1, 0);
        const duplicates = outcomes.filter((o) => o.duplicate).length;
        process.stderr.write(
          [
            `events chaos seed ${seed}: ${plan.posts.length} POSTs, ${MESSAGES} messages, ${figures.accepted} accepted,` +
              ` ${outcomes.filter((o) => o.state === 'refused').length} POSTs refused, ${outcomes.filter((o) => o.state === 'uncertain').length} uncertain;` +
              ` ${retried} retries, ${duplicates} answered duplicate after a lost answer`,
            ...(ghosts.length > 0
              ? [`  GHOST LEASES (messages held 5 minutes by a run that never began): ${JSON.stringify(ghosts)}`]
              : []),
            `  faults: ${faults.map((f) => `${f.kind}@${f.atMs}ms${f.kind === 'agent-kill' ? `(${f.openRuns.length} open run)` : ''}`).join(', ')}`,
            `  sending ${sendMs} ms, drained at ${drainedMs} ms (${Math.round(figures.rows / (drainedMs / 1000))} rows/s), total ${Date.now() - t0} ms;` +
              ` ${history.length} executions; target rows ${figures.rows}, md5 ${figures.md5 === figures.expectedMd5 ? 'equal' : 'DIFFERENT'}`,
          ].join('\n') + '\n',
        );
      },
      SEND_RETRY_MS + DRAIN_MS + 600_000,
    );

    afterAll(async () => {
      await world?.dispose();
    });

    it('every fault struck, and the senders still sent when each did', () => {
      expect(faults.map((f) => f.kind).sort(), trail()).toEqual(plan.faults.map((f) => f.kind).sort());
      // The senders hold the last messages back until the last fault has struck (HOLD_BACK).
      expect(
        faults.filter((f) => !f.flowing),
        trail(),
      ).toEqual([]);
    });

    it('every POST got a final answer: each valid one 200, each one made to be refused a 4xx, none left uncertain', () => {
      const wrong = outcomes
        .filter((o) =>
          o.post.kind === 'valid'
            ? o.state !== 'accepted'
            : o.state !== 'refused' || o.status !== (o.post.kind === 'bad-token' ? 401 : 400),
        )
        .map((o) => ({ key: o.post.key, kind: o.post.kind, state: o.state, status: o.status, answer: o.answer }));
      expect(wrong, trail()).toEqual([]);
      const replays = outcomes
        .filter((o) => o.replay && !(o.replay.status === 200 && /"duplicate":true/.test(o.replay.answer)))
        .map((o) => ({ key: o.post.key, replay: o.replay }));
      expect(replays, 'a POST sent again with its key must answer 200 duplicate').toEqual([]);
    });

    it('the queue emptied, and the target holds every accepted message exactly once, with its values, and nothing else', () => {
      expect(drainError, trail()).toBeUndefined();
      expect(figures, trail()).toEqual({
        rows: figures.accepted,
        distinctIds: figures.accepted,
        accepted: outcomes.filter((o) => o.state === 'accepted').reduce((n, o) => n + o.post.messages.length, 0),
        lost: 0,
        foreign: 0,
        refusedPresent: 0,
        uncertainPresent: 0,
        differing: 0,
        sumN: figures.expectedSumN,
        expectedSumN: figures.expectedSumN,
        md5: figures.expectedMd5,
        expectedMd5: figures.expectedMd5,
      });
      expect(figures.accepted).toBeGreaterThan(0);
    });

    it('the Service stored each accepted POST once: received = accepted, nothing queued, one key per accepted POST', () => {
      const acceptedPosts = outcomes.filter((o) => o.state === 'accepted');
      const acceptedMessages = acceptedPosts.reduce((n, o) => n + o.post.messages.length, 0);
      expect(counts, trail()).toEqual({
        messageCount: acceptedMessages,
        queued: 0,
        rows: 0,
        keys: acceptedPosts.length,
        keyedMessages: acceptedMessages,
      });
    });

    it('no message waited for the lease of a run that never began (a killed Agent gives back what it took when it starts again)', () => {
      // docs/events.md: the messages a run had taken go back when its end reaches the Service — for a
      // killed Agent, when it starts again. Messages taken for a run that never began (History has
      // no execution of it) wait for their 5-minute lease, and later messages are written before them.
      expect(ghosts, trail()).toEqual([]);
    });

    it('History: every execution ended, none with a record error, the runs a kill cut short included', () => {
      expect(history.length, trail()).toBeGreaterThan(0);
      expect(
        history.filter((e) => e.result === 'InProgress' || e.recordsFailed > 0),
        trail(),
      ).toEqual([]);
      // Each run a kill found open has ended in History: with RUN_AGENT_ENDED, or with its own end
      // when that end was in the Agent's outbox before the kill (the first end applied decides; a
      // kill between writing the end and closing the run reports it twice, counted once: seen in CI,
      // a run of 15 messages CompletedSuccessfully).
      for (const k of killedRuns) {
        const e = k.execution;
        const ok = e !== undefined && e.result !== 'InProgress';
        expect(ok, `${JSON.stringify(k, null, 1)}\n${trail()}`).toBe(true);
      }
    });
  },
);
