import type Database from 'better-sqlite3';
import { ConnectorError, isFullName, type EnsureEntityOptions, type EntityMetadata } from '../../src/connectors/sdk.js';
import { quoteIdent, type SqliteTable } from './catalogue.js';
import { callError } from './errors.js';
import { declaredTypeOf, propertyTypeOf } from './types.js';

/**
 * Creates the table `source` describes (columns by fullName, declared types Ferry maps back to the
 * same property types, the primary key), or adds the columns an existing table lacks. Columns are
 * never dropped or retyped. Returns what changed; the caller re-reads the catalogue.
 */
export function ensureTable(
  db: Database.Database,
  source: EntityMetadata,
  options: EnsureEntityOptions,
  existing: SqliteTable | undefined,
): {
  created: boolean;
  addedFields: string[];
  mismatched: {
    field: string;
    sourceType: EntityMetadata['fields'][number]['propertyType'];
    targetType: EntityMetadata['fields'][number]['propertyType'];
  }[];
} {
  const name = options.entity ?? source.fullName;
  if (!isFullName(name)) throw new ConnectorError('InvalidQuery', `${name} is not a valid entity fullName.`);
  if (source.fields.length === 0)
    throw new ConnectorError('InvalidQuery', `The source entity ${source.fullName} has no fields.`);
  const colDef = (f: EntityMetadata['fields'][number]): string =>
    `${quoteIdent(f.fullName)} ${declaredTypeOf(f.propertyType, f.size, f.scale)}`;
  try {
    if (!existing) {
      const pk = source.fields.filter((f) => f.isPrimaryKey).map((f) => quoteIdent(f.fullName));
      const defs = source.fields.map((f) => `${colDef(f)}${f.isPrimaryKey || f.nullable ? '' : ' NOT NULL'}`);
      if (pk.length) defs.push(`PRIMARY KEY (${pk.join(', ')})`);
      db.exec(`CREATE TABLE ${quoteIdent(name)} (${defs.join(', ')})`);
      return { created: true, addedFields: [], mismatched: [] };
    }
    if (existing.isView)
      throw new ConnectorError('Unsupported', `${existing.fullName} is a view: it cannot be altered.`);
    const have = new Map(existing.columns.map((c) => [c.fullName, c]));
    const missing = source.fields.filter((f) => !have.has(f.fullName));
    db.transaction(() => {
      for (const f of missing) db.exec(`ALTER TABLE ${quoteIdent(existing.name)} ADD COLUMN ${colDef(f)}`);
    })();
    const mismatched = source.fields
      .filter(
        (f) => have.has(f.fullName) && propertyTypeOf(have.get(f.fullName)?.declared ?? '').type !== f.propertyType,
      )
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
