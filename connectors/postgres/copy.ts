import type { Connection, Submittable } from 'pg';
import type { PropertyType, Value } from '../../src/connectors/sdk.js';
import { textConverter } from './types.js';

/**
 * `COPY … FROM STDIN` over pg's Submittable interface (what pg-copy-streams does, in the little
 * this connector needs). The data follows the COPY statement at once, without waiting for the
 * server's CopyInResponse: the rows are encoded and sent in chunks in the same turn of the event
 * loop, so the server parses one chunk while the next is encoded, and the caller's next work
 * (reading the next batch) overlaps the server's. This is safe by the protocol: a server whose
 * COPY failed before reading the data ignores CopyData and CopyDone messages.
 *
 * Resolves with the rows copied; rejects with the server's error (SQLSTATE in `code`), after
 * which the connection is ready again.
 */
export class CopyIn implements Submittable {
  private resolve!: (rows: number) => void;
  private reject!: (err: Error) => void;
  readonly done: Promise<number>;
  private rows = 0;
  private error: Error | undefined;

  constructor(
    private readonly text: string,
    /** Writes the COPY data through `send`; called once the server is ready for it. */
    private readonly produce: (send: (chunk: string | Buffer) => void) => void,
  ) {
    this.done = new Promise<number>((res, rej) => {
      this.resolve = res;
      this.reject = rej;
    });
  }

  submit(connection: Connection): void {
    const con = connection as unknown as {
      query(text: string): void;
      sendCopyFromChunk(b: Buffer): void;
      endCopyFrom(): void;
      sendCopyFail(msg: string): void;
    };
    con.query(this.text);
    try {
      this.produce((chunk) => con.sendCopyFromChunk(typeof chunk === 'string' ? Buffer.from(chunk, 'utf8') : chunk));
      con.endCopyFrom();
    } catch (err) {
      this.error = err as Error;
      con.sendCopyFail('the client failed to produce the data');
    }
  }

  /** The data was sent with the statement (see above). */
  handleCopyInResponse(): void {}

  handleCommandComplete(msg: { text?: string }): void {
    // The command tag, `COPY <rows>` (protocol data, not a message for people).
    const m = /^COPY (\d+)/.exec(msg.text ?? '');
    this.rows = m ? Number(m[1]) : 0;
  }

  handleReadyForQuery(): void {
    if (this.error) this.reject(this.error);
    else this.resolve(this.rows);
  }

  handleError(err: Error): void {
    this.reject(this.error ?? err);
  }

  // Messages a COPY FROM does not get; present because pg's client calls them on the active query.
  handleRowDescription(): void {}
  handleDataRow(): void {}
  handlePortalSuspended(): void {}
  handleEmptyQuery(): void {}
  handleCopyData(): void {}
}

const NEEDS_ESCAPE = /[\\\t\n\r]/;
const ESCAPES = /[\\\t\n\r]/g;
const ESC: Record<string, string> = { '\\': '\\\\', '\t': '\\t', '\n': '\\n', '\r': '\\r' };

/** One field in COPY text format: `\N` for null, backslash escapes for the rest. */
export function copyField(v: string | null): string {
  if (v === null) return '\\N';
  return NEEDS_ESCAPE.test(v) ? v.replace(ESCAPES, (c) => ESC[c] as string) : v;
}

export type CopyEncode = (v: Value | undefined) => string;

/**
 * The COPY text of a value of a property type, in one step (this runs for every value of a bulk
 * load): numbers and booleans need no escaping, bytea turns base64 into hex.
 */
export function copyEncoder(type: PropertyType): CopyEncode {
  if (type === 'binary') {
    const toText = textConverter(type);
    return (v) => copyField(toText(v ?? null));
  }
  return (v) => {
    if (v === null || v === undefined) return '\\N';
    if (typeof v === 'string') return NEEDS_ESCAPE.test(v) ? v.replace(ESCAPES, (c) => ESC[c] as string) : v;
    if (typeof v === 'number') return String(v);
    return v ? 't' : 'f';
  };
}
