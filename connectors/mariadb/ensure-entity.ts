import type { PoolConnection } from 'mysql2';
import {
  ConnectorError,
  isFullName,
  type EnsureEntityOptions,
  type EntityMetadata,
  type PropertyType,
} from '../../src/connectors/sdk.js';
import { quoteIdent, type MariaTable } from './catalogue.js';
import { callError } from './errors.js';
import { run } from './pool.js';
import { columnTypeOf } from './types.js';

type Field = EntityMetadata['fields'][number];

/**
 * Creates the table `<fullName>` (InnoDB, utf8mb4) to match the source entity — column types from
 * the property types, sizes and scales (types.ts columnTypeOf), the primary key — or adds the
 * columns an existing table lacks. Existing columns are never dropped, narrowed or retyped: a
 * differing type is reported, not changed. The server commits each DDL statement by itself.
 */
export async function ensureTable(
  conn: PoolConnection,
  source: EntityMetadata,
  options: EnsureEntityOptions,
  existing: MariaTable | undefined,
): Promise<{
  created: boolean;
  addedFields: string[];
  mismatched: { field: string; sourceType: PropertyType; targetType: PropertyType }[];
}> {
  const name = options.entity ?? source.fullName;
  if (!isFullName(name)) throw new ConnectorError('InvalidQuery', `${name} is not a valid entity fullName.`);
  if (source.fields.length === 0)
    throw new ConnectorError('InvalidQuery', `The source entity ${source.fullName} has no fields.`);
  const def = (f: Field): string =>
    `${quoteIdent(f.fullName)} ${columnTypeOf(f.propertyType, f.size, f.scale, f.isPrimaryKey)}`;
  const table = quoteIdent(existing?.name ?? name);
  try {
    if (!existing) {
      const pk = source.fields.filter((f) => f.isPrimaryKey).map((f) => quoteIdent(f.fullName));
      const defs = source.fields.map((f) => `${def(f)}${f.isPrimaryKey || !f.nullable ? ' NOT NULL' : ' NULL'}`);
      if (pk.length) defs.push(`PRIMARY KEY (${pk.join(', ')})`);
      await run(conn, `CREATE TABLE ${table} (${defs.join(', ')}) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4`);
      return { created: true, addedFields: [], mismatched: [] };
    }
    if (existing.kind !== 'table')
      throw new ConnectorError('Unsupported', `${existing.fullName} is a view: it cannot be altered.`);
    const have = new Map(existing.columns.map((c) => [c.fullName, c]));
    const missing = source.fields.filter((f) => !have.has(f.fullName));
    if (missing.length)
      await run(conn, `ALTER TABLE ${table} ${missing.map((f) => `ADD COLUMN ${def(f)} NULL`).join(', ')}`);
    const mismatched = source.fields
      .filter((f) => have.has(f.fullName) && have.get(f.fullName)?.type !== f.propertyType)
      .map((f) => ({
        field: f.fullName,
        sourceType: f.propertyType,
        targetType: have.get(f.fullName)?.type ?? 'string',
      }));
    return { created: false, addedFields: missing.map((f) => f.fullName), mismatched };
  } catch (err) {
    throw callError(err, `The table ${name} could not be created or altered`);
  }
}
