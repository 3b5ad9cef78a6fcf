import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  existingErrorIds,
  insertErrors,
  insertExecutionIfNew,
  type NewExecutionError,
} from '../../../../service/store/repos/executions.repo.js';
import { registerTestAgent } from '../../../helpers/agent-client.js';
import { startService, type TestService } from '../../../helpers/service.js';
import { STORE_TARGETS } from '../../../helpers/stores.js';

const LONE_SURROGATE = 'a lone surrogate \ud800 here';
/** Not a surrogate, but in JSON it reads `\\ud800`, which the PostgreSQL path sends through the builder too. */
const ESCAPED_SURROGATE = 'the text \\ud800, escaped in the source';

/** Texts a record error may carry that JSON or SQL could get wrong. */
const TEXTS = [
  'plain',
  'quotes " and \' and `',
  'a backslash \\ and \\" and \\\\',
  'the text \\u0041, escaped in the source',
  ESCAPED_SURROGATE,
  'lines\nand\ttabs\r\n',
  'control \u0001 and \u001b',
  'emoji 🚀 and accents é ü',
  LONE_SURROGATE,
  '',
  '{"json": [1, 2, {"deep": null}]}',
];

/**
 * insertErrors with the store's dialect (the statements the runErrors handler uses: prepared
 * multi-row INSERTs on SQLite, one JSON parameter on PostgreSQL) stores the same rows as Kysely's
 * builder does, whatever the texts, nulls and counts; existingErrorIds finds what it stored.
 */
describe.each(STORE_TARGETS)('Execution errors insert on $name', (target) => {
  let svc: TestService;
  let solutionId: string;

  beforeAll(async () => {
    svc = await startService(target);
    const agent = await registerTestAgent(svc);
    const res = await svc.request<{ id: string }>('POST', `/v1/orgs/${svc.orgId}/solutions`, {
      body: { name: 'errors', solutionType: 'Integration', agentId: agent.agentId },
    });
    expect(res.status, res.text).toBe(201);
    solutionId = res.body.id;
  });
  afterAll(async () => {
    await svc.close();
  });

  const db = () => svc.service.store.db;

  const newExecution = async (): Promise<number> => {
    const runId = randomUUID();
    await insertExecutionIfNew(db(), {
      runId,
      solutionId,
      orgId: svc.orgId,
      agentId: 'agent',
      trigger: 'start',
      dueAt: null,
      start: new Date().toISOString(),
      stop: null,
      result: null,
      recordsProcessed: 0,
      recordsFailed: 0,
      details: null,
      stopped: 0,
      isReprocessJob: 0,
      sourceDataLocal: 1,
      statistics: '[]',
      lastProgressAt: null,
    });
    const row = await db().selectFrom('executions').select('id').where('runId', '=', runId).executeTakeFirstOrThrow();
    return Number(row.id);
  };

  const errors = (executionId: number, n: number, texts: readonly string[] = TEXTS): NewExecutionError[] =>
    Array.from({ length: n }, (_, i) => ({
      id: randomUUID(),
      executionId,
      seq: i + 1,
      mapId: i % 3 === 0 ? null : 2_000_000_000 + i,
      mapName: texts[i % texts.length] as string,
      sourceEntity: `entity ${i}`,
      blockId: i % 4 === 0 ? null : `b${i}`,
      blockName: i % 5 === 0 ? null : (texts[(i + 3) % texts.length] as string),
      code: 'CON_WRITE_REFUSED',
      errorMessage: texts[(i + 1) % texts.length] as string,
      errorDetail: JSON.stringify({ row: i, text: texts[(i + 2) % texts.length] }),
      canReprocess: i % 2 === 0 ? 1 : 0,
      marked: i % 7 === 0 ? 0 : null,
      failedRecordId: i % 6 === 0 ? null : randomUUID(),
      created: new Date(Date.UTC(2026, 10, 26, 0, 0, i)).toISOString(),
      sourceKey: i % 8 === 0 ? null : JSON.stringify({ id: i, name: texts[(i + 4) % texts.length] }),
      sourceRow: i % 9 === 0 ? null : i + 1,
    }));

  const stored = (executionId: number) =>
    db()
      .selectFrom('executionErrors')
      .select([
        'seq',
        'mapId',
        'mapName',
        'sourceEntity',
        'blockId',
        'blockName',
        'code',
        'errorMessage',
        'errorDetail',
        'canReprocess',
        'marked',
        'failedRecordId',
        'created',
        'sourceKey',
        'sourceRow',
        'reprocessRunId',
      ])
      .where('executionId', '=', executionId)
      .orderBy('seq')
      .execute();

  const normalized = async (executionId: number) =>
    (await stored(executionId)).map((r) => ({
      ...r,
      seq: Number(r.seq),
      mapId: r.mapId === null ? null : Number(r.mapId),
      canReprocess: Number(r.canReprocess),
      marked: r.marked === null ? null : Number(r.marked),
      sourceRow: r.sourceRow === null ? null : Number(r.sourceRow),
    }));

  /** Stores `n` errors through the builder and the same through the dialect's statements; answers both as stored. */
  const bothWays = async (n: number, texts: readonly string[]) => {
    const viaBuilder = await newExecution();
    const viaDialect = await newExecution();
    const rows = errors(viaBuilder, n, texts);
    await insertErrors(db(), rows);
    await db()
      .transaction()
      .execute((tx) =>
        insertErrors(
          tx,
          rows.map((r) => ({ ...r, id: randomUUID(), executionId: viaDialect })),
          svc.service.store.dialect,
        ),
      );
    return { builder: await normalized(viaBuilder), dialect: await normalized(viaDialect) };
  };

  it('stores the rows the builder stores, in full chunks and the rest (123 rows), texts and nulls alike', async () => {
    const { builder, dialect } = await bothWays(
      123,
      TEXTS.filter((t) => t !== LONE_SURROGATE && t !== ESCAPED_SURROGATE),
    );
    expect(builder).toHaveLength(123);
    expect(JSON.parse(builder[1]?.sourceKey ?? 'null')).toMatchObject({ id: 1 });
    expect(builder[1]?.sourceRow).toBe(2);
    expect(builder[0]).toMatchObject({ sourceKey: null, sourceRow: null });
    expect(dialect).toEqual(builder);
  });

  it('stores a lone surrogate as the builder does (on PostgreSQL such rows go through the builder)', async () => {
    const { builder, dialect } = await bothWays(12, TEXTS);
    expect(builder.some((r) => r.mapName.startsWith('a lone surrogate'))).toBe(true);
    expect(dialect).toEqual(builder);
  });

  it('finds the stored IDs among others with the dialect, as without', async () => {
    const executionId = await newExecution();
    const rows = errors(executionId, 5);
    await insertErrors(db(), rows, svc.service.store.dialect);
    const asked = [...rows.slice(1, 3).map((r) => r.id), randomUUID(), randomUUID()];
    const found = await existingErrorIds(db(), asked, svc.service.store.dialect);
    expect(found).toEqual(new Set(rows.slice(1, 3).map((r) => r.id)));
    expect(await existingErrorIds(db(), asked)).toEqual(found);
  });
});
