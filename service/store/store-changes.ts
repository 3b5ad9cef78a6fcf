import pg from 'pg';
import type { Logger } from 'pino';

export interface StoreChangesOptions {
  /** The PostgreSQL store's URL: LISTEN needs a connection of its own. */
  readonly databaseUrl: string;
  /** The channel the store's triggers NOTIFY (a plain identifier). */
  readonly channel: string;
  /** Called on each notification, and after each (re)connect: what was announced meanwhile was lost. */
  readonly onChange: () => void;
  readonly log: Logger;
  /** How long after a lost connection the next is opened (default 1 s). */
  readonly retryMs?: number;
}

/**
 * Hears the changes other replicas commit to rows this one caches (migration 037's triggers NOTIFY
 * at their commit): a connection of its own that LISTENs on one channel, opened again whenever it
 * is lost. A cache that follows it is told of every commit of the others within milliseconds, and
 * once more after each reconnect, since a notification sent while nobody listened is gone.
 */
export class StoreChanges {
  readonly #opts: StoreChangesOptions;
  #client: pg.Client | undefined;
  #timer: NodeJS.Timeout | undefined;
  #stopped = true;
  #connecting: Promise<void> | undefined;

  constructor(opts: StoreChangesOptions) {
    if (!/^[a-z_][a-z0-9_]*$/.test(opts.channel)) throw new Error(`not a channel name: ${opts.channel}`);
    this.#opts = opts;
  }

  start(): void {
    this.#stopped = false;
    this.#connect();
  }

  /** Resolves once the connection listens (or the attempt failed and another is due). */
  async listening(): Promise<void> {
    await this.#connecting;
  }

  async stop(): Promise<void> {
    this.#stopped = true;
    clearTimeout(this.#timer);
    await this.#connecting;
    const client = this.#client;
    this.#client = undefined;
    await client?.end().catch(() => undefined);
  }

  #connect(): void {
    this.#connecting = this.#open()
      .catch((err: unknown) => {
        this.#opts.log.warn({ err, channel: this.#opts.channel }, 'store changes not heard; listening again soon');
        this.#retry();
      })
      .finally(() => (this.#connecting = undefined));
  }

  async #open(): Promise<void> {
    // Named, so that an operator sees in pg_stat_activity what the idle connection is for.
    const client = new pg.Client({
      connectionString: this.#opts.databaseUrl,
      application_name: `ferry ${this.#opts.channel}`,
    });
    client.on('error', (err) => {
      this.#opts.log.warn({ err, channel: this.#opts.channel }, 'store changes: the listening connection was lost');
      this.#lost(client);
    });
    client.on('end', () => this.#lost(client));
    client.on('notification', () => this.#opts.onChange());
    try {
      await client.connect();
      await client.query(`LISTEN ${this.#opts.channel}`);
    } catch (err) {
      await client.end().catch(() => undefined);
      throw err;
    }
    if (this.#stopped) {
      await client.end().catch(() => undefined);
      return;
    }
    this.#client = client;
    this.#opts.onChange();
  }

  #lost(client: pg.Client): void {
    if (this.#client !== client) return;
    this.#client = undefined;
    client.end().catch(() => undefined);
    // Changes committed until the next connection listens are not heard: the cache starts over.
    this.#opts.onChange();
    this.#retry();
  }

  #retry(): void {
    if (this.#stopped) return;
    clearTimeout(this.#timer);
    this.#timer = setTimeout(() => this.#connect(), this.#opts.retryMs ?? 1000);
    this.#timer.unref();
  }
}
