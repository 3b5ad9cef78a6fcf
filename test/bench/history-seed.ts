/**
 * One ended execution with many record errors, for the History benchmarks (history.bench.ts,
 * reprocess.bench.ts): the errors, and a cloud failed record for each (its source fields sealed as
 * the Service seals them), written straight into the store through the repositories
 * (insertErrors, insertFailedRecords, 1,000 rows a statement, 50,000 a transaction), numbered as
 * the runErrors handler numbers them. The report path itself is measured in "Solutions".
 */
import { randomUUID } from 'node:crypto';
import type { SecretBox } from '../../service/crypto/master-key.js';
import { insertErrors, insertExecutionIfNew } from '../../service/store/repos/executions.repo.js';
import { insertFailedRecords } from '../../service/store/repos/failed-records.repo.js';
import type { Store } from '../../service/store/store.js';

const ROWS_PER_INSERT = 1000;
const ROWS_PER_TX = 50_000;

/** What the errors name: the Map (and its entity and Block) whose records failed. */
export interface SeedMap {
  readonly mapId: number;
  readonly mapName: string;
  readonly entity: string;
  readonly blockId: string;
  readonly blockName: string;
}

/** The source fields of the failed record of error `seq`. */
export type SeedSource = (seq: number) => Record<string, unknown>;

/** history.bench.ts' errors: a Map that is not in the Solution, whose records are accounts. */
const ACCOUNTS: SeedMap = {
  mapId: 7,
  mapName: 'Accounts',
  entity: 'account',
  blockId: 'b2',
  blockName: 'Create contact',
};
const accountSource: SeedSource = (seq) => ({
  Name: `Account ${seq}`,
  Email: `user${seq}@example.com`,
  City: 'Lyon, France',
  Amount: seq * 1.5,
});

/** The bench's execution: ended, with its failed records counted, its errors not written yet. */
export interface SeededExecution {
  readonly executionId: number;
  readonly runId: string;
  readonly orgId: number;
  readonly solutionId: string;
  readonly created: string;
  readonly map: SeedMap;
  readonly source: SeedSource;
}

/**
 * Creates the execution of a run of the Solution on the Agent, ended CompletedWithErrors with `n`
 * records processed and failed, its failed records kept in the cloud (`sourceDataLocal` 0).
 */
export async function createExecution(
  store: Store,
  orgId: number,
  solutionId: string,
  agentId: string,
  n: number,
  opts: { map?: SeedMap; source?: SeedSource } = {},
): Promise<SeededExecution> {
  const runId = randomUUID();
  const created = new Date().toISOString();
  await insertExecutionIfNew(store.db, {
    runId,
    solutionId,
    orgId,
    agentId,
    trigger: 'start',
    dueAt: null,
    start: created,
    stop: created,
    result: 'CompletedWithErrors',
    recordsProcessed: n,
    recordsFailed: n,
    details: null,
    stopped: 0,
    isReprocessJob: 0,
    sourceDataLocal: 0,
    statistics: '[]',
    lastProgressAt: null,
  });
  const { id } = await store.db
    .selectFrom('executions')
    .select('id')
    .where('runId', '=', runId)
    .executeTakeFirstOrThrow();
  return {
    executionId: Number(id),
    runId,
    orgId,
    solutionId,
    created,
    map: opts.map ?? ACCOUNTS,
    source: opts.source ?? accountSource,
  };
}

/** Errors `from` + 1 … `to` of the execution, each reprocessable with a cloud failed record, written through the repositories. */
export async function seedErrors(
  store: Store,
  secrets: SecretBox,
  x: SeededExecution,
  from: number,
  to: number,
): Promise<void> {
  const { executionId, runId, orgId, solutionId, created, map } = x;
  for (let tx = from; tx < to; tx += ROWS_PER_TX) {
    await store.bulkTransaction(async (t) => {
      for (let i = tx; i < Math.min(to, tx + ROWS_PER_TX); i += ROWS_PER_INSERT) {
        const count = Math.min(ROWS_PER_INSERT, to - i);
        const errors = Array.from({ length: count }, (_, j) => {
          const seq = i + j + 1;
          return {
            id: randomUUID(),
            executionId,
            seq,
            mapId: map.mapId,
            mapName: map.mapName,
            sourceEntity: map.entity,
            blockId: map.blockId,
            blockName: map.blockName,
            code: 'RUN_WRITE_FAILED',
            // As the runErrors handler writes them: no mark of their own (the execution's default).
            errorMessage: `Record ${seq} refused: duplicate value in "Email", row skipped`,
            errorDetail: `{"status":409,"row":${seq}}`,
            canReprocess: 1,
            marked: null,
            failedRecordId: randomUUID(),
            created,
            sourceKey: `{"Id":${seq}}`,
            sourceRow: seq,
          };
        });
        await insertErrors(t, errors);
        await insertFailedRecords(
          t,
          errors.map((e) => ({
            id: e.failedRecordId,
            runId,
            solutionId,
            orgId,
            mapId: map.mapId,
            mapName: map.mapName,
            entity: map.entity,
            blockId: map.blockId,
            blockName: map.blockName,
            code: e.code,
            errorMessage: e.errorMessage,
            source: secrets.seal(JSON.stringify(x.source(e.seq))),
            created,
          })),
        );
      }
    });
  }
}
