import path from 'node:path';
import { ConnectorError, type ConnectionProperties } from '../../src/connectors/sdk.js';

/** The csv connection, as its properties say (manifest.json lists them for the form). */
export interface CsvProps {
  folder: string;
  delimiter: string;
  hasHeader: boolean;
  /** Absolute path of the schema file (it may not exist). */
  schemaFile: string;
  /** Rows read to infer the types of files the schema file does not describe; 0 = all text. */
  inferRows: number;
  encoding: 'utf8' | 'latin1' | 'utf16le';
  /** File name suffix of entity files, lower case, with its dot. */
  extension: string;
  /** Where queries parse: `auto` (a scan thread for large files on a machine with the CPUs for it; query.ts), `on` (every file), `off` (none). */
  readerThread: 'auto' | 'on' | 'off';
}

const bool = (name: string, v: string | undefined, dflt: boolean): boolean => {
  if (v === undefined || v.trim() === '') return dflt;
  const s = v.trim().toLowerCase();
  if (s === 'true' || s === 'yes' || s === '1') return true;
  if (s === 'false' || s === 'no' || s === '0') return false;
  throw new ConnectorError('InvalidProperties', `The property ${name} must be true or false.`);
};

export function parseProps(p: ConnectionProperties): CsvProps {
  const folder = p['folder']?.trim();
  if (!folder)
    throw new ConnectorError(
      'InvalidProperties',
      'The property folder is required: the folder that holds the CSV files.',
    );
  if (!path.isAbsolute(folder))
    throw new ConnectorError('InvalidProperties', 'The property folder must be an absolute path.');
  let delimiter = p['delimiter'] ?? ',';
  if (delimiter === '') delimiter = ',';
  if (delimiter.toLowerCase() === 'tab' || delimiter === '\\t') delimiter = '\t';
  if (delimiter.length !== 1 || delimiter === '"' || delimiter === '\n' || delimiter === '\r') {
    throw new ConnectorError(
      'InvalidProperties',
      'The property delimiter must be one character (or "tab"), not a quote or a line break.',
    );
  }
  const inferText = p['inferRows']?.trim() || '1000';
  const inferRows = Number(inferText);
  if (!Number.isInteger(inferRows) || inferRows < 0)
    throw new ConnectorError(
      'InvalidProperties',
      'The property inferRows must be a whole number (0 = read every field as text).',
    );
  const encoding = (p['encoding']?.trim().toLowerCase() || 'utf8').replace('utf-8', 'utf8');
  if (encoding !== 'utf8' && encoding !== 'latin1' && encoding !== 'utf16le') {
    throw new ConnectorError('InvalidProperties', 'The property encoding must be utf8, latin1 or utf16le.');
  }
  const ext = (p['extension']?.trim() || '.csv').toLowerCase();
  const readerThread = p['readerThread']?.trim().toLowerCase() || 'auto';
  if (readerThread !== 'auto' && readerThread !== 'on' && readerThread !== 'off') {
    throw new ConnectorError('InvalidProperties', 'The property readerThread must be auto, on or off.');
  }
  return {
    folder,
    delimiter,
    hasHeader: bool('hasHeader', p['hasHeader'], true),
    schemaFile: path.resolve(folder, p['schemaFile']?.trim() || 'schema.json'),
    inferRows,
    encoding,
    extension: ext.startsWith('.') ? ext : `.${ext}`,
    readerThread,
  };
}
