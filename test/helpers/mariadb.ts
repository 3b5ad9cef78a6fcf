import { randomBytes } from 'node:crypto';
import mysql from 'mysql2/promise';

/**
 * MariaDB for tests: FERRY_TEST_MARIADB_URL (mysql://user:password@host:port/database) names a
 * server where tests may create and drop databases. In CI (CI=true) a missing URL fails the run;
 * elsewhere the tests that need it say why they are skipped.
 */
export const MARIADB_URL = process.env['FERRY_TEST_MARIADB_URL'];

export const MARIADB_SKIP = MARIADB_URL
  ? undefined
  : 'FERRY_TEST_MARIADB_URL is not set: the MariaDB tests need a server (mysql://root@127.0.0.1:3306/test) and are skipped.';

if (!MARIADB_URL) {
  if (process.env['CI'] === 'true')
    throw new Error('FERRY_TEST_MARIADB_URL is not set: in CI the MariaDB tests must run.');
  process.stderr.write(`${MARIADB_SKIP}\n`);
}

export interface MariaTestDatabase {
  name: string;
  /** The Connection properties of the MariaDB Connector for this database. */
  properties: Record<string, string>;
  /** Runs statements (several, `;`-separated) on the database; answers the rows of the last. */
  exec: <T = Record<string, unknown>>(sql: string, values?: unknown[]) => Promise<T[]>;
  drop: () => Promise<void>;
}

function serverOptions(): mysql.ConnectionOptions {
  const url = new URL(MARIADB_URL as string);
  return {
    host: url.hostname,
    port: Number(url.port || 3306),
    user: decodeURIComponent(url.username || 'root'),
    password: decodeURIComponent(url.password),
    multipleStatements: true,
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    timezone: 'Z',
  };
}

/** A fresh database on the test server. */
export async function createMariaDatabase(): Promise<MariaTestDatabase> {
  if (!MARIADB_URL) throw new Error('FERRY_TEST_MARIADB_URL is not set');
  const name = `ferry_t_${randomBytes(6).toString('hex')}`;
  const opts = serverOptions();
  const admin = await mysql.createConnection(opts);
  try {
    await admin.query(`CREATE DATABASE ${name} CHARACTER SET utf8mb4`);
  } finally {
    await admin.end();
  }
  const pool = mysql.createPool({ ...opts, database: name, connectionLimit: 2 });
  pool.on('connection', (c) => void c.query("SET time_zone = '+00:00'"));
  return {
    name,
    properties: {
      host: opts.host as string,
      port: String(opts.port),
      user: opts.user as string,
      ...(opts.password ? { password: opts.password } : {}),
      database: name,
    },
    async exec<T>(sql: string, values: unknown[] = []): Promise<T[]> {
      const [rows] = await pool.query(sql, values);
      return rows as T[];
    },
    async drop() {
      await pool.end();
      const c = await mysql.createConnection(opts);
      try {
        await c.query(`DROP DATABASE IF EXISTS ${name}`);
      } finally {
        await c.end();
      }
    },
  };
}
