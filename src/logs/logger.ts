import { once } from 'node:events';
import path from 'node:path';
import pino, { type Level, type Logger, type StreamEntry } from 'pino';
import roll from 'pino-roll';
import { mkdirPrivate, PRIVATE_FILE_MODE } from '../util/private-files.js';

/** Paths pino removes from every line: the Agent's secret, bearer headers, installation keys, tokens. */
export const AGENT_REDACT_PATHS = [
  'agentSecret',
  '*.agentSecret',
  'secret',
  '*.secret',
  'authorization',
  '*.authorization',
  'headers.authorization',
  '*.headers.authorization',
  'agentInstallationKey',
  '*.agentInstallationKey',
  'password',
  '*.password',
  'token',
  '*.token',
];

/** The base name of the log files: `agent.<yyyy-MM-dd>.<n>.log` in the instance's logs folder. */
export const LOG_FILE_BASE = 'agent';

/** Options of {@link createAgentLogger}. */
export interface AgentLoggerOptions {
  readonly logsDir: string;
  readonly level: Level | 'silent';
  readonly agentId: string;
  /** pino-roll size limit of one file (`10m`). */
  readonly maxSize: string;
  /** Rotated files kept besides the active one. */
  readonly files: number;
  /** Also write every line to stdout. */
  readonly stdout: boolean;
}

/** The root logger of one Agent process and the means to flush it on the way out. */
export interface AgentLogger {
  readonly log: Logger;
  /** Writes out what is buffered; synchronous so it also works in an exit path. */
  readonly flush: () => void;
  /** Flushes and closes the files. */
  readonly close: () => Promise<void>;
}

/**
 * The Agent's one root pino logger: JSON lines into rolling files (daily and by size, with
 * retention) in the instance's logs folder, every line carrying `agentId`; children add
 * `component`, `solutionId`, `executionId`. pino-roll runs in this thread rather than as a
 * transport worker so that a zip of the logs folder taken after {@link AgentLogger.flush} holds
 * every line written before it.
 */
export async function createAgentLogger(opts: AgentLoggerOptions): Promise<AgentLogger> {
  mkdirPrivate(opts.logsDir);
  const file = await roll({
    file: path.join(opts.logsDir, LOG_FILE_BASE),
    extension: '.log',
    frequency: 'daily',
    dateFormat: 'yyyy-MM-dd',
    size: opts.maxSize,
    limit: { count: opts.files, removeOtherLogFiles: true },
    mkdir: true,
    // Passed on to sonic-boom, which opens every file (the first and each rolled one) with it:
    // lines may carry record data at debug level.
    mode: PRIVATE_FILE_MODE,
  });
  // The file opens asynchronously; until it has, a flush would write nothing.
  if (file.fd < 0) await once(file, 'ready');
  const streams: StreamEntry[] = [{ stream: file, level: opts.level === 'silent' ? 'fatal' : opts.level }];
  const stdout = opts.stdout ? pino.destination({ fd: 1, sync: false }) : undefined;
  if (stdout) streams.push({ stream: stdout, level: opts.level === 'silent' ? 'fatal' : opts.level });
  const log = pino(
    {
      level: opts.level,
      base: { pid: process.pid, agentId: opts.agentId },
      redact: { paths: AGENT_REDACT_PATHS, censor: '[redacted]' },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    pino.multistream(streams),
  );
  const flush = (): void => {
    for (const stream of [file, stdout]) {
      try {
        stream?.flushSync();
      } catch {
        // Nothing buffered yet, or the file is already closed: nothing to lose.
      }
    }
  };
  return {
    log,
    flush,
    async close() {
      flush();
      const closed = once(file, 'close');
      file.end();
      await closed;
    },
  };
}
