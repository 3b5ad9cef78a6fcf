import { sql } from 'kysely';
import { DB_NOW_MS, type Db } from '../sql.js';
import type { PrepareJobRow, PreparedSolutionRow } from '../schema.js';

export async function insertPrepareJob(db: Db, row: PrepareJobRow): Promise<void> {
  await db.insertInto('prepareJobs').values(row).execute();
}

export async function finishPrepareJob(db: Db, row: PrepareJobRow): Promise<void> {
  await db
    .updateTable('prepareJobs')
    .set({
      finishDate: row.finishDate,
      isComplete: row.isComplete,
      hasError: row.hasError,
      message: row.message,
      mapErrors: row.mapErrors,
    })
    .where('id', '=', row.id)
    .execute();
}

export async function getPrepareJob(db: Db, solutionId: string, id: string): Promise<PrepareJobRow | undefined> {
  return db
    .selectFrom('prepareJobs')
    .selectAll()
    .where('solutionId', '=', solutionId.toLowerCase())
    .where('id', '=', id)
    .executeTakeFirst();
}

export async function latestPrepareJob(db: Db, solutionId: string): Promise<PrepareJobRow | undefined> {
  return db
    .selectFrom('prepareJobs')
    .selectAll()
    .where('solutionId', '=', solutionId)
    .orderBy('creationDate', 'desc')
    .limit(1)
    .executeTakeFirst();
}

/**
 * Jobs left unfinished by a Service process that stopped: they end with an error, and their
 * Solutions leave Preparing for ProvisionError. One process calls it at start, before any new job;
 * replicas (`replicas`) call it on a timer, and it ends only the jobs of a replica whose liveness
 * lease (service/jobs/claims.ts) has passed.
 */
export async function failAbandonedPrepareJobs(db: Db, now: string, replicas = false): Promise<number> {
  const abandoned = await db
    .selectFrom('prepareJobs')
    .select(['id', 'solutionId'])
    .where('isComplete', '=', 0)
    .$if(replicas, (q) =>
      q.where((eb) =>
        eb.or([
          eb('replicaId', 'is', null),
          eb.not(
            eb.exists(
              eb
                .selectFrom('serviceLeases')
                .select('serviceLeases.name')
                .where('serviceLeases.name', '=', sql<string>`'replica:' || ${sql.ref('prepareJobs.replicaId')}`)
                .where('serviceLeases.untilMs', '>', DB_NOW_MS),
            ),
          ),
        ]),
      ),
    )
    .execute();
  if (abandoned.length === 0) return 0;
  await db
    .updateTable('prepareJobs')
    .set({
      isComplete: 1,
      hasError: 1,
      finishDate: now,
      message: 'The Service restarted while this prepare ran; prepare the Solution again.',
    })
    .where(
      'id',
      'in',
      abandoned.map((j) => j.id),
    )
    .where('isComplete', '=', 0)
    .execute();
  await db
    .updateTable('solutions')
    .set({ prepareState: 'ProvisionError' })
    .where(
      'id',
      'in',
      abandoned.map((j) => j.solutionId),
    )
    .where('prepareState', '=', 'Preparing')
    .execute();
  return abandoned.length;
}

/** Keeps the newest `keep` jobs of a Solution. */
export async function prunePrepareJobs(db: Db, solutionId: string, keep: number): Promise<void> {
  const old = await db
    .selectFrom('prepareJobs')
    .select('id')
    .where('solutionId', '=', solutionId)
    .orderBy('creationDate', 'desc')
    .offset(keep)
    .limit(1000)
    .execute();
  if (old.length > 0)
    await db
      .deleteFrom('prepareJobs')
      .where(
        'id',
        'in',
        old.map((o) => o.id),
      )
      .execute();
}

export async function putPreparedSolution(db: Db, row: PreparedSolutionRow): Promise<void> {
  await db
    .insertInto('preparedSolutions')
    .values(row)
    .onConflict((oc) =>
      oc.column('solutionId').doUpdateSet({ agentId: row.agentId, body: row.body, preparedAt: row.preparedAt }),
    )
    .execute();
}

export async function getPreparedSolution(db: Db, solutionId: string): Promise<PreparedSolutionRow | undefined> {
  return db.selectFrom('preparedSolutions').selectAll().where('solutionId', '=', solutionId).executeTakeFirst();
}

/**
 * The prepared Solutions an Agent holds a current assignment for: prepared for it, still its
 * Agent, and released by every (still existing) Agent it was moved away from.
 */
export async function listPreparedForAgent(db: Db, agentId: string): Promise<PreparedSolutionRow[]> {
  return db
    .selectFrom('preparedSolutions')
    .innerJoin('solutions', 'solutions.id', 'preparedSolutions.solutionId')
    .selectAll('preparedSolutions')
    .where('preparedSolutions.agentId', '=', agentId)
    .where('solutions.agentId', '=', agentId)
    .where((eb) =>
      eb.not(
        eb.exists(
          eb
            .selectFrom('solutionMoves')
            .innerJoin('agents', 'agents.id', 'solutionMoves.fromAgentId')
            .select('solutionMoves.fromAgentId')
            .whereRef('solutionMoves.solutionId', '=', 'solutions.id'),
        ),
      ),
    )
    .execute();
}

/** The Agents a Solution was moved away from that have not confirmed they dropped it (and still exist). */
export async function pendingMovesOf(db: Db, solutionId: string): Promise<string[]> {
  const rows = await db
    .selectFrom('solutionMoves')
    .innerJoin('agents', 'agents.id', 'solutionMoves.fromAgentId')
    .select('solutionMoves.fromAgentId')
    .where('solutionMoves.solutionId', '=', solutionId)
    .execute();
  return rows.map((r) => r.fromAgentId);
}

/** A Solution leaves `from` for `to`: held back from `to` until `from` confirms; a move back to an Agent clears its own pending move. */
export async function recordMove(db: Db, solutionId: string, from: string, to: string, now: string): Promise<void> {
  await db.deleteFrom('solutionMoves').where('solutionId', '=', solutionId).where('fromAgentId', '=', to).execute();
  await db
    .insertInto('solutionMoves')
    .values({ solutionId, fromAgentId: from, movedAt: now })
    .onConflict((oc) => oc.columns(['solutionId', 'fromAgentId']).doNothing())
    .execute();
}

/** The Agent confirmed an assignment list: every Solution moved away from it is released. Answers their IDs. */
export async function releaseMovesFrom(db: Db, agentId: string): Promise<string[]> {
  const rows = await db
    .deleteFrom('solutionMoves')
    .where('fromAgentId', '=', agentId)
    .returning('solutionId')
    .execute();
  return rows.map((r) => r.solutionId);
}
