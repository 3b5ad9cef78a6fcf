import path from 'node:path';
import { ConnectorError, type ConnectionProperties } from '../../src/connectors/sdk.js';

export interface SqliteProps {
  file: string;
  readOnly: boolean;
  /** Create the database file when it does not exist (replication targets). */
  create: boolean;
  busyTimeoutMs: number;
  /** PRAGMA journal_mode to set on connect; empty = leave the database's own. */
  journalMode: string;
  /** PRAGMA synchronous to set on connect; empty = SQLite's default. */
  synchronous: string;
  /** Where writes run: `auto` (batches of 1000 records or more in the writer thread), `on` (every write), `off` (none). */
  writerThread: 'auto' | 'on' | 'off';
  /** Where queries run: `auto` (read in batches of 1000 records or more: in the reader thread), `on` (every query), `off` (none). */
  readerThread: 'auto' | 'on' | 'off';
}

const JOURNAL = ['', 'DELETE', 'TRUNCATE', 'PERSIST', 'MEMORY', 'WAL', 'OFF'];
const SYNC = ['', 'OFF', 'NORMAL', 'FULL', 'EXTRA'];

function flag(p: ConnectionProperties, name: string, dflt: boolean): boolean {
  const v = p[name]?.trim().toLowerCase();
  if (!v) return dflt;
  if (['true', 'yes', '1'].includes(v)) return true;
  if (['false', 'no', '0'].includes(v)) return false;
  throw new ConnectorError('InvalidProperties', `The property ${name} must be true or false.`);
}

function threadMode(p: ConnectionProperties, name: string): 'auto' | 'on' | 'off' {
  const v = (p[name] ?? '').trim().toLowerCase() || 'auto';
  if (v !== 'auto' && v !== 'on' && v !== 'off')
    throw new ConnectorError('InvalidProperties', `The property ${name} must be auto, on or off.`);
  return v;
}

export function parseProps(p: ConnectionProperties): SqliteProps {
  const file = p['file']?.trim();
  if (!file)
    throw new ConnectorError(
      'InvalidProperties',
      'The property file is required: the path of the SQLite database file.',
    );
  if (!path.isAbsolute(file))
    throw new ConnectorError('InvalidProperties', 'The property file must be an absolute path.');
  const busy = Number(p['busyTimeoutMs']?.trim() || '5000');
  if (!Number.isInteger(busy) || busy < 0)
    throw new ConnectorError('InvalidProperties', 'The property busyTimeoutMs must be a whole number of milliseconds.');
  const journalMode = (p['journalMode'] ?? '').trim().toUpperCase();
  if (!JOURNAL.includes(journalMode))
    throw new ConnectorError(
      'InvalidProperties',
      `The property journalMode must be one of ${JOURNAL.filter(Boolean).join(', ')} or empty.`,
    );
  const synchronous = (p['synchronous'] ?? '').trim().toUpperCase();
  if (!SYNC.includes(synchronous))
    throw new ConnectorError(
      'InvalidProperties',
      `The property synchronous must be one of ${SYNC.filter(Boolean).join(', ')} or empty.`,
    );
  return {
    file,
    readOnly: flag(p, 'readOnly', false),
    create: flag(p, 'create', false),
    busyTimeoutMs: busy,
    journalMode,
    synchronous,
    writerThread: threadMode(p, 'writerThread'),
    readerThread: threadMode(p, 'readerThread'),
  };
}
