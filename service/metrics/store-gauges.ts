import type { Db } from '../store/sql.js';
import type { StoreReading } from './service-metrics.js';

/** The Service's job queues as `ferry_jobs_queued` labels them, and how each is read: its open jobs' count and oldest start. */
const JOB_QUEUES: Record<string, (db: Db) => Promise<{ n: number | string | bigint; oldest: string | null }>> = {
  prepare: (db) =>
    db
      .selectFrom('prepareJobs')
      .where('isComplete', '=', 0)
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min<string | null>('creationDate').as('oldest')])
      .executeTakeFirstOrThrow(),
  clone: (db) =>
    db
      .selectFrom('cloneJobs')
      .where('isComplete', '=', 0)
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min<string | null>('creationDate').as('oldest')])
      .executeTakeFirstOrThrow(),
  mail: (db) =>
    db
      .selectFrom('mailOutbox')
      .where('sentAt', 'is', null)
      .where('failedAt', 'is', null)
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min<string | null>('createdAt').as('oldest')])
      .executeTakeFirstOrThrow(),
  metadata: (db) =>
    db
      .selectFrom('metadataRequests')
      .where('state', '=', 'Requested')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min<string | null>('startDate').as('oldest')])
      .executeTakeFirstOrThrow(),
  connection_test: (db) =>
    db
      .selectFrom('connectionTests')
      .where('status', '=', 'Requested')
      .select((eb) => [eb.fn.countAll<number>().as('n'), eb.fn.min<string | null>('requestedAt').as('oldest')])
      .executeTakeFirstOrThrow(),
};

/** The queue names of {@link JOB_QUEUES}. */
export const JOB_QUEUE_NAMES = Object.keys(JOB_QUEUES);

/** Seconds from an ISO time to `nowMs`, 0 when there is none or it does not read as a time. */
function ageSeconds(iso: string | null | undefined, nowMs: number): number {
  if (!iso) return 0;
  const ms = Date.parse(iso);
  return Number.isFinite(ms) ? Math.max(0, (nowMs - ms) / 1000) : 0;
}

/**
 * One reading of what the store holds for the gauges of a scrape: aggregate queries only (a group
 * by of the Agents, a sum of the endpoint queue counters, the first waiting message by its key, and
 * per job queue a count and a minimum over its open jobs), run at scrape time and never per request.
 */
export async function readStore(db: Db, nowMs = Date.now()): Promise<StoreReading> {
  const [agents, endpoints, firstMessage, ...queues] = await Promise.all([
    db
      .selectFrom('agents')
      .select((eb) => ['status', eb.fn.countAll<number>().as('n')])
      .groupBy('status')
      .execute(),
    db
      .selectFrom('messageEndpoints')
      .select((eb) => eb.fn.sum<number | string | null>('queued').as('n'))
      .executeTakeFirst(),
    // The lowest ID is the oldest message (IDs grow with arrival): one step down the primary key.
    db.selectFrom('eventMessages').select('receivedMs').orderBy('id').limit(1).executeTakeFirst(),
    ...Object.values(JOB_QUEUES).map((read) => read(db)),
  ]);
  const jobs = new Map<string, { queued: number; oldestAgeSeconds: number }>();
  JOB_QUEUE_NAMES.forEach((name, i) => {
    const q = queues[i];
    jobs.set(name, { queued: Number(q?.n ?? 0), oldestAgeSeconds: ageSeconds(q?.oldest, nowMs) });
  });
  return {
    agentsByStatus: new Map(agents.map((a) => [a.status, Number(a.n)])),
    eventQueue: {
      messages: Number(endpoints?.n ?? 0),
      oldestAgeSeconds: firstMessage ? Math.max(0, (nowMs - Number(firstMessage.receivedMs)) / 1000) : 0,
    },
    jobs,
  };
}
