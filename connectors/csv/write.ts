import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { once } from 'node:events';
import {
  ConnectorError,
  coerceValue,
  failed,
  INVALID,
  OK_ONE,
  succeeded,
  type ConnectorRecord,
  type Value,
  type WriteAction,
  type WriteOptions,
  type WriteResult,
  type CallContext,
} from '../../src/connectors/sdk.js';
import { formatRow, type CsvField } from './parser.js';
import { readRows, fileError } from './reader.js';
import { keyPart } from './records.js';
import type { CsvProps } from './properties.js';
import type { CsvEntity } from './entity.js';

type Cell = CsvField | number | boolean;

/** A record checked against the entity: values in column order (undefined = not given), or its error. */
type Prepared = { values: (Value | undefined)[] } | { error: WriteResult };

function prepare(entity: CsvEntity, index: Map<string, number>, rec: ConnectorRecord): Prepared {
  const values: (Value | undefined)[] = new Array<Value | undefined>(entity.columns.length);
  for (const key in rec) {
    const i = index.get(key);
    if (i === undefined)
      return { error: failed('UnknownField', `The entity ${entity.fullName} has no field ${key}.`, { field: key }) };
    const col = entity.columns[i];
    if (!col) continue;
    const v = coerceValue(col.type, rec[key]);
    if (v === INVALID)
      return { error: failed('InvalidValue', `The value of ${key} is not a valid ${col.type}.`, { field: key }) };
    values[i] = v;
  }
  return { values };
}

/** Writes a batch into one file; the caller holds the file's lock. */
export async function writeEntity(
  action: WriteAction,
  entity: CsvEntity,
  batch: readonly ConnectorRecord[],
  options: WriteOptions,
  props: CsvProps,
  ctx: CallContext,
): Promise<WriteResult[]> {
  const index = new Map(entity.columns.map((c, i) => [c.fullName, i]));
  if (action === 'Create') return appendRecords(entity, index, batch, props);
  const keyNames = options.keyFields ?? entity.columns.filter((c) => c.isPrimaryKey).map((c) => c.fullName);
  if (keyNames.length === 0) {
    throw new ConnectorError(
      'Unsupported',
      `${action} on ${entity.fullName} needs key fields: declare a primary key in the schema file or give lookup fields.`,
    );
  }
  const keyIdx = keyNames.map((k) => {
    const i = index.get(k);
    if (i === undefined) throw new ConnectorError('FieldNotFound', `The entity ${entity.fullName} has no field ${k}.`);
    return i;
  });
  return rewriteRecords(action, entity, index, keyIdx, batch, props, ctx);
}

/** Create: checked records appended as lines, in one append per batch. */
async function appendRecords(
  entity: CsvEntity,
  index: Map<string, number>,
  batch: readonly ConnectorRecord[],
  props: CsvProps,
): Promise<WriteResult[]> {
  const results: WriteResult[] = new Array<WriteResult>(batch.length);
  let text = '';
  for (let r = 0; r < batch.length; r++) {
    const p = prepare(entity, index, batch[r] as ConnectorRecord);
    if ('error' in p) {
      results[r] = p.error;
      continue;
    }
    text += formatRow(
      p.values.map((v) => v ?? null),
      props.delimiter,
    );
    results[r] = OK_ONE;
  }
  if (text) {
    try {
      const prefix = (await needsNewline(entity.file)) ? '\n' : '';
      await fsp.appendFile(entity.file, prefix + text, { encoding: props.encoding });
    } catch (err) {
      throw fileError(err, entity.file);
    }
  }
  return results;
}

/** True when a non-empty file does not end with a line break (an append must start one). */
async function needsNewline(file: string): Promise<boolean> {
  const fh = await fsp.open(file, 'r');
  try {
    const { size } = await fh.stat();
    if (size === 0) return false;
    const b = Buffer.alloc(1);
    await fh.read(b, 0, 1, size - 1);
    return b[0] !== 0x0a;
  } finally {
    await fh.close();
  }
}

/**
 * Update, UpdateInsert, Upsert and Delete: the file is streamed through once into a temporary file
 * beside it, changing the rows whose key matches a record of the batch, then renamed over it
 * (atomic on one file system). Records of the batch apply in input order, so two records with one
 * key behave as if written one after the other. Memory: one batch plus one chunk of the file.
 */
async function rewriteRecords(
  action: WriteAction,
  entity: CsvEntity,
  index: Map<string, number>,
  keyIdx: number[],
  batch: readonly ConnectorRecord[],
  props: CsvProps,
  ctx: CallContext,
): Promise<WriteResult[]> {
  const results: (WriteResult | undefined)[] = new Array<WriteResult | undefined>(batch.length).fill(undefined);
  const affected = new Array<number>(batch.length).fill(0);
  const prepared: ((Value | undefined)[] | undefined)[] = [];
  const groups = new Map<string, number[]>();
  const types = entity.columns.map((c) => c.type);
  batch.forEach((rec, r) => {
    const p = prepare(entity, index, rec);
    if ('error' in p) {
      results[r] = p.error;
      prepared.push(undefined);
      return;
    }
    const missing = keyIdx.find((i) => p.values[i] === undefined || p.values[i] === null);
    if (missing !== undefined) {
      results[r] = failed(
        'MissingKey',
        `The record has no value for the key field ${entity.columns[missing]?.fullName}.`,
        { field: entity.columns[missing]?.fullName },
      );
      prepared.push(undefined);
      return;
    }
    prepared.push(p.values);
    const key = keyIdx.map((i) => keyPart(types[i] ?? 'string', p.values[i])).join('\u0001');
    const g = groups.get(key);
    if (g) g.push(r);
    else groups.set(key, [r]);
  });

  const tmp = path.join(path.dirname(entity.file), `.${path.basename(entity.file)}.${process.pid}.ferry-tmp`);
  const ws = fs.createWriteStream(tmp, { encoding: props.encoding });
  const apply = (row: Cell[], values: (Value | undefined)[]): void => {
    for (let i = 0; i < values.length; i++) {
      const v = values[i];
      if (v !== undefined) row[i] = v;
    }
  };
  try {
    let header = props.hasHeader;
    for await (const rows of readRows(entity.file, props, ctx.signal)) {
      let out = '';
      for (const raw of rows) {
        const row: Cell[] = raw;
        if (header) {
          header = false;
          out += formatRow(row, props.delimiter);
          continue;
        }
        const key = keyIdx.map((i) => keyPart(types[i] ?? 'string', row[i] ?? null)).join('\u0001');
        const g = groups.get(key);
        let keep = true;
        if (g) {
          if (action === 'Delete') {
            const first = g.find((r) => results[r] === undefined);
            if (first !== undefined) affected[first] = (affected[first] ?? 0) + 1;
            keep = false;
          } else {
            for (const r of g) {
              apply(row, prepared[r] as (Value | undefined)[]);
              affected[r] = (affected[r] ?? 0) + 1;
            }
          }
        }
        if (keep) out += formatRow(row, props.delimiter);
      }
      if (out && !ws.write(out)) await once(ws, 'drain');
    }
    if (action === 'UpdateInsert' || action === 'Upsert') {
      let out = '';
      for (const g of groups.values()) {
        const first = g[0] as number;
        if ((affected[first] ?? 0) > 0) continue;
        const row: Cell[] = new Array<Cell>(entity.columns.length).fill(null);
        for (const r of g) {
          apply(row, prepared[r] as (Value | undefined)[]);
          affected[r] = 1;
        }
        out += formatRow(row, props.delimiter);
      }
      if (out && !ws.write(out)) await once(ws, 'drain');
    }
    ws.end();
    await once(ws, 'finish');
    await fsp.rename(tmp, entity.file);
  } catch (err) {
    ws.destroy();
    await fsp.rm(tmp, { force: true });
    throw fileError(err, entity.file);
  }
  return results.map((res, r) => {
    if (res) return res;
    const n = affected[r] ?? 0;
    return n > 0 ? succeeded(n) : failed('NotFound', `No record of ${entity.fullName} matches the key.`);
  });
}
