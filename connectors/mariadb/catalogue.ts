import {
  CHECKPOINT_TABLE,
  toFullName,
  uniqueFullNames,
  type ForeignKey,
  type PropertyType,
} from '../../src/connectors/sdk.js';
import { propertyTypeOf, readKindOf, type ReadKind } from './types.js';

export interface MariaColumn {
  name: string;
  fullName: string;
  ordinal: number;
  /** DATA_TYPE (`varchar`) and COLUMN_TYPE (`varchar(50)`, `int(10) unsigned`). */
  dataType: string;
  columnType: string;
  type: PropertyType;
  readKind: ReadKind;
  size: number;
  scale?: number;
  notNull: boolean;
  /** 1-based position in the primary key; 0 when not part of it. */
  pk: number;
  hasDefault: boolean;
  /** A generated column: cannot be written. */
  readOnly: boolean;
  description: string;
}

export interface MariaTable {
  name: string;
  fullName: string;
  kind: 'table' | 'view';
  /** InnoDB and other engines with transactions: a failed statement leaves none of its rows behind. */
  transactional: boolean;
  description: string;
  columns: MariaColumn[];
  /** Column names of the primary key and of each unique key (the conflict targets of an Upsert). */
  uniqueKeys: string[][];
  foreignKeys: ForeignKey[];
}

/** `` `name` `` */
export const quoteIdent = (s: string): string => `\`${s.replace(/`/g, '``')}\``;

/** Rows of a query on the catalogue (column names as aliased). */
export type Query = <T>(sql: string, params: unknown[]) => Promise<T[]>;

const TABLES = `SELECT TABLE_NAME AS name, TABLE_TYPE AS type, ENGINE AS engine, TABLE_COMMENT AS comment
  FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME <> ? ORDER BY TABLE_NAME`;
const COLUMNS = `SELECT TABLE_NAME AS tbl, COLUMN_NAME AS name, ORDINAL_POSITION AS ord, DATA_TYPE AS dataType,
       COLUMN_TYPE AS columnType, CHARACTER_MAXIMUM_LENGTH AS charLength, NUMERIC_PRECISION AS numPrecision,
       NUMERIC_SCALE AS numScale, IS_NULLABLE AS nullable, COLUMN_DEFAULT AS dflt, EXTRA AS extra,
       COLUMN_COMMENT AS comment
  FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? ORDER BY TABLE_NAME, ORDINAL_POSITION`;
const KEYS = `SELECT k.TABLE_NAME AS tbl, k.CONSTRAINT_NAME AS name, k.COLUMN_NAME AS col, c.CONSTRAINT_TYPE AS type,
       k.REFERENCED_TABLE_SCHEMA AS refSchema, k.REFERENCED_TABLE_NAME AS refTable, k.REFERENCED_COLUMN_NAME AS refCol
  FROM information_schema.KEY_COLUMN_USAGE k
  JOIN information_schema.TABLE_CONSTRAINTS c
    ON c.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND c.TABLE_NAME = k.TABLE_NAME AND c.CONSTRAINT_NAME = k.CONSTRAINT_NAME
 WHERE k.TABLE_SCHEMA = ? ORDER BY k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION`;
/** MariaDB's JSON is LONGTEXT with a json_valid check; MySQL 5.7 has no CHECK_CONSTRAINTS (the query may fail). */
const JSON_CHECKS = `SELECT TABLE_NAME AS tbl, CHECK_CLAUSE AS clause FROM information_schema.CHECK_CONSTRAINTS
 WHERE CONSTRAINT_SCHEMA = ? AND CHECK_CLAUSE LIKE 'json\\_valid(%'`;

const NON_TRANSACTIONAL = new Set(['myisam', 'aria', 'memory', 'csv', 'archive', 'merge', 'mrg_myisam', 'blackhole']);

interface TableRow {
  name: string;
  type: string;
  engine: string | null;
  comment: string | null;
}
interface ColumnRow {
  tbl: string;
  name: string;
  ord: number | string;
  dataType: string;
  columnType: string;
  charLength: number | string | null;
  numPrecision: number | string | null;
  numScale: number | string | null;
  nullable: string;
  dflt: string | null;
  extra: string | null;
  comment: string | null;
}
interface KeyRow {
  tbl: string;
  name: string;
  col: string;
  type: string;
  refSchema: string | null;
  refTable: string | null;
  refCol: string | null;
}

const num = (v: number | string | null): number | null => (v === null ? null : Number(v));

/**
 * Tables, views, columns, primary, unique and foreign keys of one database from
 * information_schema, in four queries. Entities are named by their table names.
 */
export async function readCatalogue(query: Query, database: string): Promise<MariaTable[]> {
  const tables = await query<TableRow>(TABLES, [database, CHECKPOINT_TABLE]);
  const cols = await query<ColumnRow>(COLUMNS, [database]);
  const keys = await query<KeyRow>(KEYS, [database]);
  let jsonChecks: { tbl: string; clause: string }[] = [];
  try {
    jsonChecks = await query<{ tbl: string; clause: string }>(JSON_CHECKS, [database]);
  } catch {
    // Servers without CHECK_CONSTRAINTS have real JSON columns (or none).
  }
  const jsonCols = new Set(
    jsonChecks.flatMap((c) => {
      const m = /^json_valid\(`((?:[^`]|``)+)`\)$/i.exec(c.clause.trim());
      return m?.[1] ? [`${c.tbl}\u0000${m[1].replace(/``/g, '`')}`] : [];
    }),
  );
  const fullNames = uniqueFullNames(tables.map((t) => t.name));
  const colsByTable = new Map<string, ColumnRow[]>();
  for (const c of cols) colsByTable.set(c.tbl, [...(colsByTable.get(c.tbl) ?? []), c]);
  const constraints = new Map<string, KeyRow[]>();
  for (const k of keys) {
    const id = `${k.tbl}\u0000${k.name}`;
    constraints.set(id, [...(constraints.get(id) ?? []), k]);
  }
  const out = new Map<string, MariaTable>();
  tables.forEach((t, i) => {
    const rows = colsByTable.get(t.name) ?? [];
    const names = uniqueFullNames(rows.map((r) => r.name));
    const pkCols = (constraints.get(`${t.name}\u0000PRIMARY`) ?? []).map((k) => k.col);
    const uniqueKeys = [...constraints.values()]
      .filter((ks) => ks[0]?.tbl === t.name && (ks[0].type === 'PRIMARY KEY' || ks[0].type === 'UNIQUE'))
      .map((ks) => ks.map((k) => k.col));
    out.set(t.name, {
      name: t.name,
      fullName: fullNames[i] as string,
      kind: t.type === 'VIEW' || t.type === 'SYSTEM VIEW' ? 'view' : 'table',
      transactional: !NON_TRANSACTIONAL.has((t.engine ?? 'innodb').toLowerCase()),
      description: t.comment ?? '',
      uniqueKeys,
      columns: rows.map((r, j) => {
        const extra = (r.extra ?? '').toLowerCase();
        const pt = propertyTypeOf(
          r.dataType,
          r.columnType,
          num(r.charLength),
          num(r.numPrecision),
          num(r.numScale),
          jsonCols.has(`${t.name}\u0000${r.name}`),
        );
        return {
          name: r.name,
          fullName: names[j] as string,
          ordinal: Number(r.ord),
          dataType: r.dataType.toLowerCase(),
          columnType: r.columnType,
          type: pt.type,
          readKind: readKindOf(r.dataType, pt.type),
          size: pt.size,
          ...(pt.scale !== undefined ? { scale: pt.scale } : {}),
          notNull: r.nullable === 'NO',
          pk: pkCols.indexOf(r.name) + 1,
          // MariaDB shows a nullable column's missing default as the text NULL.
          hasDefault: (r.dflt !== null && r.dflt !== 'NULL') || extra.includes('auto_increment'),
          readOnly: extra.includes('generated') || extra.includes('virtual') || extra.includes('persistent'),
          description: r.comment ?? '',
        };
      }),
      foreignKeys: [],
    });
  });
  for (const ks of constraints.values()) {
    const first = ks[0];
    if (!first || first.type !== 'FOREIGN KEY' || !first.refTable || first.refSchema !== database) continue;
    const child = out.get(first.tbl);
    const parent = out.get(first.refTable);
    if (!child || !parent) continue;
    const col = (t: MariaTable, name: string | null): string => t.columns.find((c) => c.name === name)?.fullName ?? '';
    child.foreignKeys.push({
      name: toFullName(first.name),
      entity: child.fullName,
      fields: ks.map((k) => col(child, k.col)),
      relatedEntity: parent.fullName,
      relatedFields: ks.map((k) => col(parent, k.refCol)),
    });
  }
  return [...out.values()];
}
