import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { ConnectorError, type ConnectorLog, type ConnectorRecord, type PackedBatch } from '../../src/connectors/sdk.js';
import { CsvParser, type CsvRow, type CsvSink } from './parser.js';
import type { CsvProps } from './properties.js';
import { packedRecords, scanColumns, settlePacked } from './records.js';
import type { CsvEntity } from './entity.js';
import type { ScanBatch, ScanPacked, ScanSettings } from './scanner.js';
import { startPackedScan, startScan, type OpenScan, type ScanThread } from './thread.js';

/** Bytes read per chunk: large enough to amortise the per-chunk work, small enough to bound memory. */
const CHUNK = 1 << 18;

/**
 * The rows of a file, as arrays of rows per chunk read (the header row included), or what a sink
 * makes of them. Streamed: at most one chunk of text and its rows are in memory. Breaking out
 * closes the file.
 */
export function readRows(
  file: string,
  props: CsvProps,
  signal?: AbortSignal,
): AsyncGenerator<CsvRow[], void, undefined> {
  return readWith<CsvRow>(file, props, signal);
}

export async function* readWith<T>(
  file: string,
  props: CsvProps,
  signal?: AbortSignal,
  sink?: CsvSink<T>,
): AsyncGenerator<T[], void, undefined> {
  const stream = fs.createReadStream(file, { encoding: props.encoding, highWaterMark: CHUNK });
  const parser = new CsvParser<T>(props.delimiter, '"', sink);
  let first = true;
  try {
    for await (const chunk of stream as AsyncIterable<string>) {
      if (signal?.aborted) throw new ConnectorError('Aborted', 'The read was cancelled.');
      let text = chunk;
      if (first) {
        first = false;
        if (text.charCodeAt(0) === 0xfeff) text = text.slice(1);
      }
      const rows: T[] = [];
      parser.push(text, rows);
      if (rows.length) yield rows;
    }
    const rows: T[] = [];
    parser.end(rows);
    if (rows.length) yield rows;
  } catch (err) {
    throw fileError(err, file);
  } finally {
    stream.destroy();
  }
}

/**
 * An entity's records, read, parsed and typed in a scan thread of their own (thread.ts) while the
 * caller works on the previous batch: at most the batch the caller has and the one the thread
 * reads ahead are in memory. The records are those of the in-thread read with the query's sink
 * (records.ts). The thread stops, and the file is closed, when the caller has read to the end,
 * fails or breaks out, or when the session closes the threads in `threads`.
 */
export async function* readInThread(
  entity: CsvEntity,
  props: CsvProps,
  log: ConnectorLog,
  signal: AbortSignal,
  threads: Set<OpenScan>,
): AsyncGenerator<ConnectorRecord[], void, undefined> {
  const records = packedRecords(entity, log);
  for await (const batch of scanBatches(entity, (fh) => startScan(fh, scanSettings(entity, props)), signal, threads)) {
    const out = records(batch);
    if (out.length) yield out;
  }
}

/**
 * An entity's rows as packed batches of `fields` (fullNames, in that order), made in a scan thread
 * of their own (the scanner's packed mode): `batchSize` rows each but the last, the values of
 * {@link readInThread}'s records. Only the cells the thread could not settle become strings here,
 * to go through their field's converter. The thread's life is {@link readInThread}'s.
 */
export async function* readPackedInThread(
  entity: CsvEntity,
  props: CsvProps,
  log: ConnectorLog,
  signal: AbortSignal,
  threads: Set<OpenScan>,
  fields: readonly string[],
  batchSize: number,
): AsyncGenerator<PackedBatch, void, undefined> {
  const columns = fields.map((f) => entity.columns.findIndex((c) => c.fullName === f));
  if (columns.some((i) => i < 0))
    throw new ConnectorError(
      'FieldNotFound',
      `The entity ${entity.fullName} has no field ${fields[columns.findIndex((i) => i < 0)]}.`,
    );
  const settle = settlePacked(entity, log, columns, fields);
  const packed = { fields: columns, batchSize };
  for await (const batch of scanBatches(
    entity,
    (fh) => startPackedScan(fh, { ...scanSettings(entity, props), packed }),
    signal,
    threads,
  )) {
    if (batch.rows) yield settle(batch);
  }
}

function scanSettings(entity: CsvEntity, props: CsvProps): Omit<ScanSettings, 'fd'> {
  return {
    encoding: props.encoding,
    delimiter: props.delimiter,
    hasHeader: props.hasHeader,
    columns: scanColumns(entity),
    chunk: CHUNK,
  };
}

/** The batches a scan thread answers for an entity's file, up to the last; the thread is in `threads` while it runs. */
async function* scanBatches<T extends ScanBatch | ScanPacked>(
  entity: CsvEntity,
  start: (fh: fsp.FileHandle) => ScanThread<T>,
  signal: AbortSignal,
  threads: Set<OpenScan>,
): AsyncGenerator<T, void, undefined> {
  let fh: fsp.FileHandle;
  try {
    fh = await fsp.open(entity.file, 'r');
  } catch (err) {
    throw fileError(err, entity.file);
  }
  let thread: ScanThread<T>;
  try {
    thread = start(fh);
  } catch (err) {
    await fh.close();
    throw err;
  }
  threads.add(thread);
  try {
    for (;;) {
      let batch: T;
      try {
        batch = await thread.next(signal);
      } catch (err) {
        throw fileError(err, entity.file);
      }
      yield batch;
      if (batch.done) return;
    }
  } finally {
    threads.delete(thread);
    await thread.close();
  }
}

/** The first record of a file (its header), or undefined for an empty file. */
export async function readFirstRow(file: string, props: CsvProps): Promise<CsvRow | undefined> {
  for await (const rows of readRows(file, props)) return rows[0];
  return undefined;
}

/** A file-system error as the ConnectorError the host maps: by errno, never by message. */
export function fileError(err: unknown, file: string): unknown {
  if (typeof err !== 'object' || err === null || (err as { name?: unknown }).name === 'ConnectorError') return err;
  const code = (err as NodeJS.ErrnoException).code;
  switch (code) {
    case 'ENOENT':
      // The folder itself gone (a share unmounted, a disk away) is the datastore's absence, not the entity's.
      if (!fs.existsSync(path.dirname(file)))
        return new ConnectorError('Unreachable', `The folder ${path.dirname(file)} does not exist or is not mounted.`, {
          nativeCode: code,
          cause: err,
        });
      return new ConnectorError('EntityNotFound', `The file ${file} does not exist.`, { nativeCode: code, cause: err });
    case 'EACCES':
    case 'EPERM':
      return new ConnectorError('AuthFailed', `No permission to access ${file}.`, { nativeCode: code, cause: err });
    case 'EISDIR':
    case 'ENOTDIR':
      return new ConnectorError('InvalidProperties', `${file} is not a file.`, { nativeCode: code, cause: err });
    case 'ENOSPC':
    case 'EIO':
    case 'EMFILE':
    case 'ENFILE':
    case 'EBUSY':
      return new ConnectorError('Datastore', `The file ${file} could not be read or written (${code}).`, {
        nativeCode: code,
        cause: err,
      });
    default:
      return err;
  }
}
