import type { PoolConfig } from 'pg';
import { ConnectorError, propertyReader, type ConnectionProperties } from '../../src/connectors/sdk.js';
import { pgTypes } from './types.js';

export interface PgProps {
  pool: PoolConfig;
  /** Schemas whose tables are entities; empty = every schema but the system ones. */
  schemas: string[];
  /** Schema ensureEntity creates tables in. */
  targetSchema: string;
}

/**
 * Connection properties → pg Pool configuration. Either `connectionString` or host / port /
 * database / user / password. Every session runs with TimeZone=UTC and ISO dates so that the
 * value model's datetime strings come out the same on every server.
 */
export function parseProps(p: ConnectionProperties): PgProps {
  const { text, int } = propertyReader(p);
  const connectionString = text('connectionString');
  const host = text('host');
  if (!connectionString && !host)
    throw new ConnectorError(
      'InvalidProperties',
      'Give the property host (and database, user, password) or connectionString.',
    );
  const sslMode = (text('sslMode') ?? 'disable').toLowerCase();
  if (!['disable', 'require', 'verify-full'].includes(sslMode))
    throw new ConnectorError('InvalidProperties', 'The property sslMode must be disable, require or verify-full.');
  const syncCommit = (text('synchronousCommit') ?? 'on').toLowerCase();
  if (!['on', 'off', 'local'].includes(syncCommit))
    throw new ConnectorError('InvalidProperties', 'The property synchronousCommit must be on, off or local.');
  const pool: PoolConfig = {
    ...(connectionString ? { connectionString } : {}),
    ...(host ? { host } : {}),
    port: int('port', 5432, 1, 65535),
    ...(text('database') ? { database: text('database') } : {}),
    ...(text('user') ? { user: text('user') } : {}),
    ...(p['password'] ? { password: p['password'] } : {}),
    ...(sslMode === 'disable' ? {} : { ssl: { rejectUnauthorized: sslMode === 'verify-full' } }),
    max: int('poolSize', 4, 1, 100),
    connectionTimeoutMillis: int('connectTimeoutSeconds', 15, 1, 600) * 1000,
    idleTimeoutMillis: 30_000,
    application_name: 'ferry',
    options: `-c TimeZone=UTC -c DateStyle=ISO,YMD -c IntervalStyle=iso_8601${syncCommit === 'on' ? '' : ` -c synchronous_commit=${syncCommit}`}`,
    types: pgTypes,
  };
  if (connectionString && !host) delete pool.port;
  const schemas = (text('schemas') ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  return { pool, schemas, targetSchema: text('targetSchema') ?? 'public' };
}
