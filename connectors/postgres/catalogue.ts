import type { PoolClient } from 'pg';
import {
  CHECKPOINT_TABLE,
  toFullName,
  uniqueFullNames,
  type ForeignKey,
  type PropertyType,
} from '../../src/connectors/sdk.js';
import { propertyTypeOf } from './types.js';

export interface PgColumn {
  name: string;
  fullName: string;
  attnum: number;
  /** `format_type()`: what casts use (`character varying(50)`, `numeric(12,2)`, `public.mood`). */
  sqlType: string;
  /** The type's name in pg_type (of the base type for a domain): how its values travel in binary. */
  typname: string;
  type: PropertyType;
  size: number;
  scale?: number;
  notNull: boolean;
  /** 1-based position in the primary key; 0 when not part of it. */
  pk: number;
  hasDefault: boolean;
  /** Generated or identity ALWAYS: cannot be written. */
  readOnly: boolean;
  description: string;
}

export interface PgTable {
  oid: number;
  schema: string;
  name: string;
  fullName: string;
  kind: 'table' | 'view';
  description: string;
  columns: PgColumn[];
  foreignKeys: ForeignKey[];
}

/** `"schema"."table"` */
export const quoteIdent = (s: string): string => `"${s.replace(/"/g, '""')}"`;
export const qualified = (t: Pick<PgTable, 'schema' | 'name'>): string =>
  `${quoteIdent(t.schema)}.${quoteIdent(t.name)}`;

const TABLES = `
SELECT c.oid::int AS oid, n.nspname AS schema, c.relname AS name, c.relkind AS kind,
       coalesce(obj_description(c.oid, 'pg_class'), '') AS description
  FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
 WHERE c.relkind IN ('r', 'p', 'v', 'm', 'f') AND NOT c.relispartition
   AND n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg\\_%'
   AND (cardinality($1::text[]) = 0 OR n.nspname = ANY($1::text[])) AND c.relname <> $2
 ORDER BY n.nspname = 'public' DESC, n.nspname, c.relname`;

const COLUMNS = `
SELECT a.attrelid::int AS oid, a.attnum::int AS attnum, a.attname AS name, format_type(a.atttypid, a.atttypmod) AS sql_type,
       coalesce(bt.typname, t.typname) AS typname, t.typcategory AS typcategory,
       (CASE WHEN t.typtype = 'd' THEN t.typtypmod ELSE a.atttypmod END)::int AS typmod,
       a.attnotnull AS not_null, a.atthasdef AS has_default, a.attidentity AS identity, a.attgenerated AS generated,
       coalesce(col_description(a.attrelid, a.attnum), '') AS description
  FROM pg_attribute a
  JOIN pg_type t ON t.oid = a.atttypid
  LEFT JOIN pg_type bt ON t.typtype = 'd' AND bt.oid = t.typbasetype
 WHERE a.attrelid = ANY($1::oid[]) AND a.attnum > 0 AND NOT a.attisdropped
 ORDER BY a.attrelid, a.attnum`;

const CONSTRAINTS = `
SELECT con.conrelid::int AS oid, con.contype AS type, con.conname AS name, array_to_string(con.conkey, ',') AS keys,
       con.confrelid::int AS ref_oid, coalesce(array_to_string(con.confkey, ','), '') AS ref_keys
  FROM pg_constraint con
 WHERE con.contype IN ('p', 'f') AND con.conrelid = ANY($1::oid[])
 ORDER BY con.conrelid, con.conname`;

interface TableRow {
  oid: number;
  schema: string;
  name: string;
  kind: string;
  description: string;
}
interface ColumnRow {
  oid: number;
  attnum: number;
  name: string;
  sql_type: string;
  typname: string;
  typcategory: string;
  typmod: number;
  not_null: boolean;
  has_default: boolean;
  identity: string;
  generated: string;
  description: string;
}
interface ConstraintRow {
  oid: number;
  type: string;
  name: string;
  keys: string;
  ref_oid: number;
  ref_keys: string;
}

const nums = (s: string): number[] => (s ? s.split(',').map(Number) : []);

/**
 * Tables, views, columns, primary keys and foreign keys from pg_catalog, in three queries. Tables
 * of `public` are named by their name; others by `schema_table`.
 */
export async function readCatalogue(client: PoolClient, schemas: string[]): Promise<PgTable[]> {
  const tables = (await client.query<TableRow>(TABLES, [schemas, CHECKPOINT_TABLE])).rows;
  const oids = tables.map((t) => t.oid);
  const [cols, cons] = [
    (await client.query<ColumnRow>(COLUMNS, [oids])).rows,
    (await client.query<ConstraintRow>(CONSTRAINTS, [oids])).rows,
  ];
  const fullNames = uniqueFullNames(tables.map((t) => (t.schema === 'public' ? t.name : `${t.schema}_${t.name}`)));
  const colsByTable = new Map<number, ColumnRow[]>();
  for (const c of cols) colsByTable.set(c.oid, [...(colsByTable.get(c.oid) ?? []), c]);
  const pkByTable = new Map<number, number[]>();
  for (const c of cons) if (c.type === 'p') pkByTable.set(c.oid, nums(c.keys));
  const out = new Map<number, PgTable>();
  tables.forEach((t, i) => {
    const rows = colsByTable.get(t.oid) ?? [];
    const names = uniqueFullNames(rows.map((r) => r.name));
    const pk = pkByTable.get(t.oid) ?? [];
    out.set(t.oid, {
      oid: t.oid,
      schema: t.schema,
      name: t.name,
      fullName: fullNames[i] as string,
      kind: t.kind === 'v' || t.kind === 'm' ? 'view' : 'table',
      description: t.description,
      columns: rows.map((r, j) => {
        const pt = propertyTypeOf(r.typname, r.typcategory, r.typmod);
        return {
          name: r.name,
          fullName: names[j] as string,
          attnum: r.attnum,
          sqlType: r.sql_type,
          typname: r.typname,
          type: pt.type,
          size: pt.size,
          ...(pt.scale !== undefined ? { scale: pt.scale } : {}),
          notNull: r.not_null,
          pk: pk.indexOf(r.attnum) + 1,
          hasDefault: r.has_default || r.identity !== '' || r.generated !== '',
          readOnly: r.identity === 'a' || r.generated !== '',
          description: r.description,
        };
      }),
      foreignKeys: [],
    });
  });
  for (const c of cons) {
    if (c.type !== 'f') continue;
    const child = out.get(c.oid);
    const parent = out.get(c.ref_oid);
    if (!child || !parent || !c.ref_keys) continue;
    const keys = nums(c.keys);
    const refKeys = nums(c.ref_keys);
    const col = (t: PgTable, attnum: number): string => t.columns.find((x) => x.attnum === attnum)?.fullName ?? '';
    child.foreignKeys.push({
      name: toFullName(c.name),
      entity: child.fullName,
      fields: keys.map((k) => col(child, k)),
      relatedEntity: parent.fullName,
      relatedFields: refKeys.map((k) => col(parent, k)),
    });
  }
  return [...out.values()];
}
