/**
 * One broker-fed Message Map's consumption, kept alive: opens the Map's broker Connection through
 * the plugin host, consumes its queue or stream into the Map's {@link BrokerMessages}, and when the
 * consumption is lost (the broker restarted, the network cut) or cannot begin (the broker down, a
 * queue not there yet) tries again with capped, jittered back-off, saying so in the log each time.
 *
 *   start ─▶ open Connection ─▶ consume ─▶ messages.opened() ─▶ … lost ─▶ messages.ended() ─┐
 *     ▲                                                                                    │
 *     └──────────────────────── back-off (1 s doubling to 60 s; reset after a success) ◀──┘
 *   stop ─▶ the consumption and the Connection closed: unsettled deliveries go back to the broker
 */
import type { Logger } from 'pino';
import { Backoff, sleep } from '../../channel/backoff.js';
import type { Consumption, MessageSource } from '../../connectors/consume-types.js';
import type { HostConnection } from '../../connectors/connection.js';
import type { ConnectorHost } from '../../connectors/host.js';
import { isFerryError } from '../../errors/ferry-error.js';
import type { BrokerMessages } from './broker-messages.js';

export interface BrokerConsumerOptions {
  readonly host: () => Promise<ConnectorHost>;
  /** The broker Connection as the prepared Solution holds it (its properties decrypted). */
  readonly connection: {
    readonly connectorId: string;
    readonly connectionId: string;
    readonly properties: Record<string, string>;
  };
  /** With its defaults filled in (prefetch, the JetStream consumer's name). */
  readonly source: MessageSource & { readonly prefetch: number };
  readonly messages: BrokerMessages;
  readonly log: Logger;
  /** First and longest wait before trying again (default 1 s and 60 s). */
  readonly backoffMs?: { readonly base: number; readonly max: number };
}

export class BrokerConsumer {
  readonly #stopping = new AbortController();
  #loop: Promise<void> | undefined;

  constructor(private readonly opts: BrokerConsumerOptions) {}

  start(): void {
    this.#loop ??= this.#run();
  }

  /** Stops consuming: what was delivered and not acknowledged goes back to the broker. */
  async stop(): Promise<void> {
    this.#stopping.abort();
    await this.#loop;
  }

  async #run(): Promise<void> {
    const { log } = this.opts;
    const backoff = new Backoff(this.opts.backoffMs?.base ?? 1_000, this.opts.backoffMs?.max ?? 60_000);
    const stopped = new Promise<'stopped'>((resolve) =>
      this.#stopping.signal.addEventListener('abort', () => resolve('stopped'), { once: true }),
    );
    while (!this.#stopping.signal.aborted) {
      let conn: HostConnection | undefined;
      let consumption: Consumption | undefined;
      try {
        conn = await (await this.opts.host()).open({ ...this.opts.connection, log }, { signal: this.#stopping.signal });
        let lose: (err: Error) => void = () => undefined;
        const lost = new Promise<Error>((resolve) => (lose = resolve));
        const messages = this.opts.messages;
        // Deliveries may come before consume() resolves.
        messages.opened();
        consumption = await conn.consume(
          this.opts.source,
          { prefetch: this.opts.source.prefetch, deliver: (d) => messages.deliver(d), lost: (err) => lose(err) },
          { signal: this.#stopping.signal },
        );
        if (backoff.attempts > 0) log.info({ attempts: backoff.attempts }, 'broker consumption resumed');
        else log.info({ prefetch: this.opts.source.prefetch }, 'broker consumption started');
        backoff.reset();
        const end = await Promise.race([lost, stopped]);
        messages.ended(end === 'stopped' ? undefined : end.message);
        if (end !== 'stopped') throw end;
      } catch (err) {
        this.opts.messages.ended(err instanceof Error ? err.message : String(err));
        if (this.#stopping.signal.aborted) break;
        const waitMs = backoff.next();
        // Config errors (a queue missing, credentials refused) need a person; they are retried too, as they may be fixed.
        log.warn(
          { err: errorFields(err), retryInMs: waitMs, attempt: backoff.attempts },
          'broker consumption failed; trying again after a pause',
        );
        await closeQuietly(consumption, conn);
        consumption = undefined;
        conn = undefined;
        await sleep(waitMs, this.#stopping.signal).catch(() => undefined);
      } finally {
        await closeQuietly(consumption, conn);
      }
    }
  }
}

async function closeQuietly(consumption: Consumption | undefined, conn: HostConnection | undefined): Promise<void> {
  await consumption?.close().catch(() => undefined);
  await conn?.close().catch(() => undefined);
}

function errorFields(err: unknown): Record<string, unknown> {
  if (isFerryError(err)) return { code: err.code, message: err.message, details: err.details };
  return { message: err instanceof Error ? err.message : String(err) };
}
