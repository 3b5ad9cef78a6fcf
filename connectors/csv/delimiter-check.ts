import path from 'node:path';
import { ConnectorError } from '../../src/connectors/sdk.js';
import type { CsvProps } from './properties.js';
import { readRows } from './reader.js';
import { listEntityFiles } from './schema.js';

/** The delimiters CSV files are commonly written with, in the order a tie is decided. */
const COMMON = [',', ';', '\t', '|'] as const;
/** Files whose header the test reads: enough to catch a folder of another dialect, bounded on huge folders. */
const MAX_FILES = 200;

const shown = (d: string): string => (d === '\t' ? 'tab' : d);

/**
 * The delimiter a header read as one column was most likely written with: one of the common ones,
 * other than the Connection's, that cuts it into more columns. Undefined when the header reads as
 * several columns, or nothing common would cut it.
 */
export function otherDelimiter(
  header: readonly (string | null)[],
  delimiter: string,
): { delimiter: string; columns: number } | undefined {
  if (header.length !== 1) return undefined;
  const text = header[0] ?? '';
  let best: { delimiter: string; columns: number } | undefined;
  for (const d of COMMON) {
    if (d === delimiter) continue;
    const columns = text.split(d).length;
    if (columns > 1 && columns > (best?.columns ?? 1)) best = { delimiter: d, columns };
  }
  return best;
}

/**
 * Fails the Connection test when a file's header reads as one column with the Connection's
 * delimiter but holds another common one: every field of it would be unknown to a Map, which
 * prepare would report field by field with no word on the delimiter. Reads each file's first row
 * only (the header, or the first record of a folder without headers).
 */
export async function checkDelimiter(props: CsvProps): Promise<void> {
  const files = (await listEntityFiles(props)).slice(0, MAX_FILES);
  for (const name of files) {
    let first: (string | null)[] | undefined;
    for await (const rows of readRows(path.join(props.folder, name), props)) {
      first = rows[0];
      break;
    }
    const other = first ? otherDelimiter(first, props.delimiter) : undefined;
    if (!other || !first) continue;
    const what = props.hasHeader ? 'header' : 'first row';
    throw new ConnectorError(
      'InvalidProperties',
      `The ${what} of ${name} reads as one column with the delimiter ${shown(props.delimiter)} ("${String(first[0]).slice(0, 80)}"), but it holds ${shown(other.delimiter)}, which makes ${other.columns} columns: set the Connection's property delimiter to ${shown(other.delimiter)}.`,
    );
  }
}
