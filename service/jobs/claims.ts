/**
 * Which Service process runs a job that must run once (docs/deploy.md, "Work runs once"):
 *
 *   SQLite, one process          every claim is granted (SOLE_PROCESS)
 *   PostgreSQL, N replicas       claim('sweeper', ms) ─▶ upsert service_leases 'job:sweeper'
 *                                  held by me, or its lease passed? ─ yes ─▶ mine until now+ms: run
 *                                                                    └ no ─▶ another replica runs it
 *
 * A replica renews a claim at each tick of its job, so the holder keeps it while it lives; one that
 * dies stops renewing, and the first other replica to tick after the lease passed takes the job.
 * A replica that stops gives its claims up at once (releaseAll). Times are the database's clock,
 * so replicas need no synchronised clocks.
 */
import { sql, type Kysely } from 'kysely';
import type { FastifyBaseLogger } from 'fastify';
import type { Database } from '../store/schema.js';
import { DB_NOW_MS } from '../store/sql.js';

export interface JobClaims {
  /** Whether this process runs job `name` now: true when it holds the job's lease, taken or renewed for `ms`. */
  claim(name: string, ms: number): Promise<boolean>;
  /** Gives up every job this process holds (it is stopping). */
  releaseAll(): Promise<void>;
}

/** The single Service process (SQLite) runs every job. */
export const SOLE_PROCESS: JobClaims = {
  claim: () => Promise.resolve(true),
  releaseAll: () => Promise.resolve(),
};

/** The name of the lease that says a replica is alive (renewed by its command bus). */
export function replicaLeaseName(replicaId: string): string {
  return `replica:${replicaId}`;
}

/** Whether replica `replicaId`'s liveness lease runs now (by the database's clock). */
export async function replicaAlive(db: Kysely<Database>, replicaId: string): Promise<boolean> {
  const row = await db
    .selectFrom('serviceLeases')
    .select('name')
    .where('name', '=', replicaLeaseName(replicaId))
    .where('untilMs', '>', DB_NOW_MS)
    .executeTakeFirst();
  return row !== undefined;
}

/** Job claims of one replica among several on one PostgreSQL. */
export class ReplicaClaims implements JobClaims {
  readonly #db: Kysely<Database>;
  readonly #replicaId: string;
  readonly #log: FastifyBaseLogger;
  /** The jobs this replica held at its last claim of each, to log a change once. */
  readonly #holding = new Set<string>();

  constructor(db: Kysely<Database>, replicaId: string, log: FastifyBaseLogger) {
    this.#db = db;
    this.#replicaId = replicaId;
    this.#log = log.child({ component: 'job-claims', replicaId });
  }

  async claim(name: string, ms: number): Promise<boolean> {
    const lease = `job:${name}`;
    const { rows } = await sql<{ holder: string }>`INSERT INTO service_leases (name, holder, until_ms)
      VALUES (${lease}, ${this.#replicaId}, ${DB_NOW_MS} + ${Math.round(ms)})
      ON CONFLICT (name) DO UPDATE SET holder = excluded.holder, until_ms = excluded.until_ms
        WHERE service_leases.holder = excluded.holder OR service_leases.until_ms < ${DB_NOW_MS}
      RETURNING holder`.execute(this.#db);
    const mine = rows.length > 0;
    if (mine !== this.#holding.has(name)) {
      if (mine) this.#holding.add(name);
      else this.#holding.delete(name);
      this.#log.info({ job: name }, mine ? 'this replica now runs the job' : 'another replica runs the job now');
    }
    return mine;
  }

  async releaseAll(): Promise<void> {
    this.#holding.clear();
    await this.#db
      .deleteFrom('serviceLeases')
      .where('holder', '=', this.#replicaId)
      .where('name', 'like', 'job:%')
      .execute();
  }
}
