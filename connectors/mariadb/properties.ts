import type { PoolOptions } from 'mysql2';
import { ConnectorError, propertyReader, type ConnectionProperties } from '../../src/connectors/sdk.js';

/** How bulk Create batches reach the server (docs/connectors.md "mariadb"). */
export type BulkMethod = 'auto' | 'loadData' | 'insert';

export interface MariaProps {
  pool: PoolOptions;
  database: string;
  bulkMethod: BulkMethod;
}

/**
 * Connection properties → mysql2 pool options. Every session runs in UTC with utf8mb4; values come
 * back as the server's text (dates, big integers, decimals) so that nothing is rounded or shifted
 * on the way (types.ts). Multiple statements per query are on: keyed writes send a chunk of
 * statements in one round trip (write.ts).
 */
export function parseProps(p: ConnectionProperties): MariaProps {
  const { text, int } = propertyReader(p);
  const host = text('host');
  const socketPath = text('socketPath');
  if (!host && !socketPath)
    throw new ConnectorError('InvalidProperties', 'Give the property host (and database, user, password).');
  const database = text('database');
  if (!database) throw new ConnectorError('InvalidProperties', 'Give the property database: the schema to work in.');
  const user = text('user');
  if (!user) throw new ConnectorError('InvalidProperties', 'Give the property user.');
  const tls = (text('tls') ?? 'off').toLowerCase();
  if (!['off', 'require', 'verify'].includes(tls))
    throw new ConnectorError('InvalidProperties', 'The property tls must be off, require or verify.');
  const bulkMethod = (text('bulkMethod') ?? 'auto') as BulkMethod;
  if (!['auto', 'loadData', 'insert'].includes(bulkMethod))
    throw new ConnectorError('InvalidProperties', 'The property bulkMethod must be auto, loadData or insert.');
  const ca = p['tlsCa']?.trim();
  const pool: PoolOptions = {
    ...(socketPath ? { socketPath } : { host: host, port: int('port', 3306, 1, 65535) }),
    database,
    user,
    ...(p['password'] ? { password: p['password'] } : {}),
    ...(tls === 'off' ? {} : { ssl: { rejectUnauthorized: tls === 'verify', ...(ca ? { ca } : {}) } }),
    connectionLimit: int('poolSize', 4, 1, 100),
    connectTimeout: int('connectTimeoutSeconds', 15, 1, 600) * 1000,
    maxIdle: 1,
    idleTimeout: 30_000,
    charset: 'utf8mb4_general_ci',
    timezone: 'Z',
    dateStrings: true,
    supportBigNumbers: true,
    bigNumberStrings: true,
    decimalNumbers: false,
    jsonStrings: true,
    multipleStatements: true,
    enableKeepAlive: true,
  };
  return { pool, database, bulkMethod };
}
