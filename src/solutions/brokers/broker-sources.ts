/**
 * The Message Maps of this Agent that take their messages from a RabbitMQ queue or a NATS
 * JetStream stream instead of their HTTP endpoint (docs/events.md "Messages from RabbitMQ or NATS
 * JetStream"), reconciled like the schedules: desired state = every enabled broker-fed Map of the
 * enabled Solutions this Agent holds; actual state = the consumptions running here.
 *
 *   held Solutions changed (assignSolutions, putSolution) ─▶ sync(): start the missing, stop the gone
 *        and restart the changed (another queue, prefetch, password …)
 *   delivery ─▶ BrokerMessages ─notify─▶ EventRuns.waiting(solutionId): a run starts, or takes again
 *   run ─take─▶ taker(): a broker-fed Map's take goes to its BrokerMessages, any other to the Service
 *
 * Runs, History, counts, record errors and reprocessing are the HTTP path's (event-runs.ts,
 * message-pump.ts): only where a Map's messages come from, and how they are acknowledged, differs.
 */
import type { Logger } from 'pino';
import type { ConnectorHost } from '../../connectors/host.js';
import { DEFAULT_PREFETCH, defaultNatsConsumer, MessageSource } from '../../protocol/map.js';
import type { PreparedSolution } from '../../protocol/solutions.js';
import type { MessageTaker } from '../message-pump.js';
import { BrokerConsumer } from './broker-consumer.js';
import { BrokerMessages } from './broker-messages.js';

export interface BrokerSourcesOptions {
  /** The Solutions this Agent holds now (its local copy). */
  readonly held: () => readonly PreparedSolution[];
  readonly host: () => Promise<ConnectorHost>;
  /** Messages came for a Solution's broker-fed Map: a run takes them (SolutionRunner.messagesWaiting). */
  readonly notify: (solutionId: string) => void;
  readonly log: Logger;
  /** How long a take that finds nothing waits for a delivery (default 250 ms). */
  readonly lingerMs?: number;
  /** First and longest pause before a failed consumption is tried again (default 1 s, 60 s). */
  readonly backoffMs?: { readonly base: number; readonly max: number };
}

/** One broker-fed Map as the held Solutions want it. */
interface Wanted {
  readonly solutionId: string;
  readonly mapId: number;
  readonly source: MessageSource & { readonly prefetch: number };
  readonly connection: PreparedSolution['connections'][number] | undefined;
  /** Changes when anything its consumption depends on does. */
  readonly fingerprint: string;
}

interface Running {
  readonly consumer: BrokerConsumer;
  readonly messages: BrokerMessages;
  readonly fingerprint: string;
}

const keyOf = (solutionId: string, mapId: number): string => `${solutionId.toLowerCase()}:${mapId}`;

export class BrokerSources {
  readonly name = 'broker message sources';
  readonly #running = new Map<string, Running>();
  /** Every broker-fed Map held, consuming or not (its Connection missing): none of them asks the Service. */
  #brokerMaps = new Set<string>();
  #started = false;
  #stopped = false;
  readonly #stopping = new Set<Promise<void>>();

  constructor(private readonly opts: BrokerSourcesOptions) {}

  start(): void {
    this.#started = true;
    this.sync();
  }

  /** Stops every consumption: what was delivered and not acknowledged goes back to the brokers. */
  async stop(): Promise<void> {
    this.#stopped = true;
    for (const [key, r] of this.#running) this.#stop(key, r);
    await Promise.allSettled([...this.#stopping]);
  }

  /** The held Solutions changed: consume for the broker-fed Maps held and enabled, and for no other. */
  sync(): void {
    if (!this.#started || this.#stopped) return;
    const wanted = this.#wanted();
    this.#brokerMaps = new Set(wanted.keys());
    for (const [key, r] of this.#running) {
      if (wanted.get(key)?.fingerprint !== r.fingerprint) this.#stop(key, r);
    }
    for (const [key, w] of wanted) if (!this.#running.has(key)) this.#start(key, w);
  }

  /** The Agent's taker: a broker-fed Map's take goes to its messages, every other one to `service`. */
  taker(service: MessageTaker): MessageTaker {
    return (req, signal) => {
      const key = keyOf(req.solutionId, req.mapId);
      const running = this.#running.get(key);
      if (running) return running.messages.take(req, signal);
      if (this.#brokerMaps.has(key)) return Promise.resolve([]);
      return service(req, signal);
    };
  }

  #wanted(): Map<string, Wanted> {
    const wanted = new Map<string, Wanted>();
    for (const s of this.opts.held()) {
      if (s.isDisabled) continue;
      for (const m of s.maps) {
        const declared = sourceOf(m.model);
        if (!m.enabled || !declared) continue;
        const source = {
          ...declared,
          prefetch: declared.prefetch ?? DEFAULT_PREFETCH,
          ...(declared.type === 'nats' ? { consumer: declared.consumer ?? defaultNatsConsumer(m.mapId) } : {}),
        };
        const id = source.connectionId.toLowerCase();
        const connection = s.connections.find((c) => c.connectionId.toLowerCase() === id);
        wanted.set(keyOf(s.solutionId, m.mapId), {
          solutionId: s.solutionId,
          mapId: m.mapId,
          source,
          connection,
          fingerprint: JSON.stringify([source, connection?.connectorId, connection?.properties]),
        });
      }
    }
    return wanted;
  }

  #start(key: string, w: Wanted): void {
    const log = this.opts.log.child({ solutionId: w.solutionId, mapId: w.mapId, connectionId: w.source.connectionId });
    if (!w.connection) {
      // Prepare puts the source's Connection into the Solution; a copy without it is from before.
      log.warn('the broker Connection of the Map is not in the prepared Solution: prepare the Solution again');
      return;
    }
    const messages = new BrokerMessages({
      describe: describeSource(w.source, w.connection.name),
      notify: () => this.#notify(w.solutionId, log),
      ...(this.opts.lingerMs !== undefined ? { lingerMs: this.opts.lingerMs } : {}),
    });
    const consumer = new BrokerConsumer({
      host: this.opts.host,
      connection: w.connection,
      source: w.source,
      messages,
      log,
      ...(this.opts.backoffMs ? { backoffMs: this.opts.backoffMs } : {}),
    });
    this.#running.set(key, { consumer, messages, fingerprint: w.fingerprint });
    consumer.start();
  }

  #stop(key: string, r: Running): void {
    this.#running.delete(key);
    const stopping = r.consumer.stop().finally(() => this.#stopping.delete(stopping));
    this.#stopping.add(stopping);
  }

  #notify(solutionId: string, log: Logger): void {
    try {
      this.opts.notify(solutionId);
    } catch (err) {
      log.warn({ err }, 'messages arrived from the broker and no run could take them now; they wait');
    }
  }
}

/** The Map's message source, when its first Block (a Wait For Message) has one. */
function sourceOf(model: unknown): MessageSource | undefined {
  const first = (model as { blocks?: Array<{ blockType?: unknown; messageSource?: unknown }> } | null)?.blocks?.[0];
  if (first?.blockType !== 'WaitForMessage' || first.messageSource === undefined) return undefined;
  const parsed = MessageSource.safeParse(first.messageSource);
  return parsed.success ? parsed.data : undefined;
}

/** Where a source's messages come from, for errors (no credentials). */
export function describeSource(source: MessageSource, connectionName: string): string {
  return source.type === 'rabbitmq'
    ? `RabbitMQ queue ${source.queue} (Connection ${connectionName})`
    : `NATS JetStream stream ${source.stream}, consumer ${source.consumer ?? '?'} (Connection ${connectionName})`;
}
