import fsp from 'node:fs/promises';
import os from 'node:os';
import {
  ConnectorError,
  compareValues,
  compileFilter,
  filterFields,
  throwIfAborted,
  type CallContext,
  type ConnectorRecord,
  packRecords,
  slicePacked,
  type Filter,
  type PackedBatch,
  type QueryOptions,
  type RecordBatch,
} from '../../src/connectors/sdk.js';
import { fileError, readInThread, readPackedInThread, readWith } from './reader.js';
import { recordSink } from './records.js';
import { sortRecords } from './sort.js';
import type { CsvProps } from './properties.js';
import type { CsvEntity } from './entity.js';
import type { OpenScan } from './thread.js';

/** With readerThread `auto`, files of this many bytes or more are read in a scan thread … */
export const THREAD_MIN_BYTES = 8 << 20;
/** … on a machine with this many CPUs or more: on one, the thread could only take turns with the Agent's (docs/decisions.md). */
export const THREAD_MIN_CPUS = 2;

/**
 * Whether a query reads its file in a scan thread: `on`, or `auto` on a machine with enough CPUs
 * for a file large enough. `size` is asked only when the answer depends on it.
 */
export async function readsInThread(
  mode: CsvProps['readerThread'],
  cpus: number,
  size: () => Promise<number>,
): Promise<boolean> {
  if (mode !== 'auto') return mode === 'on';
  return cpus >= THREAD_MIN_CPUS && (await size()) >= THREAD_MIN_BYTES;
}

/** Whether a query of this entity reads in a scan thread ({@link readsInThread}, asking the file's size when it decides). */
function threadFor(entity: CsvEntity, props: CsvProps): Promise<boolean> {
  return readsInThread(props.readerThread, os.availableParallelism(), async () => {
    try {
      return (await fsp.stat(entity.file)).size;
    } catch (err) {
      throw fileError(err, entity.file);
    }
  });
}

/** Checks that every field an option names exists; FieldNotFound names the first that does not. */
export function requireFields(entity: CsvEntity, names: Iterable<string>): void {
  const known = new Set(entity.columns.map((c) => c.fullName));
  for (const n of names) {
    if (!known.has(n)) throw new ConnectorError('FieldNotFound', `The entity ${entity.fullName} has no field ${n}.`);
  }
}

/**
 * Streams an entity's records: parse → type → filter → (sort) → project → batches. Without an
 * order the file is read once, front to back, a chunk at a time; a large file is read, parsed and
 * typed in a scan thread (reader.ts `readInThread`), whose open threads are kept in `threads`.
 * Net change or an order sorts in bounded memory (sort.ts).
 */
export async function* queryEntity(
  entity: CsvEntity,
  filter: Filter | undefined,
  options: QueryOptions,
  props: CsvProps,
  ctx: CallContext,
  threads: Set<OpenScan>,
): AsyncGenerator<RecordBatch, void, undefined> {
  const order = options.netChange
    ? [{ field: options.netChange.field, direction: 'asc' as const }]
    : (options.orderBy ?? []);
  requireFields(entity, [...filterFields(filter), ...(options.fields ?? []), ...order.map((o) => o.field)]);
  const typeOf = (f: string) => entity.columns.find((c) => c.fullName === f)?.type;
  const conditions: Filter[] = [];
  if (filter) conditions.push(filter);
  if (options.netChange) conditions.push({ op: '>=', field: options.netChange.field, value: options.netChange.since });
  const test =
    conditions.length === 0
      ? undefined
      : compileFilter(
          conditions.length === 1 ? conditions[0] : { op: 'and', args: conditions },
          typeOf,
          (f) => new ConnectorError('FieldNotFound', `The entity ${entity.fullName} has no field ${f}.`),
        );
  const fields = options.fields;
  const project = fields
    ? (r: ConnectorRecord): ConnectorRecord => {
        const o: ConnectorRecord = {};
        for (const f of fields) o[f] = r[f] ?? null;
        return o;
      }
    : undefined;
  const limit = options.limit ?? Infinity;
  const batchSize = options.batchSize;

  const inThread = await threadFor(entity, props);
  async function* matching(): AsyncGenerator<ConnectorRecord[], void, undefined> {
    const source = inThread
      ? readInThread(entity, props, ctx.log, ctx.signal, threads)
      : readWith(entity.file, props, ctx.signal, recordSink(entity, ctx.log, props.delimiter, props.hasHeader));
    for await (const records of source) {
      const out = test ? records.filter(test) : records;
      if (out.length) yield out;
    }
  }

  let source: AsyncIterable<ConnectorRecord[]> = matching();
  if (order.length) {
    const cols = order.map((o) => ({
      name: o.field,
      type: typeOf(o.field) ?? 'string',
      sign: o.direction === 'desc' ? -1 : 1,
    }));
    source = sortRecords(
      source,
      (a, b) => {
        for (const c of cols) {
          const x = a[c.name];
          const y = b[c.name];
          // Nulls last, as PostgreSQL orders ascending.
          const d =
            x === null || x === undefined
              ? y === null || y === undefined
                ? 0
                : 1
              : y === null || y === undefined
                ? -1
                : compareValues(c.type, x, y) * c.sign;
          if (d !== 0) return d;
        }
        return 0;
      },
      batchSize,
    );
  }

  let sent = 0;
  let batch: RecordBatch = [];
  for await (const chunk of source) {
    throwIfAborted(ctx.signal);
    for (const rec of chunk) {
      batch.push(project ? project(rec) : rec);
      if (++sent >= limit || batch.length >= batchSize) {
        yield batch;
        batch = [];
        ctx.progress({ records: sent });
        if (sent >= limit) return;
      }
    }
  }
  if (batch.length) yield batch;
}

/** Whether a query is read packed (queryPacked): one with no order and no net change, which sort records. */
export function readsPacked(options: QueryOptions): boolean {
  return !options.netChange && !options.orderBy?.length;
}

/**
 * An entity's rows as packed batches (src/connectors/packed.ts): the rows and values of
 * {@link queryEntity} with the same arguments, of `options.fields` (else every column, in file
 * order), `batchSize` rows in each batch but the last. A query without a filter that reads in a
 * scan thread gets its batches packed there (reader.ts `readPackedInThread`); any other is read
 * as records and packed here.
 */
export async function* queryEntityPacked(
  entity: CsvEntity,
  filter: Filter | undefined,
  options: QueryOptions,
  props: CsvProps,
  ctx: CallContext,
  threads: Set<OpenScan>,
): AsyncGenerator<PackedBatch, void, undefined> {
  const fields = options.fields ?? entity.columns.map((c) => c.fullName);
  requireFields(entity, [...filterFields(filter), ...fields]);
  if (filter !== undefined || !readsPacked(options) || !(await threadFor(entity, props))) {
    for await (const records of queryEntity(entity, filter, options, props, ctx, threads))
      yield packRecords(records, fields);
    return;
  }
  // As queryEntity counts: whole rows, and a limit below 1 still gives the first.
  const limit = Math.max(1, Math.ceil(options.limit ?? Infinity));
  let sent = 0;
  for await (const batch of readPackedInThread(
    entity,
    props,
    ctx.log,
    ctx.signal,
    threads,
    fields,
    options.batchSize,
  )) {
    throwIfAborted(ctx.signal);
    const out = sent + batch.rows > limit ? slicePacked(batch, 0, limit - sent) : batch;
    sent += out.rows;
    yield out;
    ctx.progress({ records: sent });
    if (sent >= limit) return;
  }
}
