/**
 * The run's pipeline on the real csv and sqlite plugins: the first Block's formulas for the next
 * batch are evaluated before the current batch is written, and no further ahead than that.
 */
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import Database from 'better-sqlite3';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { HostConnection } from '../../../src/connectors/connection.js';
import { ConnectorHost } from '../../../src/connectors/host.js';
import { compilePlan } from '../../../src/maps/compiler/plan.js';
import { FormulaEngine, type FormulaRecord } from '../../../src/maps/formula/evaluator.js';
import type { FormulaEvaluator } from '../../../src/maps/runtime/context.js';
import { runMap, type MapRecordError } from '../../../src/maps/runtime/run.js';
import { MemoryWatermark } from '../../../src/maps/runtime/watermark.js';

const FIXTURE = new URL('../../fixtures/maps/query-create/', import.meta.url).pathname;
const CONNECTORS = new URL('../../../connectors/', import.meta.url).pathname;
const RECORDS = 1000;
const BATCH = 100;
const BAD = 450;
const T0 = Date.UTC(2024, 0, 2);
const at = (i: number): string => new Date(T0 + i * 1000).toISOString().replace('.000Z', 'Z');

let host: ConnectorHost;
let tmp: string;
beforeAll(async () => {
  host = new ConnectorHost({ dir: CONNECTORS, log: pino({ level: 'silent' }) });
  await host.loadAll();
  tmp = await fsp.mkdtemp(path.join(os.tmpdir(), 'ferry-pipeline-'));
});
afterAll(async () => {
  await host.close();
  await fsp.rm(tmp, { recursive: true, force: true });
});

describe('the run pipeline', () => {
  it("evaluates the next batch's formulas before the current batch is written, one batch ahead, with errors and checkpoints in order", async () => {
    const dir = path.join(tmp, 'case');
    await fsp.cp(path.join(FIXTURE, 'input'), path.join(dir, 'src'), { recursive: true });
    let csv = 'id,first,last,age,updated_at\n';
    for (let i = 1; i <= RECORDS; i++) csv += `${i},p${i},l${i},${i === BAD ? 'x' : i % 90},${at(i)}\n`;
    await fsp.writeFile(path.join(dir, 'src', 'people.csv'), csv);
    const dbFile = path.join(dir, 'target.db');
    const db = new Database(dbFile);
    db.exec(await fsp.readFile(path.join(dir, 'src', 'target.sql'), 'utf8'));
    db.close();
    await fsp.rm(path.join(dir, 'src', 'target.sql'));
    const src = await host.open({
      connectorId: 'CSV',
      connectionId: 'src',
      properties: { folder: path.join(dir, 'src') },
    });
    const dst = await host.open({ connectorId: 'SQLite', connectionId: 'db', properties: { file: dbFile } });
    const model = JSON.parse(await fsp.readFile(path.join(FIXTURE, 'map.json'), 'utf8')) as Record<string, unknown>;
    const plan = compilePlan({ ...model, batchSize: BATCH }, { src: await src.metadata(), db: await dst.metadata() });

    const events: string[] = [];
    const firstId = (records: readonly { [k: string]: unknown }[]): number =>
      Number((records[0]?.['Q'] as Record<string, unknown> | undefined)?.['id'] ?? records[0]?.['id']);
    const real = await FormulaEngine.create();
    // A batch's values are handed over only once the next batch's formulas were asked for (the last batch's at once).
    let asked = 0;
    const waiting: Array<() => void> = [];
    const engine: FormulaEvaluator = {
      async evaluate(compiled, records: readonly FormulaRecord[]) {
        const call = ++asked;
        for (const go of waiting.splice(0)) go();
        const id = firstId(records);
        events.push(`evaluate ${id}`);
        const res = await real.evaluate(compiled, records);
        if (id + BATCH <= RECORDS && asked === call) await new Promise<void>((go) => waiting.push(go));
        return res;
      },
    };
    const writing = Object.assign(Object.create(dst) as HostConnection, {
      write: async (...args: Parameters<HostConnection['write']>) => {
        const res = await dst.write(...args);
        events.push(`write ${firstId(args[2])}`);
        return res;
      },
    });
    const wm = new MemoryWatermark('2024-01-01T12:00:00Z');
    const errors: MapRecordError[] = [];
    const checkpoints: string[] = [];
    try {
      const { stats } = await runMap(plan, {
        connections: new Map([
          ['src', src],
          ['db', writing],
        ]),
        engine,
        watermark: wm,
        onRecordError: (e) => errors.push(e),
        onProgress: (p) => checkpoints.push(`${p.processed}/${p.failed} ${p.lastRunDate ?? ''}`),
      });
      expect(stats).toMatchObject({
        processed: RECORDS,
        failed: 1,
        batches: RECORDS / BATCH,
        cancelled: false,
        lastRunDate: at(RECORDS),
      });
    } finally {
      real.dispose();
      await src.close();
      await dst.close();
    }
    const starts = Array.from({ length: RECORDS / BATCH }, (_, k) => k * BATCH + 1);
    expect(events).toEqual([
      'evaluate 1',
      ...starts.slice(1).flatMap((s) => [`evaluate ${s}`, `write ${s - BATCH}`]),
      `write ${RECORDS - BATCH + 1}`,
    ]);
    expect(errors.map((e) => e.code)).toEqual(['FML_NOT_A_NUMBER']);
    expect(checkpoints).toEqual(
      starts.map((s) => `${s + BATCH - 1}/${s + BATCH - 1 >= BAD ? 1 : 0} ${at(s + BATCH - 1)}`),
    );
    const out = new Database(dbFile, { readonly: true });
    const ids = (out.prepare('SELECT id FROM contacts ORDER BY id').all() as { id: number }[]).map((r) => r.id);
    out.close();
    expect(ids).toEqual(Array.from({ length: RECORDS }, (_, k) => k + 1).filter((i) => i !== BAD));
  });
});
