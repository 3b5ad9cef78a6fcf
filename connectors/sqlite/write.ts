import type Database from 'better-sqlite3';
import {
  ConnectorError,
  failed,
  INVALID,
  OK_ONE,
  succeeded,
  type ConnectorRecord,
  type WriteAction,
  type WriteOptions,
  type WriteResult,
  keyColumns,
} from '../../src/connectors/sdk.js';
import { quoteIdent, type SqliteColumn, type SqliteTable } from './catalogue.js';
import { callError, recordErrorCode, sqliteCode } from './errors.js';
import { writeValue } from './types.js';
import type { Bind } from './sql.js';

/**
 * Writes of one batch run in one transaction (`BEGIN IMMEDIATE … COMMIT`). A constraint failure
 * of a statement undoes that statement only (SQLite's statement journal), so a failing record
 * fails alone and the others commit together. A failure that ends the transaction (disk full,
 * I/O) fails the whole call.
 *
 * Create and Upsert insert up to {@link ROWS_PER_STATEMENT} records per statement
 * (`INSERT … VALUES (…), (…), …`), which halves the cost per record; when such a statement fails
 * for a record's reason, its records are run again one by one, so exactly the bad ones fail.
 * Update, UpdateInsert and Delete run one statement per record (each needs its own count).
 *
 * Values are checked against the field types first (SQLite itself would store 'abc' in an
 * INTEGER column): a value that does not fit is an InvalidValue for its record.
 */
const ROWS_PER_STATEMENT = 64;
const MAX_VARIABLES = 32_766;

interface Sql {
  insert: string;
  update: string;
  upsert: string;
  delete: string;
}

/** A record checked against the table: its columns (shared by records with the same fields) and bound values. */
interface Prepared {
  index: number;
  cols: SqliteColumn[];
  vals: Bind[];
}

export class SqliteWriter {
  private readonly statements = new Map<string, Database.Statement>();
  private readonly sqlCache = new Map<string, Sql>();

  constructor(private readonly db: Database.Database) {}

  private stmt(sql: string): Database.Statement {
    let s = this.statements.get(sql);
    if (!s) {
      // Bound the cache: records with ever new field sets must not grow it without end.
      if (this.statements.size >= 500) this.statements.clear();
      try {
        s = this.db.prepare(sql);
      } catch (err) {
        throw callError(err, 'The write statement is not valid');
      }
      this.statements.set(sql, s);
    }
    return s;
  }

  /** The statements of one (table, field set, key, rows per statement); built once per combination. */
  private sqlFor(table: SqliteTable, cols: SqliteColumn[], keys: SqliteColumn[], rows = 1): Sql {
    let sig = `${table.name}\u0000${rows}`;
    for (const c of cols) sig += `\u0000${c.name}`;
    for (const k of keys) sig += `\u0001${k.name}`;
    let sql = this.sqlCache.get(sig);
    if (sql) return sql;
    const t = quoteIdent(table.name);
    const where = keys.map((k) => `${quoteIdent(k.name)} = ?`).join(' AND ');
    const tuple = `(${cols.map(() => '?').join(', ')})`;
    const insert = cols.length
      ? `INSERT INTO ${t} (${cols.map((c) => quoteIdent(c.name)).join(', ')}) VALUES ${Array.from({ length: rows }, () => tuple).join(', ')}`
      : `INSERT INTO ${t} DEFAULT VALUES`;
    const setCols = cols.filter((c) => !keys.includes(c));
    const first = keys[0];
    const set = setCols.length ? setCols.map((c) => `${quoteIdent(c.name)} = ?`).join(', ') : first ? `${quoteIdent(first.name)} = ${quoteIdent(first.name)}` : '';
    const target = keys.map((k) => quoteIdent(k.name)).join(', ');
    const onConflict = setCols.length ? `DO UPDATE SET ${setCols.map((c) => `${quoteIdent(c.name)} = excluded.${quoteIdent(c.name)}`).join(', ')}` : 'DO NOTHING';
    sql = {
      insert,
      update: `UPDATE ${t} SET ${set} WHERE ${where}`,
      upsert: `${insert} ON CONFLICT (${target}) ${onConflict}`,
      delete: `DELETE FROM ${t} WHERE ${where}`,
    };
    if (this.sqlCache.size >= 500) this.sqlCache.clear();
    this.sqlCache.set(sig, sql);
    return sql;
  }

  write(action: WriteAction, table: SqliteTable, batch: readonly ConnectorRecord[], options: WriteOptions): WriteResult[] {
    if (table.isView) throw new ConnectorError('Unsupported', `${table.fullName} is a view: it cannot be written.`);
    const byName = new Map(table.columns.map((c) => [c.fullName, c]));
    const keys = keyColumns(action, table.fullName, table.columns, byName, options.keyFields);
    const results: WriteResult[] = new Array<WriteResult>(batch.length);
    const prepared = this.prepare(table, byName, keys, batch, results);
    const run = this.db.transaction(() => {
      if (action === 'Create' || action === 'Upsert') this.inserts(action, table, keys, prepared, results);
      else for (const p of prepared) results[p.index] = this.one(action, table, keys, p);
    });
    try {
      run.immediate();
    } catch (err) {
      throw callError(err, `The ${action} batch failed`);
    }
    return results;
  }

  /** Checks records; invalid ones get their result now. Records with the same fields share one column list. */
  private prepare(table: SqliteTable, byName: Map<string, SqliteColumn>, keys: SqliteColumn[], batch: readonly ConnectorRecord[], results: WriteResult[]): Prepared[] {
    const out: Prepared[] = [];
    let prevNames: string[] = [];
    let prevCols: SqliteColumn[] = [];
    for (let r = 0; r < batch.length; r++) {
      const rec = batch[r] as ConnectorRecord;
      // Same fields in the same order as the previous record: reuse its columns (no allocation).
      let same = true;
      let n = 0;
      for (const name in rec) {
        if (prevNames[n++] !== name) {
          same = false;
          break;
        }
      }
      let cols = prevCols;
      if (!same || n !== prevNames.length) {
        const names: string[] = [];
        cols = [];
        let bad: WriteResult | undefined;
        for (const name in rec) {
          const c = byName.get(name);
          if (!c) bad = failed('UnknownField', `The entity ${table.fullName} has no field ${name}.`, { field: name });
          else if (c.generated) bad = failed('InvalidValue', `The field ${name} is generated and cannot be written.`, { field: name });
          if (bad) break;
          names.push(name);
          cols.push(c as SqliteColumn);
        }
        if (bad) {
          results[r] = bad;
          continue;
        }
        prevNames = names;
        prevCols = cols;
      }
      const vals: Bind[] = new Array<Bind>(cols.length);
      let bad: WriteResult | undefined;
      for (let i = 0; i < cols.length; i++) {
        const c = cols[i] as SqliteColumn;
        const v = writeValue(c.type, rec[c.fullName]);
        if (v === INVALID) {
          bad = failed('InvalidValue', `The value of ${c.fullName} is not a valid ${c.type}.`, { field: c.fullName });
          break;
        }
        vals[i] = v;
      }
      if (!bad && keys.length) {
        const missing = keys.find((k) => {
          const i = cols.indexOf(k);
          return i < 0 || vals[i] === null;
        });
        if (missing) bad = failed('MissingKey', `The record has no value for the key field ${missing.fullName}.`, { field: missing.fullName });
      }
      if (bad) results[r] = bad;
      else out.push({ index: r, cols, vals });
    }
    return out;
  }

  /** Create / Upsert: runs of records with the same fields go in multi-row statements; a failed statement is retried record by record. */
  private inserts(action: 'Create' | 'Upsert', table: SqliteTable, keys: SqliteColumn[], prepared: Prepared[], results: WriteResult[]): void {
    let i = 0;
    while (i < prepared.length) {
      const first = prepared[i] as Prepared;
      const cols = first.cols;
      // Records that need their rowid back, or a lone record, take the single-row path.
      const wantsKey = action === 'Create' && table.rowidAlias !== undefined && !cols.some((c) => c.fullName === table.rowidAlias);
      const per = wantsKey || cols.length === 0 ? 1 : Math.max(1, Math.min(ROWS_PER_STATEMENT, Math.floor(MAX_VARIABLES / cols.length)));
      let j = i + 1;
      while (j < prepared.length && j - i < per && (prepared[j] as Prepared).cols === cols) j++;
      const run = prepared.slice(i, j);
      i = j;
      if (run.length === per && per > 1) {
        const sql = this.sqlFor(table, cols, keys, per);
        const params: Bind[] = [];
        for (const p of run) for (const v of p.vals) params.push(v);
        try {
          this.stmt(action === 'Create' ? sql.insert : sql.upsert).run(params);
          for (const p of run) results[p.index] = OK_ONE;
          continue;
        } catch (err) {
          if (!recordErrorCode(sqliteCode(err)) || !this.db.inTransaction) throw err;
          // fall through: one by one, so that only the failing records fail
        }
      }
      for (const p of run) results[p.index] = this.one(action, table, keys, p);
    }
  }

  private one(action: WriteAction, table: SqliteTable, keys: SqliteColumn[], p: Prepared): WriteResult {
    const { cols, vals } = p;
    const sql = this.sqlFor(table, cols, keys);
    const keyVals = keys.map((k) => vals[cols.indexOf(k)] ?? null);
    const setVals = keys.length ? vals.filter((_, i) => !keys.includes(cols[i] as SqliteColumn)) : vals;
    try {
      switch (action) {
        case 'Create': {
          const info = this.stmt(sql.insert).run(vals);
          if (table.rowidAlias && !cols.some((c) => c.fullName === table.rowidAlias)) return succeeded(1, { [table.rowidAlias]: Number(info.lastInsertRowid) });
          return OK_ONE;
        }
        case 'Update':
        case 'UpdateInsert': {
          const info = this.stmt(sql.update).run([...setVals, ...keyVals]);
          if (info.changes > 0) return succeeded(info.changes);
          if (action === 'Update') return failed('NotFound', `No record of ${table.fullName} matches the key.`);
          this.stmt(sql.insert).run(vals);
          return OK_ONE;
        }
        case 'Upsert':
          this.stmt(sql.upsert).run(vals);
          return OK_ONE;
        case 'Delete': {
          const info = this.stmt(sql.delete).run(keyVals);
          return info.changes > 0 ? succeeded(info.changes) : failed('NotFound', `No record of ${table.fullName} matches the key.`);
        }
      }
    } catch (err) {
      const code = sqliteCode(err);
      const rc = recordErrorCode(code);
      // Only failures of this record are per-record; anything else (and a transaction SQLite
      // rolled back) fails the whole call.
      if (!rc || !this.db.inTransaction) throw err;
      return failed(rc, err instanceof Error ? err.message : String(err), code ? { nativeCode: code } : {});
    }
  }
}
