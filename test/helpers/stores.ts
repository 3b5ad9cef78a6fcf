import { randomBytes } from 'node:crypto';
import pg from 'pg';

/** A store a test suite runs against: SQLite always, PostgreSQL when FERRY_TEST_DATABASE_URL names a server. */
export interface StoreTarget {
  name: 'sqlite' | 'postgres';
}

const PG_URL = process.env['FERRY_TEST_DATABASE_URL'];

if (!PG_URL) {
  if (process.env['CI'] === 'true') {
    throw new Error('FERRY_TEST_DATABASE_URL is not set: in CI every store test must also run on PostgreSQL.');
  }
  process.stderr.write(
    'Store tests run on SQLite only: set FERRY_TEST_DATABASE_URL (postgres://…) to run them on PostgreSQL too.\n',
  );
}

export const STORE_TARGETS: StoreTarget[] = PG_URL ? [{ name: 'sqlite' }, { name: 'postgres' }] : [{ name: 'sqlite' }];

/** A fresh PostgreSQL database for one test service; `drop` removes it. */
export async function createTestDatabase(): Promise<{ url: string; drop: () => Promise<void> }> {
  if (!PG_URL) throw new Error('FERRY_TEST_DATABASE_URL is not set');
  const name = `ferry_t_${randomBytes(6).toString('hex')}`;
  const admin = new pg.Client({ connectionString: PG_URL });
  await admin.connect();
  try {
    await admin.query(`CREATE DATABASE ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(PG_URL);
  url.pathname = `/${name}`;
  return {
    url: url.toString(),
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_URL });
      await c.connect();
      try {
        // A pool's end() resolves once it has told its clients to end, not when their sessions have
        // closed: terminated by the FORCE below, a session still closing errs in its client, an
        // uncaught error in the test process. Let them close first; FORCE ends whatever stays.
        for (let waited = 0; waited < 2000; waited += 20) {
          const { rows } = await c.query<{ n: number }>(
            'SELECT count(*)::int AS n FROM pg_stat_activity WHERE datname = $1',
            [name],
          );
          if ((rows[0]?.n ?? 0) === 0) break;
          await new Promise((r) => setTimeout(r, 20));
        }
        await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
      } finally {
        await c.end();
      }
    },
  };
}

/** A client of the PostgreSQL database at `url` for the length of `fn`. */
export async function withClient<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  try {
    return await fn(c);
  } finally {
    await c.end();
  }
}
