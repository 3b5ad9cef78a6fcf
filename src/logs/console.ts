/**
 * The logger of a process that writes to a console (`ferry up`, `ferry service start`): JSON lines,
 * or on a terminal one readable line per entry —
 *
 *   12:04:31.207 INFO  shutting down  signal=SIGTERM
 *   12:04:31.412 ERROR connector reconcile failed  agentId=3f…
 *       Error: connect ECONNREFUSED 127.0.0.1:5432
 *           at …
 *
 * Which one is chosen once at start by {@link logFormatOf}: FERRY_LOG_FORMAT (`json` | `pretty`),
 * else `pretty` when the output is a terminal and `json` when it is a pipe or a file (a collector).
 */
import pino, { type DestinationStream, type Level, type Logger } from 'pino';
import { FerryError } from '../errors/ferry-error.js';

export type LogFormat = 'json' | 'pretty';

const FORMATS: readonly LogFormat[] = ['json', 'pretty'];

/** The log format of a process: FERRY_LOG_FORMAT when set, else by whether the output is a terminal. */
export function logFormatOf(env: Readonly<Record<string, string | undefined>>, isTerminal: boolean): LogFormat {
  const given = env['FERRY_LOG_FORMAT']?.trim().toLowerCase();
  if (!given) return isTerminal ? 'pretty' : 'json';
  if (!(FORMATS as readonly string[]).includes(given)) {
    throw new FerryError('SVC_CONFIG', `FERRY_LOG_FORMAT must be json or pretty, not "${env['FERRY_LOG_FORMAT']}".`);
  }
  return given as LogFormat;
}

/** Options of {@link createConsoleLogger}. */
export interface ConsoleLoggerOptions {
  readonly level: Level | 'silent';
  readonly format: LogFormat;
  /** Paths removed from every line (secrets). */
  readonly redact: readonly string[];
  /** Default: stdout. */
  readonly out?: NodeJS.WritableStream & { isTTY?: boolean };
  /** Colours in the pretty format; default: on a terminal unless NO_COLOR is set. */
  readonly colors?: boolean;
}

/** The root logger of a console process, in the chosen format. */
export function createConsoleLogger(opts: ConsoleLoggerOptions): Logger {
  const out = opts.out ?? process.stdout;
  const options = { level: opts.level, redact: { paths: [...opts.redact], censor: '[redacted]' } };
  if (opts.format === 'json') return opts.out ? pino(options, opts.out) : pino(options);
  const colors = opts.colors ?? (out.isTTY === true && !process.env['NO_COLOR']);
  return pino(options, prettyStream(out, colors));
}

const LEVELS: Readonly<Record<number, { name: string; color: string }>> = {
  10: { name: 'TRACE', color: '90' },
  20: { name: 'DEBUG', color: '36' },
  30: { name: 'INFO ', color: '32' },
  40: { name: 'WARN ', color: '33' },
  50: { name: 'ERROR', color: '31' },
  60: { name: 'FATAL', color: '35' },
};

/** Fields every line has, which the readable line shows in its own place or leaves out. */
const FIXED = new Set(['level', 'time', 'msg', 'pid', 'hostname', 'v', 'err']);

/** A pino destination that turns each JSON line into one readable line (and an error's stack under it). */
export function prettyStream(out: NodeJS.WritableStream, colors: boolean): DestinationStream {
  const paint = (code: string, text: string): string => (colors ? `\u001b[${code}m${text}\u001b[0m` : text);
  return {
    write(line: string): void {
      let entry: Record<string, unknown>;
      try {
        entry = JSON.parse(line) as Record<string, unknown>;
      } catch {
        out.write(line);
        return;
      }
      out.write(`${formatEntry(entry, paint)}\n`);
    },
  };
}

/** One entry as text: time, level, message, then the other fields as key=value. */
export function formatEntry(
  entry: Record<string, unknown>,
  paint: (code: string, text: string) => string = (_c, t) => t,
): string {
  const level = LEVELS[typeof entry['level'] === 'number' ? entry['level'] : 30] ?? {
    name: String(entry['level']),
    color: '0',
  };
  const time = typeof entry['time'] === 'number' ? new Date(entry['time']) : new Date();
  const clock = `${pad(time.getHours())}:${pad(time.getMinutes())}:${pad(time.getSeconds())}.${String(time.getMilliseconds()).padStart(3, '0')}`;
  const fields = Object.entries(entry)
    .filter(([k]) => !FIXED.has(k))
    .map(([k, v]) => `${paint('90', `${k}=`)}${show(v)}`);
  const err = entry['err'];
  const errText = err && typeof err === 'object' ? errorText(err as Record<string, unknown>) : undefined;
  if (errText?.inline) fields.push(`${paint('90', 'err=')}${errText.inline}`);
  const head = `${paint('90', clock)} ${paint(level.color, level.name)} ${typeof entry['msg'] === 'string' ? entry['msg'] : ''}${fields.length > 0 ? `  ${fields.join(' ')}` : ''}`;
  return errText?.stack ? `${head}\n${errText.stack.replace(/^/gm, '    ')}` : head;
}

function pad(n: number): string {
  return String(n).padStart(2, '0');
}

/** A field value: bare when it reads unambiguously, else as JSON. */
function show(v: unknown): string {
  if (typeof v === 'string') return /^[^\s"=]+$/.test(v) ? v : JSON.stringify(v);
  if (v === undefined) return 'undefined';
  return JSON.stringify(v);
}

/** pino's serialized error: its stack on lines of its own, its code (and other fields) inline. */
function errorText(err: Record<string, unknown>): { inline?: string; stack?: string } {
  const { stack, message, type, ...rest } = err;
  const extra = Object.keys(rest).length > 0 ? JSON.stringify(rest) : undefined;
  if (typeof stack === 'string') return { stack, ...(extra ? { inline: extra } : {}) };
  return { inline: JSON.stringify({ type, message, ...rest }) };
}
