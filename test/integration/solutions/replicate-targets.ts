/**
 * The targets the replication tests copy into — SQLite always, PostgreSQL when
 * FERRY_TEST_DATABASE_URL names a server, MariaDB when FERRY_TEST_MARIADB_URL does — and the
 * comparison of an entity across the two sides.
 */
import path from 'node:path';
import { expect } from 'vitest';
// Importing the store helper applies its rule: in CI (CI=true) a missing FERRY_TEST_DATABASE_URL fails the run.
import { createTestDatabase } from '../../helpers/stores.js';
import { createMariaDatabase, MARIADB_URL } from '../../helpers/mariadb.js';
import type { ConnectionProperties } from '../../../src/connectors/sdk.js';
import { snapshot, type Conns } from './replicate-helpers.js';

const PG_URL = process.env['FERRY_TEST_DATABASE_URL'];
if (!PG_URL)
  process.stderr.write(
    'FERRY_TEST_DATABASE_URL is not set: replication into PostgreSQL is skipped (SQLite → SQLite still runs).\n',
  );

export interface Target {
  connector: string;
  properties: ConnectionProperties;
  drop(): Promise<void>;
}

/** Makes a fresh, empty target datastore. */
export interface TargetKind {
  name: string;
  make(dir: string, n: number): Promise<Target>;
}

export const TARGETS: TargetKind[] = [
  {
    name: 'sqlite',
    make: (dir, n) =>
      Promise.resolve({
        connector: 'SQLite',
        properties: { file: path.join(dir, `target-${n}.db`), create: 'true' },
        drop: () => Promise.resolve(),
      }),
  },
  ...(PG_URL
    ? [
        {
          name: 'postgres',
          async make(): Promise<Target> {
            const db = await createTestDatabase();
            return { connector: 'PostgreSQL', properties: { connectionString: db.url }, drop: db.drop };
          },
        },
      ]
    : []),
  ...(MARIADB_URL
    ? [
        {
          name: 'mariadb',
          async make(): Promise<Target> {
            const db = await createMariaDatabase();
            return { connector: 'MariaDB', properties: db.properties, drop: db.drop };
          },
        },
      ]
    : []),
];

/** The target holds exactly the source's records: as many, the same keys, every value equal. */
export async function expectEqual(c: Conns, entity: string): Promise<void> {
  const [a, b] = await Promise.all([snapshot(c.source, entity), snapshot(c.target, entity)]);
  expect(b.length).toBe(a.length);
  expect(b).toEqual(a);
}
