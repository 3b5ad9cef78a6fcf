/**
 * Replication from MariaDB: the first copy (a snapshot read in key order) and the net change of the
 * next run on a DATETIME stamp, into SQLite and PostgreSQL, compared value by value with the source.
 */
import fs from 'node:fs';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ConnectorHost } from '../../../src/connectors/host.js';
import { MemoryReplicationState } from '../../../src/solutions/replicate.js';
import { createMariaDatabase, MARIADB_SKIP, type MariaTestDatabase } from '../../helpers/mariadb.js';
import { CONNECTORS_DIR, run, snapshot, tempDir, type Conns } from './replicate-helpers.js';
import { TARGETS } from './replicate-targets.js';

const ROWS = 12_000;

describe.skipIf(Boolean(MARIADB_SKIP)).each(TARGETS.filter((t) => t.name !== 'mariadb'))(
  'replication mariadb → $name',
  (kind) => {
    const dir = tempDir();
    let source: MariaTestDatabase;
    let conns: Conns;

    beforeAll(async () => {
      source = await createMariaDatabase();
      await source.exec(`CREATE TABLE orders (id int PRIMARY KEY, customer varchar(20) NOT NULL, amount decimal(12,2),
        paid boolean, placed date, changed datetime(3), note text)`);
      await source.exec(
        `SET SESSION max_recursive_iterations = 1000000;
         INSERT INTO orders WITH RECURSIVE g(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM g WHERE n < ?)
         SELECT n, CONCAT('c', n MOD 97), (n MOD 10000) / 100, n MOD 2, DATE '2024-01-01' + INTERVAL (n MOD 300) DAY,
                TIMESTAMP '2024-01-01 00:00:00' + INTERVAL (n DIV 7) SECOND, IF(n MOD 11 = 0, NULL, CONCAT('note\\t', n))
           FROM g`,
        [ROWS],
      );
      const target = await kind.make(dir, 0);
      const host = new ConnectorHost({ dir: CONNECTORS_DIR, log: pino({ level: 'silent' }) });
      await host.loadAll();
      const src = await host.open({ connectorId: 'MariaDB', connectionId: 'src', properties: source.properties });
      const tgt = await host.open({
        connectorId: target.connector,
        connectionId: 'tgt',
        properties: target.properties,
      });
      conns = {
        host,
        source: src,
        target: tgt,
        close: async () => {
          await host.close();
          await target.drop();
        },
      };
    });
    afterAll(async () => {
      await conns?.close();
      await source?.drop();
      fs.rmSync(dir, { recursive: true, force: true });
    });

    it('copies every row on the first run and only the changed ones on the next, values equal', async () => {
      const state = new MemoryReplicationState();
      const first = await run(conns, state, ['orders'], { batchSize: 1000 });
      expect(first.fatal).toBeUndefined();
      expect(first.errors).toEqual([]);
      expect(first.by).toEqual({ orders: ROWS });
      expect(await snapshot(conns.target, 'orders')).toEqual(await snapshot(conns.source, 'orders'));

      await source.exec(
        `UPDATE orders SET amount = amount + 1, changed = '2030-01-01 00:00:00.5' WHERE id MOD 100 = 0;
         INSERT INTO orders VALUES (${ROWS + 1}, 'new', 1.50, 1, '2030-01-02', '2030-01-01 00:00:01', 'added')`,
      );
      const second = await run(conns, state, ['orders'], { batchSize: 1000 });
      expect(second.errors).toEqual([]);
      // The changed rows, the new one, and the rows at the watermark's instant read again (at least once).
      expect(second.by['orders']).toBeGreaterThanOrEqual(ROWS / 100 + 1);
      expect(second.by['orders']).toBeLessThan(ROWS / 100 + 20);
      expect(await snapshot(conns.target, 'orders')).toEqual(await snapshot(conns.source, 'orders'));
    }, 120_000);
  },
);
