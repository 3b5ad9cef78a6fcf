import type Database from 'better-sqlite3';
import {
  CHECKPOINT_TABLE,
  toFullName,
  uniqueFullNames,
  type ForeignKey,
  type PropertyType,
} from '../../src/connectors/sdk.js';
import { numericAffinity, propertyTypeOf } from './types.js';

export interface SqliteColumn {
  name: string;
  fullName: string;
  declared: string;
  type: PropertyType;
  size: number;
  scale?: number;
  notNull: boolean;
  /** 1-based position in the primary key; 0 when not part of it. */
  pk: number;
  hasDefault: boolean;
  /** Generated columns cannot be written. */
  generated: boolean;
  /** SQLite stores numeric text given to this column as a number (INTEGER, REAL or NUMERIC affinity). */
  numeric: boolean;
}

export interface SqliteTable {
  name: string;
  fullName: string;
  isView: boolean;
  columns: SqliteColumn[];
  /** The column that aliases the rowid (`INTEGER PRIMARY KEY`), filled by SQLite on insert. */
  rowidAlias: string | undefined;
  foreignKeys: ForeignKey[];
}

export const quoteIdent = (name: string): string => `"${name.replace(/"/g, '""')}"`;

interface TableListRow {
  name: string;
  type: string;
  wr: number;
}
interface XInfoRow {
  cid: number;
  name: string;
  type: string;
  notnull: number;
  dflt_value: string | null;
  pk: number;
  hidden: number;
}
interface FkRow {
  id: number;
  seq: number;
  table: string;
  from: string;
  to: string | null;
}

/** Tables and views of the main schema, with columns and foreign keys, from SQLite's catalogue pragmas. */
export function readCatalogue(db: Database.Database): SqliteTable[] {
  const list = db
    .prepare(
      "SELECT name, type, wr FROM pragma_table_list WHERE schema = 'main' AND type IN ('table', 'view') AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\' AND name <> ? ORDER BY name",
    )
    .all(CHECKPOINT_TABLE) as TableListRow[];
  const fullNames = uniqueFullNames(list.map((t) => t.name));
  const byName = new Map<string, SqliteTable>();
  const tables = list.map((t, i) => {
    const cols = db
      .prepare('SELECT cid, name, type, "notnull", dflt_value, pk, hidden FROM pragma_table_xinfo(?) ORDER BY cid')
      .all(t.name) as XInfoRow[];
    const colNames = uniqueFullNames(cols.map((c) => c.name));
    const pkCols = cols.filter((c) => c.pk > 0);
    const rowidAlias =
      t.type === 'table' && !t.wr && pkCols.length === 1 && pkCols[0]?.type.toUpperCase() === 'INTEGER'
        ? colNames[cols.indexOf(pkCols[0])]
        : undefined;
    const columns: SqliteColumn[] = cols
      .map((c, j) => {
        const pt = propertyTypeOf(c.type);
        const fullName = colNames[j] as string;
        return {
          name: c.name,
          fullName,
          declared: c.type,
          type: pt.type,
          size: pt.size,
          ...(pt.scale !== undefined ? { scale: pt.scale } : {}),
          notNull: c.notnull === 1 || c.pk > 0,
          pk: c.pk,
          hasDefault: c.dflt_value !== null || fullName === rowidAlias || c.hidden >= 2,
          generated: c.hidden >= 2,
          numeric: numericAffinity(c.type),
        };
      })
      .filter((_, j) => (cols[j]?.hidden ?? 0) !== 1);
    const table: SqliteTable = {
      name: t.name,
      fullName: fullNames[i] as string,
      isView: t.type === 'view',
      columns,
      rowidAlias,
      foreignKeys: [],
    };
    byName.set(t.name, table);
    return table;
  });
  for (const t of tables) {
    if (t.isView) continue;
    const rows = db
      .prepare('SELECT id, seq, "table", "from", "to" FROM pragma_foreign_key_list(?) ORDER BY id, seq')
      .all(t.name) as FkRow[];
    const groups = new Map<number, FkRow[]>();
    for (const r of rows) groups.set(r.id, [...(groups.get(r.id) ?? []), r]);
    const names = uniqueFullNames([...groups.values()].map((g) => `fk_${t.name}_${g.map((r) => r.from).join('_')}`));
    [...groups.values()].forEach((g, i) => {
      const parent =
        byName.get(g[0]?.table ?? '') ??
        [...byName.values()].find((x) => x.name.toLowerCase() === g[0]?.table.toLowerCase());
      if (!parent) return;
      const colFull = (tbl: SqliteTable, name: string): string =>
        tbl.columns.find((c) => c.name === name || c.name.toLowerCase() === name.toLowerCase())?.fullName ??
        toFullName(name);
      const parentPk = parent.columns.filter((c) => c.pk > 0).sort((a, b) => a.pk - b.pk);
      t.foreignKeys.push({
        name: names[i] as string,
        entity: t.fullName,
        fields: g.map((r) => colFull(t, r.from)),
        relatedEntity: parent.fullName,
        relatedFields: g.map((r, k) => (r.to ? colFull(parent, r.to) : (parentPk[k]?.fullName ?? ''))),
      });
    });
  }
  return tables;
}
