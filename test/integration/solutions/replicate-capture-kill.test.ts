/**
 * Change capture under kill -9 (docs/change-capture.md, docs/reliability.md): a continuous
 * capture Replication in a child process is killed with SIGKILL at random moments — in its first
 * copy, while it applies changes — while a writer inserts, updates and deletes in the source; after
 * the last kill a run catches up, and source and target are compared in SQL: the same count, the
 * same distinct keys, the same checksum of every row. No change is lost, none doubles.
 */
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createTestDatabase } from '../../helpers/stores.js';
import { captureDb, captureRun, makeOrders, openCapture, pgSummary, type CaptureDb } from './capture-helpers.js';
import { tempDir } from './replicate-helpers.js';

const PG_URL = process.env['FERRY_TEST_DATABASE_URL'];
const RUN = randomBytes(4).toString('hex');
/** The kills: a seed printed so that a failure can be replayed (FERRY_TEST_SEED). */
const SEED = Number(process.env['FERRY_TEST_SEED'] ?? Math.floor(Math.random() * 2 ** 31));

function random(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s * 1664525 + 1013904223) >>> 0;
    return s / 2 ** 32;
  };
}

describe.skipIf(!PG_URL)('change capture killed with SIGKILL', () => {
  let src: CaptureDb;
  let dst: { url: string; drop: () => Promise<void> };
  beforeAll(async () => {
    src = await captureDb();
    dst = await createTestDatabase();
  });
  afterAll(async () => {
    await src?.drop();
    await dst?.drop();
  });

  it('loses and doubles no change across kills in the copy and in the changes', async () => {
    process.stderr.write(`change capture kill test: seed ${SEED}\n`);
    const rnd = random(SEED);
    await makeOrders(src, 30_000);
    const stateDir = tempDir();
    const name = `ferry_t_kill_${RUN}`;
    const target = { connector: 'PostgreSQL', properties: { connectionString: dst.url } };
    let writing = true;
    let writes = 0;
    const writer = (async () => {
      let i = 0;
      while (writing) {
        i++;
        const id = 1 + Math.floor(rnd() * 40_000);
        const k = i % 4;
        if (k === 0) await src.q('DELETE FROM orders WHERE id = $1', [id]);
        else if (k === 1)
          await src.q(
            'INSERT INTO orders (id, name, amount) VALUES ($1, $2, 1) ON CONFLICT (id) DO UPDATE SET name = excluded.name',
            [id, `i${i}`],
          );
        else if (k === 2)
          await src.q(
            `BEGIN; UPDATE orders SET amount = amount + 1, name = 'u${i}' WHERE id BETWEEN $1 AND $1 + 20; COMMIT`.replace(
              /\$1/g,
              String(id),
            ),
          );
        else
          await src.q('UPDATE orders SET id = $2 WHERE id = $1 AND NOT EXISTS (SELECT 1 FROM orders WHERE id = $2)', [
            id,
            id + 40_000,
          ]);
        writes++;
        if (i % 20 === 0) await new Promise((r) => setTimeout(r, 2));
      }
    })();
    try {
      for (let kill = 0; kill < 4; kill++) {
        const args = JSON.stringify({
          sourceUrl: src.url,
          target,
          stateDir,
          entities: ['orders'],
          name,
          batchSize: 300,
        });
        const child = spawn(
          process.execPath,
          ['--import', 'tsx', path.join(import.meta.dirname, 'capture-child.ts'), args],
          { stdio: ['ignore', 'ignore', 'inherit'] },
        );
        const exited = new Promise<void>((resolve) => child.on('exit', () => resolve()));
        // The first kill lands in the copy (it takes about a second), the others in the changes.
        await new Promise((r) => setTimeout(r, (kill === 0 ? 1200 : 1500) + rnd() * 1500));
        expect(child.exitCode).toBeNull();
        child.kill('SIGKILL');
        await exited;
      }
    } finally {
      writing = false;
      await writer;
    }
    expect(writes).toBeGreaterThan(500);
    const c = await openCapture(src.url, target);
    try {
      const last = await captureRun(c, stateDir, ['orders'], { name });
      expect(last.fatal).toBeUndefined();
      expect(last.errors).toEqual([]);
      expect(await pgSummary(dst.url, 'orders')).toEqual(await pgSummary(src.url, 'orders'));
      await c.source.dropChangeCapture(name);
    } finally {
      await c.close();
    }
  }, 90_000);
});
