import type { PoolClient } from 'pg';
import {
  ConnectorError,
  isFullName,
  type EnsureEntityOptions,
  type EntityMetadata,
  type PropertyType,
} from '../../src/connectors/sdk.js';
import { quoteIdent, type PgTable } from './catalogue.js';
import { callError } from './errors.js';
import { columnTypeOf } from './types.js';

type Field = EntityMetadata['fields'][number];

/**
 * Creates `targetSchema.<fullName>` to match the source entity (column types from the property
 * types, sizes and scales; the primary key), or adds the columns an existing table lacks, in one
 * transaction. Existing columns are never dropped, narrowed or retyped: a differing type is
 * reported, not changed.
 */
export async function ensureTable(
  client: PoolClient,
  source: EntityMetadata,
  options: EnsureEntityOptions,
  schema: string,
  existing: PgTable | undefined,
): Promise<{
  created: boolean;
  addedFields: string[];
  mismatched: { field: string; sourceType: PropertyType; targetType: PropertyType }[];
}> {
  const name = options.entity ?? source.fullName;
  if (!isFullName(name)) throw new ConnectorError('InvalidQuery', `${name} is not a valid entity fullName.`);
  if (source.fields.length === 0)
    throw new ConnectorError('InvalidQuery', `The source entity ${source.fullName} has no fields.`);
  const def = (f: Field): string => `${quoteIdent(f.fullName)} ${columnTypeOf(f.propertyType, f.size, f.scale)}`;
  const table = `${quoteIdent(existing?.schema ?? schema)}.${quoteIdent(existing?.name ?? name)}`;
  try {
    if (!existing) {
      const pk = source.fields.filter((f) => f.isPrimaryKey).map((f) => quoteIdent(f.fullName));
      const defs = source.fields.map((f) => `${def(f)}${f.isPrimaryKey || f.nullable ? '' : ' NOT NULL'}`);
      if (pk.length) defs.push(`PRIMARY KEY (${pk.join(', ')})`);
      await client.query(`CREATE TABLE ${table} (${defs.join(', ')})`);
      return { created: true, addedFields: [], mismatched: [] };
    }
    if (existing.kind !== 'table')
      throw new ConnectorError('Unsupported', `${existing.fullName} is a view: it cannot be altered.`);
    const have = new Map(existing.columns.map((c) => [c.fullName, c]));
    const missing = source.fields.filter((f) => !have.has(f.fullName));
    if (missing.length)
      await client.query(`ALTER TABLE ${table} ${missing.map((f) => `ADD COLUMN ${def(f)}`).join(', ')}`);
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
